package buildqueue.faults;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.testing.TestDatabase;
import java.util.Random;
import java.util.function.Function;

/**
 * Faults of the JDBC adapter, made real: the backend serving the statement is terminated with
 * {@code pg_terminate_backend} from another connection, before its transaction commits or right
 * after, and the caller gets whatever the driver and the pool make of it. An outage has no real
 * counterpart here (the embedded server is shared), so the simulation refuses statements itself.
 */
final class JdbcFaults implements DatabaseFaults {
  private final TestDatabase db;
  private final Lane lane;

  JdbcFaults(TestDatabase db, Lane lane) {
    this.db = db;
    this.lane = lane;
  }

  @Override
  public Database adapter() {
    return db.jdbc();
  }

  @Override
  public Database workerAdapter() {
    return db.worker();
  }

  @Override
  public <T> T failBeforeEffect(Database target, Function<Database, T> statement) {
    return target.transaction(
        tx -> {
          int pid = backendPid(tx);
          statement.apply(tx);
          lane.terminate(pid);
          return deadConnection(tx);
        });
  }

  @Override
  public <T> T failAfterEffect(Database target, Function<Database, T> statement) {
    return target.transaction(
        tx -> {
          int pid = backendPid(tx);
          statement.apply(tx);
          tx.update("commit");
          lane.terminate(pid);
          return deadConnection(tx);
        });
  }

  @Override
  public void loseCommitReply(Database tx) {
    int pid = backendPid(tx);
    tx.update("commit");
    lane.terminate(pid);
    deadConnection(tx);
  }

  @Override
  public void breakTransaction(Database tx) {
    lane.terminate(backendPid(tx));
  }

  @Override
  public Fault outage(boolean on, Random random) {
    return Fault.NONE; // nothing to switch: see refusesDuringOutage
  }

  @Override
  public boolean refusesDuringOutage() {
    return true;
  }

  private static int backendPid(Database tx) {
    return (int) (long) tx.query("select pg_backend_pid() as pid").get(0).longValue("pid");
  }

  /** The error a statement on a terminated connection gets (the pool then discards it). */
  private static <T> T deadConnection(Database tx) {
    tx.query("select 1", Params.none());
    throw new IllegalStateException("a statement on a terminated backend succeeded");
  }
}
