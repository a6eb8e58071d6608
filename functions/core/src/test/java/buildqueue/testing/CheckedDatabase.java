package buildqueue.testing;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.List;
import java.util.function.Function;

/**
 * Passes every statement on to another {@link Database} after a check that may refuse it, inside
 * transactions too: how a killed worker's handle refuses every later call, and how tests make a
 * statement fail as an unreachable database would.
 */
public final class CheckedDatabase implements Database {
  /** Runs before each statement, and before a transaction starts. */
  @FunctionalInterface
  public interface Check {
    /** Throws to refuse {@code sql}; {@code sql} is null when a transaction is about to start. */
    void before(String sql);
  }

  private final Database target;
  private final Check check;

  public CheckedDatabase(Database target, Check check) {
    this.target = target;
    this.check = check;
  }

  @Override
  public List<Row> query(String sql, Params params) {
    check.before(sql);
    return target.query(sql, params);
  }

  @Override
  public int update(String sql, Params params) {
    check.before(sql);
    return target.update(sql, params);
  }

  @Override
  public <T> T transaction(Function<Database, T> work) {
    check.before(null);
    return target.transaction(tx -> work.apply(new CheckedDatabase(tx, check)));
  }
}
