package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.DispatchTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.TickTransitions;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Found by the fault simulation: a seed replayed differently once its database had a long history,
 * because an {@code UPDATE … RETURNING} hands rows back in whatever order its plan visits them, and
 * a tick worked through its claims in that order. Claims now come back in id order.
 */
@ExtendWith(PostgresExtension.class)
class ReproducibleTickTest {
  private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");

  private static void workers(TestDatabase tdb, boolean withTask) {
    for (int i = 1; i <= 6; i++) {
      Rows.worker()
          .lane("user:u" + i)
          .task(withTask ? "task-" + i : null)
          .expiresAt(NOW.plus(Duration.ofHours(1)))
          .launchedAt(NOW.minus(Duration.ofHours(1)))
          .insert(tdb.jdbc());
    }
    // Rewrite the oldest rows so that their live versions sit after the others in the table: the
    // statement changes no value, it moves rows, so it stays plain SQL.
    tdb.jdbc().update("update build_worker set exit_reason = null where id in (1, 2)");
    assertThat(
            tdb.jdbc().query("select id from build_worker order by ctid").stream()
                .map(r -> r.longValue("id")))
        .as("the rows' physical order, which the claims must not follow")
        .containsExactly(3L, 4L, 5L, 6L, 1L, 2L);
  }

  @Test
  void due_checks_come_back_in_worker_id_order_whatever_the_rows_physical_order(TestDatabase tdb) {
    workers(tdb, true);
    QueueConfig config = QueueConfig.defaults();
    List<Long> ids =
        new TickTransitions(tdb.jdbc(), config, () -> NOW)
            .claimDueChecks(100).stream().map(TickTransitions.DueCheck::workerId).toList();
    assertThat(ids).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
  }

  @Test
  void unresolved_launches_come_back_in_worker_id_order_whatever_the_rows_physical_order(
      TestDatabase tdb) {
    workers(tdb, false);
    QueueConfig config = QueueConfig.defaults();
    QueueClock clock = () -> NOW;
    List<Long> ids =
        new DispatchTransitions(tdb.jdbc(), config, clock)
            .claimUnresolvedLaunches(100).stream().map(WorkerLaunch::workerId).toList();
    assertThat(ids).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
  }
}
