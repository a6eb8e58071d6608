package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Params;
import buildqueue.platform.TaskState;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.WorkerStop;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Which stops the database takes for a Spot reclaim ({@code build_stop_is_reclaim}, V012), for the
 * reasons the Java side writes: the stop code first in stop evidence ({@link
 * TaskState#SPOT_INTERRUPTION}), and the worker's own interruption when told to stop ({@link
 * WorkerStop#INTERRUPTION_REASON_PREFIX}), which is a reclaim only on a Spot worker.
 */
@ExtendWith(PostgresExtension.class)
class SpotReclaimEvidenceTest {

  @ParameterizedTest(name = "{0} worker, {1}: {3}")
  @CsvSource({
    "spot,      evidence,  SpotInterruption: Your Spot Task was interrupted.; container worker exited 143, true",
    "on-demand, evidence,  SpotInterruption: Your Spot Task was interrupted., true",
    "spot,      evidence,  SpotInterruption, true",
    "spot,      worker,    SIGTERM, true",
    "on-demand, worker,    SIGTERM, false",
    "spot,      evidence,  EssentialContainerExited: Essential container in task exited, false",
    "spot,      evidence,  UserInitiated: lease expired, false",
    "spot,      evidence,  worker process 12 is gone, false",
  })
  void a_stop_is_a_reclaim_by_its_stop_code_or_a_spot_workers_own_stop(
      String capacity, String source, String reason, boolean reclaim, TestDatabase db) {
    String text = source.equals("worker") ? WorkerStop.INTERRUPTION_REASON_PREFIX + reason : reason;

    boolean answer =
        db.jdbc()
            .query(
                "select build_stop_is_reclaim(:capacity, :reason) as reclaim",
                Params.of("capacity", capacity, "reason", text))
            .get(0)
            .bool("reclaim");

    assertThat(answer).isEqualTo(reclaim);
    if (source.equals("evidence")) {
      assertThat(new TaskState.Stopped(text).reclaimed()).isEqualTo(reclaim);
    }
  }
}
