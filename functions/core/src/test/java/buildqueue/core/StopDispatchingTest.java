package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestAdapter;
import buildqueue.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A queue told to stop dispatching (a server shutting down) gives no job a worker or an attempt.
 */
@ExtendWith(PostgresExtension.class)
class StopDispatchingTest {

  private static String statusAndAttempts(TestDatabase tdb, long job) {
    return tdb
        .jdbc()
        .query("select status, attempts from build_job where id = :id", Params.of("id", job))
        .stream()
        .map(r -> r.string("status") + "/" + r.intValue("attempts"))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void after_stop_dispatching_no_enqueue_exit_or_tick_dispatches_and_the_jobs_stay_queued(
      TestDatabase tdb) {
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue =
        new BuildQueue(
            TestAdapter.selected().open(tdb),
            platform,
            QueueConfig.defaults(),
            QueueClock.DATABASE);
    long running = queue.enqueue("alice", "noop", new Json("{}"), null).jobId();
    assertThat(platform.launches()).hasSize(1);
    long workerId = platform.lastLaunch().workerId();

    queue.stopDispatching();
    long dedicated = queue.enqueue("bob", "noop", new Json("{}"), null).jobId();
    queue.setDedicated("bob", true);
    queue.taskStopped(
        ManualPlatform.taskIdOf(workerId),
        workerId,
        platform.lastLaunch().token(),
        "stopped by a test");
    queue.tick();

    assertThat(platform.launches()).as("launches after the first").hasSize(1);
    assertThat(statusAndAttempts(tdb, running))
        .as("the job whose worker exited")
        .isEqualTo("queued/1");
    assertThat(statusAndAttempts(tdb, dedicated))
        .as("the job enqueued, then moved to a free lane")
        .isEqualTo("queued/0");
  }
}
