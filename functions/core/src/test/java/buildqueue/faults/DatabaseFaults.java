package buildqueue.faults;

import buildqueue.db.Database;
import buildqueue.testing.TestDatabase;
import java.util.Random;
import java.util.function.Function;

/**
 * How the adapter under test fails, for one lane. The JDBC adapter's connections are killed for
 * real ({@link JdbcFaults}); the Data API adapter's fake answers the errors the real service gives
 * (the aws module's {@code DataApiFaults}). The simulation decides when; this decides how.
 */
interface DatabaseFaults {

  /** Makes the faults of one lane's database. */
  @FunctionalInterface
  interface Factory {
    DatabaseFaults open(TestDatabase db, Lane lane);
  }

  /** The adapter under test. */
  Database adapter();

  /** The same adapter connected as the worker role (V005), as workers connect. */
  Database workerAdapter();

  /** Runs the statement so that it fails without taking effect; the caller sees the error. */
  <T> T failBeforeEffect(Database target, Function<Database, T> statement);

  /** Runs the statement so that it takes effect but its reply is lost; the caller sees an error. */
  <T> T failAfterEffect(Database target, Function<Database, T> statement);

  /** Inside a transaction whose work is done: the commit happens, its reply is lost. */
  void loseCommitReply(Database tx);

  /** Inside a transaction: its connection is lost before the next statement. */
  void breakTransaction(Database tx);

  /**
   * The database becomes unreachable (or reachable again). Returns the fault to count for an outage
   * that begins, or {@link Fault#NONE} when the refused statements are counted instead.
   */
  Fault outage(boolean on, Random random);

  /** Whether the simulation must refuse statements itself while an outage lasts. */
  boolean refusesDuringOutage();

  default void close() {}
}
