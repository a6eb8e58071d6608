package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.db.Json;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A paused lane starts nothing (docs/architecture.md §4.7): not by a dispatch (an enqueue's, the
 * tick's, an exit's), not by chaining; its running job finishes and its worker drains; submissions
 * still queue. Resuming dispatches it at once, and it drains. Workers are played by hand ({@link
 * ManualPlatform}) on the harness's settable clock.
 */
@ExtendWith(PostgresExtension.class)
class PauseTest {

  @Test
  void a_paused_lane_starts_nothing_for_a_minute_while_its_queue_grows_and_resuming_drains_it(
      TestDatabase tdb) {
    QueueHarness h =
        QueueHarness.manual(
            tdb,
            QueueHarness.testConfig().withSharedSlots(2).withChainWindow(Duration.ofMinutes(5)));
    OrderTransitions order = new OrderTransitions(h.db, h.clock);
    List<Long> jobs = new ArrayList<>();
    jobs.add(h.queue.enqueue("a", "noop", new Json("{}"), "a0").jobId());
    WorkerLaunch first = h.manual.lastLaunch();
    long running =
        h.workers.start(first.workerId(), first.token()).orElseThrow().job().orElseThrow().id();

    order.pause(Lanes.SHARED, "root");
    for (int second = 5; second <= 60; second += 5) {
      h.clock.advance(Duration.ofSeconds(5));
      String user = second % 10 == 0 ? "a" : "b";
      JobTransitions.Enqueued e = h.queue.enqueue(user, "noop", new Json("{}"), "k" + second);
      jobs.add(e.jobId());
      if (second == 30) {
        // The running job ends: its worker would chain the next job, but the lane is paused.
        assertThat(
                h.workers.end(first.workerId(), first.token(), running, JobStatus.SUCCEEDED, null))
            .isInstanceOf(Ended.Drained.class);
        h.queue.taskStopped(
            ManualPlatform.taskIdOf(first.workerId()), first.workerId(), first.token(), "exited");
      }
      h.queue.tick();
    }

    assertThat(h.manual.launches()).as("launches while paused").hasSize(1);
    assertThat(h.status(running)).isEqualTo("succeeded");
    assertThat(jobs.subList(1, jobs.size()))
        .allSatisfy(id -> assertThat(h.status(id)).isEqualTo("queued"));

    order.resume(Lanes.SHARED);
    h.queue.dispatchLane(Lanes.SHARED);

    assertThat(h.manual.launches()).as("both free slots taken at once").hasSize(3);
    int played = 1;
    while (played < h.manual.launches().size()) {
      WorkerLaunch w = h.manual.launches().get(played++);
      long job = h.workers.start(w.workerId(), w.token()).orElseThrow().job().orElseThrow().id();
      Ended ended;
      while ((ended = h.workers.end(w.workerId(), w.token(), job, JobStatus.SUCCEEDED, null))
          instanceof Ended.Chained chained) {
        job = chained.next().id();
      }
      assertThat(ended).isInstanceOf(Ended.Drained.class);
      h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited");
    }
    assertThat(jobs).allSatisfy(id -> assertThat(h.status(id)).isEqualTo("succeeded"));
  }

  @Test
  void pausing_twice_keeps_the_first_pause_and_resuming_a_running_lane_changes_nothing(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig());
    OrderTransitions order = new OrderTransitions(h.db, h.clock);

    order.pause("user:a", "root");
    h.clock.advance(Duration.ofMinutes(1));
    order.pause("user:a", "other");

    assertThat(h.db.query("select paused_by from build_lane_pause", buildqueue.db.Params.none()))
        .singleElement()
        .satisfies(r -> assertThat(r.string("paused_by")).isEqualTo("root"));
    assertThat(order.resume("user:a")).isTrue();
    assertThat(order.resume("user:a")).isFalse();
    assertThat(order.resume(Lanes.SHARED)).isFalse();
  }
}
