package buildqueue.faults;

import buildqueue.db.Database;
import buildqueue.testing.Await;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * One database that runs scenarios one after another: a fresh migrated database from the test
 * utilities, emptied (and its id sequences restarted, so a replay sees the same ids) between
 * scenarios. The ledger's rows go too: they have no foreign key to the jobs (they outlive them),
 * and a restarted id would meet its predecessor's bill; so do the artifacts' rows, for the same
 * reason. It keeps two connections of its own outside the queue's pool: one that reads the
 * invariant snapshots, one that terminates other backends.
 */
final class Lane implements AutoCloseable {
  private static final String RESET =
      """
      delete from build_job_event;
      delete from build_job;
      delete from build_worker;
      delete from build_user;
      delete from build_job_cost;
      delete from build_lane_pause;
      delete from build_job_artifact;
      delete from build_artifact_upload;
      update build_tick_arm set armed = true;
      select setval('build_job_id_seq', 1, false), setval('build_worker_id_seq', 1, false),
             setval('build_job_event_id_seq', 1, false)""";

  private final TestDatabase db;
  private final DatabaseFaults faults;
  private final Connection admin;
  private final PreparedStatement terminate;
  private final PreparedStatement backend;
  private final Connection readerConnection;
  private final Snapshot.Reader reader;

  /** A lane on the JDBC adapter. */
  Lane() {
    this(JdbcFaults::new);
  }

  Lane(DatabaseFaults.Factory faults) {
    this.db = TestDatabases.create();
    try {
      this.admin = DriverManager.getConnection(db.jdbcUrl(), "postgres", "");
      this.terminate = admin.prepareStatement("select pg_terminate_backend(?)");
      this.backend = admin.prepareStatement("select 1 from pg_stat_activity where pid = ?");
      this.readerConnection = DriverManager.getConnection(db.jdbcUrl(), "postgres", "");
      this.reader = new Snapshot.Reader(readerConnection);
    } catch (SQLException e) {
      throw new IllegalStateException("could not connect to " + db.name(), e);
    }
    this.faults = faults.open(db, this);
  }

  /** The adapter under test and how it fails. */
  DatabaseFaults faults() {
    return faults;
  }

  /** The plain JDBC adapter, for the simulation's own reads. */
  Database database() {
    return db.jdbc();
  }

  TestDatabase testDatabase() {
    return db;
  }

  void reset() {
    try (Statement s = admin.createStatement()) {
      s.execute(RESET);
    } catch (SQLException e) {
      throw new IllegalStateException("could not reset " + db.name(), e);
    }
  }

  /**
   * Terminates a backend from outside, as an operator or a failing network would, and waits until
   * it is gone, so the caller's next use of the connection fails every time. (The built-in wait of
   * {@code pg_terminate_backend(pid, timeout)} polls in 100 ms steps; this polls faster.)
   */
  synchronized void terminate(int pid) {
    try {
      terminate.setInt(1, pid);
      try (ResultSet r = terminate.executeQuery()) {
        r.next();
        if (!r.getBoolean(1)) {
          throw new IllegalStateException("backend " + pid + " could not be signalled");
        }
      }
      Await.until("backend " + pid + " to end", Duration.ofSeconds(10), () -> !alive(pid));
    } catch (SQLException e) {
      throw new IllegalStateException("could not terminate backend " + pid, e);
    }
  }

  private boolean alive(int pid) {
    try {
      backend.setInt(1, pid);
      try (ResultSet r = backend.executeQuery()) {
        return r.next();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not look for backend " + pid, e);
    }
  }

  Snapshot snapshot() {
    return reader.read();
  }

  @Override
  public void close() {
    faults.close();
    try {
      reader.close();
      readerConnection.close();
      admin.close();
    } catch (SQLException ignored) {
      // the database is dropped next
    }
    db.close();
  }
}
