package buildqueue.aws.db;

import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.NamedSql;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.model.ColumnMetadata;
import software.amazon.awssdk.services.rdsdata.model.ExecuteStatementResponse;
import software.amazon.awssdk.services.rdsdata.model.Field;
import software.amazon.awssdk.services.rdsdata.model.SqlParameter;

/**
 * The {@link Database} port over the RDS Data API (Aurora PostgreSQL), used by the Lambdas and by
 * workers in AWS. Every statement and every transaction step is one HTTPS call.
 *
 * <p>Guarantees: parameters are sent as typed fields (see {@link DataApiValues}), results come back
 * normalised like {@code JdbcDatabase}'s; a unique violation is a {@link
 * buildqueue.db.UniqueViolationException}; every other failure is a {@link DatabaseException}
 * naming the statement's first line, never its parameter values. A statement that fails inside a
 * transaction ends it (the Data API drops a transaction on any SQL error): later statements in it
 * fail at once and the transaction is rolled back. Calls answered with {@code
 * DatabaseResumingException} are repeated within the {@link ResumeRetry} budget; nothing else is
 * retried. Thread-safe outside transactions; a transaction's {@link Database} belongs to one
 * thread.
 */
public final class DataApiDatabase implements Database {
  private static final Map<String, List<String>> NAMES = new ConcurrentHashMap<>();

  private final DataApiCalls calls;

  public DataApiDatabase(RdsDataClient client, DataApiSettings settings, ResumeRetry retry) {
    this(new DataApiCalls(client, settings.validate(), retry));
  }

  private DataApiDatabase(DataApiCalls calls) {
    this.calls = calls;
  }

  /**
   * The same database, but every statement is sent with {@code continueAfterTimeout}, as AWS
   * advises for DDL: a statement that runs past the Data API's 45 s is not cancelled (a DDL cut off
   * "can result in errors and possibly corrupted data structures", ExecuteStatement API reference);
   * the call still fails at 45 s. For schema migrations only: queue transitions must stay short.
   */
  public DataApiDatabase continuingAfterTimeout() {
    return new DataApiDatabase(calls.continuingAfterTimeout());
  }

  public DataApiDatabase(RdsDataClient client, DataApiSettings settings) {
    this(client, settings, ResumeRetry.standard());
  }

  /** A client built by {@link DataApiClients#create(DataApiSettings)} and the standard retry. */
  public static DataApiDatabase create(DataApiSettings settings) {
    return new DataApiDatabase(DataApiClients.create(settings), settings);
  }

  @Override
  public List<Row> query(String sql, Params params) {
    return rows(calls.execute(sql, parameters(sql, params), null, true));
  }

  @Override
  public int update(String sql, Params params) {
    return updated(calls.execute(sql, parameters(sql, params), null, false));
  }

  @Override
  public <T> T transaction(Function<Database, T> work) {
    InTransaction tx = new InTransaction(calls.begin());
    T result;
    try {
      result = work.apply(tx);
      tx.failIfAborted();
    } catch (RuntimeException | Error e) {
      calls.rollbackQuietly(tx.id, e);
      throw e;
    }
    calls.commit(tx.id);
    return result;
  }

  /** One parameter per distinct name the statement uses, as the Data API wants them. */
  private static List<SqlParameter> parameters(String sql, Params params) {
    List<String> names =
        NAMES.computeIfAbsent(
            sql, s -> List.copyOf(new LinkedHashSet<>(NamedSql.parse(s).names())));
    List<SqlParameter> out = new ArrayList<>(names.size());
    for (String name : names) {
      out.add(DataApiValues.parameter(name, params.get(name)));
    }
    return out;
  }

  private static List<Row> rows(ExecuteStatementResponse response) {
    if (!response.hasRecords()) {
      return List.of();
    }
    List<ColumnMetadata> columns = response.columnMetadata();
    List<Row> rows = new ArrayList<>(response.records().size());
    for (List<Field> record : response.records()) {
      if (record.size() != columns.size()) {
        throw new DatabaseException(
            "the Data API returned a record of "
                + record.size()
                + " fields for "
                + columns.size()
                + " columns");
      }
      Map<String, Object> values = new LinkedHashMap<>();
      for (int i = 0; i < columns.size(); i++) {
        values.put(
            DataApiValues.label(columns.get(i)), DataApiValues.read(record.get(i), columns.get(i)));
      }
      rows.add(new Row(values));
    }
    return rows;
  }

  private static int updated(ExecuteStatementResponse response) {
    Long n = response.numberOfRecordsUpdated();
    return n == null ? 0 : Math.toIntExact(n);
  }

  /** A {@link Database} bound to one open Data API transaction. */
  private final class InTransaction implements Database {
    private final String id;
    private String abortedBy;

    InTransaction(String id) {
      this.id = id;
    }

    @Override
    public List<Row> query(String sql, Params params) {
      return rows(execute(sql, params, true));
    }

    @Override
    public int update(String sql, Params params) {
      return updated(execute(sql, params, false));
    }

    @Override
    public <T> T transaction(Function<Database, T> work) {
      return work.apply(this);
    }

    private ExecuteStatementResponse execute(String sql, Params params, boolean withMetadata) {
      List<SqlParameter> parameters = parameters(sql, params);
      failIfAborted();
      try {
        return calls.execute(sql, parameters, id, withMetadata);
      } catch (DatabaseException e) {
        abortedBy = DataApiCalls.firstLine(sql);
        throw e;
      }
    }

    /** A caller that caught a statement's failure and carried on must not commit half its work. */
    void failIfAborted() {
      if (abortedBy != null) {
        throw new DatabaseException(
            "the transaction was aborted by an earlier failed statement ("
                + abortedBy
                + "); nothing in it is committed");
      }
    }
  }
}
