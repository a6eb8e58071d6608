package buildqueue.db;

import java.util.List;
import java.util.function.Function;

/**
 * The port through which the queue talks to PostgreSQL. Statements use {@code :name} parameters
 * (PostgreSQL casts such as {@code ::jsonb} are left alone); results come back as {@link Row}s
 * whose values are normalised the same way by every adapter:
 *
 * <ul>
 *   <li>integers of any width: {@link Long}; booleans: {@link Boolean}; text: {@link String}
 *   <li>{@code timestamptz}: {@link java.time.Instant}; {@code uuid}: {@link java.util.UUID}
 *   <li>{@code json}/{@code jsonb}: {@link Json}; SQL NULL: {@code null}
 * </ul>
 *
 * Parameters accept the same Java types (plus {@link Integer}). Every statement outside {@link
 * #transaction} commits on its own.
 */
public interface Database {

  /** Runs a statement that returns rows (SELECT, or any statement with RETURNING). */
  List<Row> query(String sql, Params params);

  /** Runs a statement and returns the number of rows it changed. */
  int update(String sql, Params params);

  /**
   * Runs {@code work} in one transaction: committed when it returns, rolled back when it throws.
   * The {@link Database} handed to {@code work} is bound to the transaction; calling {@code
   * transaction} on it again joins the same transaction.
   */
  <T> T transaction(Function<Database, T> work);

  default List<Row> query(String sql) {
    return query(sql, Params.none());
  }

  default int update(String sql) {
    return update(sql, Params.none());
  }

  /** The single row a statement returned, or empty; more than one row is a bug in the SQL. */
  default java.util.Optional<Row> queryOptional(String sql, Params params) {
    List<Row> rows = query(sql, params);
    if (rows.size() > 1) {
      throw new DatabaseException("expected at most one row, got " + rows.size() + " from: " + sql);
    }
    return rows.stream().findFirst();
  }
}
