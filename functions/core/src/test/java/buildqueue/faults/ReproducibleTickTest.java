package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.DispatchTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.TickTransitions;
import buildqueue.db.Params;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Found by the fault simulation: a seed replayed differently once its database had a long history,
 * because an {@code UPDATE … RETURNING} hands rows back in whatever order its plan visits them,
 * and a tick worked through its claims in that order. Claims now come back in id order.
 */
@ExtendWith(PostgresExtension.class)
class ReproducibleTickTest {
  private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");

  private static void workers(TestDatabase tdb, boolean withTask) {
    for (int i = 1; i <= 6; i++) {
      tdb.jdbc().update(
          """
          insert into build_worker (lane, slot, token, status, task_id, expires_at, launched_at)
          values ('user:u' || :i, 'user:u' || :i || '#1', :token::uuid, 'launching',
                  case when :withTask then 'task-' || :i end, :now::timestamptz + interval '1 hour',
                  :now::timestamptz - interval '1 hour')""",
          Params.of("i", i, "token", UUID.randomUUID(), "withTask", withTask).and("now", NOW));
    }
    // Rewrite the oldest rows so that their live versions sit after the others in the table.
    tdb.jdbc().update("update build_worker set exit_reason = null where id in (1, 2)");
    assertThat(tdb.jdbc().query("select id from build_worker order by ctid").stream().map(r -> r.longValue("id")))
        .as("the rows' physical order, which the claims must not follow")
        .containsExactly(3L, 4L, 5L, 6L, 1L, 2L);
  }

  @Test
  void due_checks_come_back_in_worker_id_order_whatever_the_rows_physical_order(TestDatabase tdb) {
    workers(tdb, true);
    QueueConfig config = QueueConfig.defaults();
    List<Long> ids = new TickTransitions(tdb.jdbc(), config, () -> NOW).claimDueChecks(100).stream()
        .map(TickTransitions.DueCheck::workerId).toList();
    assertThat(ids).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
  }

  @Test
  void unresolved_launches_come_back_in_worker_id_order_whatever_the_rows_physical_order(TestDatabase tdb) {
    workers(tdb, false);
    QueueConfig config = QueueConfig.defaults();
    QueueClock clock = () -> NOW;
    List<Long> ids = new DispatchTransitions(tdb.jdbc(), config, clock).claimUnresolvedLaunches(100).stream()
        .map(WorkerLaunch::workerId).toList();
    assertThat(ids).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
  }
}
