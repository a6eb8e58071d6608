package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The enqueue statement and a worker ending its job lock the same rows: the user's turn row, the
 * superseded job and a live worker of the lane (the enqueue share-locks the lane's workers to close
 * its race with an exit; a worker ending its job locks the job's row, then the turn row in its
 * walk, then updates its own worker row). They must take them in the same order, the worker last,
 * or each waits for the other.
 */
@ExtendWith(PostgresExtension.class)
class EnqueueLockOrderTest {
  @Test
  void an_enqueue_waiting_for_its_users_turn_row_holds_no_lock_on_the_lanes_workers(
      TestDatabase tdb) throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    h.queue.enqueue(
        "alice",
        "noop",
        new Json("{}"),
        null); // a live worker in the shared lane, alice's turn row
    long workerId =
        tdb.jdbc()
            .query("select id from build_worker where status <> 'exited'")
            .get(0)
            .longValue("id");

    try (Connection chaining = tdb.dataSource().getConnection()) {
      chaining.setAutoCommit(false);
      // As a chaining worker's walk does: the user's turn row first, its own worker row next.
      run(chaining, "set local lock_timeout = '20s'");
      run(
          chaining,
          "select 1 from build_lane_turn where lane = 'shared' and user_id = 'alice' for update");
      CompletableFuture<JobTransitions.Enqueued> enqueue =
          CompletableFuture.supplyAsync(
              () -> h.queue.enqueue("alice", "noop", new Json("{}"), null));
      Await.until(
          "the enqueue to wait for alice's turn row",
          () ->
              tdb.jdbc()
                      .query("select count(*) as n from pg_locks where not granted")
                      .get(0)
                      .longValue("n")
                  > 0);

      // Had the enqueue share-locked the worker before waiting, this update would deadlock with it.
      run(chaining, "update build_worker set exit_reason = exit_reason where id = " + workerId);
      chaining.commit();

      assertThat(enqueue.get(30, TimeUnit.SECONDS).created()).isTrue();
    }
  }

  @Test
  void an_enqueue_waiting_for_a_job_it_supersedes_holds_no_lock_on_the_lanes_workers(
      TestDatabase tdb) throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    long building =
        h.queue.enqueue("alice", "noop", new Json("{}"), null, "article-7").jobId(); // dispatched
    long workerId =
        tdb.jdbc()
            .query("select id from build_worker where status <> 'exited'")
            .get(0)
            .longValue("id");

    try (Connection ending = tdb.dataSource().getConnection()) {
      ending.setAutoCommit(false);
      // As a worker ending its job does: the job's row first, its own worker row last.
      run(ending, "set local lock_timeout = '20s'");
      run(ending, "select 1 from build_job where id = " + building + " for update");
      CompletableFuture<JobTransitions.Enqueued> replacing =
          CompletableFuture.supplyAsync(
              () -> h.queue.enqueue("alice", "noop", new Json("{}"), null, "article-7"));
      Await.until(
          "the enqueue to wait for the job it supersedes",
          () ->
              tdb.jdbc()
                      .query("select count(*) as n from pg_locks where not granted")
                      .get(0)
                      .longValue("n")
                  > 0);

      run(ending, "update build_worker set exit_reason = exit_reason where id = " + workerId);
      ending.commit();

      assertThat(replacing.get(30, TimeUnit.SECONDS).cancelRequested()).containsExactly(building);
    }
  }

  private static void run(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
