package buildqueue.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The {@link Database} port over JDBC and the PostgreSQL driver: used locally, in tests, and by
 * workers that are configured with a JDBC URL. Each statement outside a transaction borrows a
 * connection from the {@link DataSource} (pool it) in autocommit mode.
 */
public final class JdbcDatabase implements Database {
  private static final String UNIQUE_VIOLATION = "23505";
  private static final Map<String, NamedSql> PARSED = new ConcurrentHashMap<>();

  private final DataSource dataSource;

  public JdbcDatabase(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  public List<Row> query(String sql, Params params) {
    try (Connection c = dataSource.getConnection()) {
      return query(c, sql, params);
    } catch (SQLException e) {
      throw translate(e, sql);
    }
  }

  @Override
  public int update(String sql, Params params) {
    try (Connection c = dataSource.getConnection()) {
      return update(c, sql, params);
    } catch (SQLException e) {
      throw translate(e, sql);
    }
  }

  @Override
  public <T> T transaction(Function<Database, T> work) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        T result = work.apply(new InTransaction(c));
        c.commit();
        return result;
      } catch (RuntimeException | Error e) {
        rollbackQuietly(c, e);
        throw e;
      } finally {
        restoreAutoCommit(c, autoCommit);
      }
    } catch (SQLException e) {
      throw translate(e, "commit");
    }
  }

  private static void rollbackQuietly(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException rollbackFailure) {
      cause.addSuppressed(rollbackFailure);
    }
  }

  private static void restoreAutoCommit(Connection c, boolean autoCommit) {
    try {
      c.setAutoCommit(autoCommit);
    } catch (SQLException ignored) {
      // The connection is broken; the pool will discard it.
    }
  }

  private static List<Row> query(Connection c, String sql, Params params) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, params);
        ResultSet rs = ps.executeQuery()) {
      ResultSetMetaData meta = rs.getMetaData();
      List<Row> rows = new ArrayList<>();
      while (rs.next()) {
        Map<String, Object> values = new LinkedHashMap<>();
        for (int i = 1; i <= meta.getColumnCount(); i++) {
          values.put(meta.getColumnLabel(i), read(rs, i, meta.getColumnTypeName(i)));
        }
        rows.add(new Row(values));
      }
      return rows;
    }
  }

  private static int update(Connection c, String sql, Params params) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, params)) {
      return ps.executeUpdate();
    }
  }

  private static PreparedStatement prepare(Connection c, String sql, Params params)
      throws SQLException {
    NamedSql named = PARSED.computeIfAbsent(sql, NamedSql::parse);
    PreparedStatement ps = c.prepareStatement(named.jdbcSql());
    try {
      for (int i = 0; i < named.names().size(); i++) {
        bind(ps, i + 1, params.get(named.names().get(i)));
      }
      return ps;
    } catch (SQLException | RuntimeException e) {
      ps.close();
      throw e;
    }
  }

  private static void bind(PreparedStatement ps, int index, Object value) throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.OTHER);
    } else if (value instanceof Instant instant) {
      ps.setObject(index, OffsetDateTime.ofInstant(instant, ZoneOffset.UTC));
    } else if (value instanceof Json json) {
      ps.setObject(index, json.text(), Types.OTHER);
    } else if (value instanceof Integer i) {
      ps.setLong(index, i);
    } else {
      ps.setObject(index, value);
    }
  }

  private static Object read(ResultSet rs, int i, String typeName) throws SQLException {
    Object raw = rs.getObject(i);
    if (raw == null) {
      return null;
    }
    switch (typeName) {
      case "int2":
      case "int4":
      case "int8":
      case "oid":
        return ((Number) raw).longValue();
      case "timestamptz":
      case "timestamp":
        return rs.getObject(i, OffsetDateTime.class).toInstant();
      case "json":
      case "jsonb":
        return new Json(rs.getString(i));
      case "uuid":
        return (UUID) raw;
      case "bool":
        return raw;
      default:
        return raw instanceof Number || raw instanceof Boolean ? raw : rs.getString(i);
    }
  }

  static DatabaseException translate(SQLException e, String sql) {
    String first = sql.strip().lines().findFirst().orElse("");
    String message = e.getMessage() + " (in statement starting: " + first + ")";
    if (UNIQUE_VIOLATION.equals(e.getSQLState())) {
      return new UniqueViolationException(message, e);
    }
    return new DatabaseException(message, e);
  }

  /** A {@link Database} bound to one open transaction. */
  private static final class InTransaction implements Database {
    private final Connection connection;

    InTransaction(Connection connection) {
      this.connection = connection;
    }

    @Override
    public List<Row> query(String sql, Params params) {
      try {
        return JdbcDatabase.query(connection, sql, params);
      } catch (SQLException e) {
        throw translate(e, sql);
      }
    }

    @Override
    public int update(String sql, Params params) {
      try {
        return JdbcDatabase.update(connection, sql, params);
      } catch (SQLException e) {
        throw translate(e, sql);
      }
    }

    @Override
    public <T> T transaction(Function<Database, T> work) {
      return work.apply(this);
    }
  }
}
