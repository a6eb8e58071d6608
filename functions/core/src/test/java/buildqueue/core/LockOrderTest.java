package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Every transition takes a job's row before its worker's (docs/architecture.md §12). A worker
 * ending its job holds the job's row and then updates its worker row; a dispatch or a chaining
 * worker whose walk locked a row it read as queued keeps that lock when it finds the row dispatched
 * by now, and then waits for a slot's worker row. A transition that took the worker row first and
 * then waited for the job's deadlocked with them (and an enqueue share-locking the lane's workers
 * waited in the same cycle, ConcurrencyTest). Here a connection holds the job's row, the transition
 * is made to wait for it, and the connection then takes the worker's row: with the job first, the
 * transition holds nothing the connection needs.
 */
@ExtendWith(PostgresExtension.class)
class LockOrderTest {
  @Test
  void a_worker_start_waiting_for_its_job_holds_no_lock_on_its_worker(TestDatabase tdb)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    long job =
        h.queue
            .enqueue("alice", "noop", new Json("{}"), null)
            .jobId(); // dispatched, worker launching
    WorkerLaunch w = h.manual.lastLaunch();

    var started =
        whileTheJobIsHeld(tdb, job, w.workerId(), () -> h.workers.start(w.workerId(), w.token()));

    assertThat(started).isPresent();
    assertThat(h.status(job)).isEqualTo("running");
  }

  @Test
  void a_worker_exit_waiting_for_its_job_holds_no_lock_on_its_worker(TestDatabase tdb)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = h.queue.enqueue("alice", "noop", new Json("{}"), null).jobId();
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token());

    var exited =
        whileTheJobIsHeld(
            tdb,
            job,
            w.workerId(),
            () -> h.queue.taskStopped(null, w.workerId(), w.token(), "exited"));

    assertThat(exited)
        .hasValueSatisfying(e -> assertThat(e.jobStatus()).contains(JobStatus.QUEUED));
  }

  @Test
  void a_worker_gone_before_its_start_waiting_for_its_job_holds_no_lock_on_its_worker(
      TestDatabase tdb) throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = h.queue.enqueue("alice", "noop", new Json("{}"), null).jobId();
    WorkerLaunch w = h.manual.lastLaunch();

    var exited =
        whileTheJobIsHeld(
            tdb,
            job,
            w.workerId(),
            () -> h.queue.taskStopped(null, w.workerId(), w.token(), "image cannot be pulled"));

    assertThat(exited).hasValueSatisfying(e -> assertThat(e.neverStarted()).isTrue());
    assertThat(h.status(job)).isEqualTo("queued");
  }

  /**
   * Runs {@code transition} while another connection holds {@code job}'s row; once the transition
   * waits, that connection updates the worker's row (as END's drain does) and commits.
   */
  private static <T> T whileTheJobIsHeld(
      TestDatabase tdb, long job, long workerId, Supplier<T> transition) throws Exception {
    try (Connection holder = tdb.dataSource().getConnection()) {
      holder.setAutoCommit(false);
      run(holder, "set local lock_timeout = '20s'");
      run(holder, "select 1 from build_job where id = " + job + " for update");
      CompletableFuture<T> waiting = CompletableFuture.supplyAsync(transition);
      Await.until(
          "the transition to wait for the job's row",
          () ->
              tdb.jdbc()
                      .query("select count(*) as n from pg_locks where not granted")
                      .get(0)
                      .longValue("n")
                  > 0);

      // Had the transition updated the worker's row before waiting, this would deadlock with it.
      run(holder, "update build_worker set exit_reason = exit_reason where id = " + workerId);
      holder.commit();

      return waiting.get(30, TimeUnit.SECONDS);
    }
  }

  private static void run(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
