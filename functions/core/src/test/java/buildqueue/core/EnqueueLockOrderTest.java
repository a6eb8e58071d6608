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
 * The enqueue statement and a chaining worker lock the same two rows: the user's turn row and a
 * live worker of the lane (the enqueue share-locks the lane's workers to close its race with an
 * exit; a chaining worker's walk locks the turn row, then updates its own worker row). They must
 * take them in the same order, turn row first, or each waits for the other.
 */
@ExtendWith(PostgresExtension.class)
class EnqueueLockOrderTest {
  @Test
  void an_enqueue_waiting_for_its_users_turn_row_holds_no_lock_on_the_lanes_workers(TestDatabase tdb)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    h.queue.enqueue("alice", "noop", new Json("{}"), null); // a live worker in the shared lane, alice's turn row
    long workerId =
        tdb.jdbc().query("select id from build_worker where status <> 'exited'").get(0).longValue("id");

    try (Connection chaining = tdb.dataSource().getConnection()) {
      chaining.setAutoCommit(false);
      // As a chaining worker's walk does: the user's turn row first, its own worker row next.
      run(chaining, "set local lock_timeout = '20s'");
      run(chaining, "select 1 from build_lane_turn where lane = 'shared' and user_id = 'alice' for update");
      CompletableFuture<JobTransitions.Enqueued> enqueue =
          CompletableFuture.supplyAsync(() -> h.queue.enqueue("alice", "noop", new Json("{}"), null));
      Await.until("the enqueue to wait for alice's turn row", () ->
          tdb.jdbc().query("select count(*) as n from pg_locks where not granted").get(0).longValue("n") > 0);

      // Had the enqueue share-locked the worker before waiting, this update would deadlock with it.
      run(chaining, "update build_worker set exit_reason = exit_reason where id = " + workerId);
      chaining.commit();

      assertThat(enqueue.get(30, TimeUnit.SECONDS).created()).isTrue();
    }
  }

  private static void run(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
