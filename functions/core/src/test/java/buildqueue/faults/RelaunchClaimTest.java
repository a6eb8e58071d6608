package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.DispatchTransitions;
import buildqueue.db.Json;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Found by the fault simulation: two launchers of one worker with the same token can get different
 * answers (one a capacity failure, the other a started task); the failure's record then frees the
 * slot under the starting task. A dispatcher and the tick never overlap, because the tick waits the
 * launch grace, which outlasts every caller. Two ticks could: a relaunch claim used to lapse after
 * the liveness interval. It now holds for the launch grace too.
 */
@ExtendWith(PostgresExtension.class)
class RelaunchClaimTest {

  @Test
  void a_relaunch_claim_holds_for_the_launch_grace_so_no_two_ticks_relaunch_a_worker_at_once(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(new LaunchOutcome.Unknown("timed out"));
    h.queue.enqueue("alice", "noop", new Json("{}"), null);
    WorkerLaunch unresolved = h.manual.lastLaunch();
    DispatchTransitions dispatch = new DispatchTransitions(h.db, h.config, h.clock);

    h.clock.advance(h.config.launchGrace().plusSeconds(1));
    assertThat(dispatch.claimUnresolvedLaunches(100))
        .extracting(WorkerLaunch::workerId)
        .containsExactly(unresolved.workerId());

    // The first tick is still inside its RunTask call; a second tick comes along.
    h.clock.advance(h.config.livenessInterval().plus(Duration.ofSeconds(1)));
    assertThat(h.config.livenessInterval().plusSeconds(1)).isLessThan(h.config.launchGrace());
    assertThat(dispatch.claimUnresolvedLaunches(100)).isEmpty();

    // Once no caller of the first claim can be alive, the launch is retried again.
    h.clock.advance(h.config.launchGrace());
    assertThat(dispatch.claimUnresolvedLaunches(100))
        .extracting(WorkerLaunch::workerId)
        .containsExactly(unresolved.workerId());
  }
}
