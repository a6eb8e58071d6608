package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link QueueConfig#linger()}: a worker whose lane ran empty waits for new work before it drains.
 */
@ExtendWith(PostgresExtension.class)
class LingerTest {

  @Test
  void linger_is_off_by_default(TestDatabase tdb) {
    assertThat(QueueConfig.defaults().linger()).isZero();
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job = h.submit("alice", "noop", "{}");
      h.awaitStatus(job, "succeeded");
      h.awaitWorkersExited();
      assertThat(h.worker(h.job(job).longValue("worker_id")).string("exit_reason"))
          .isEqualTo("exited: drained");
    }
  }

  @Test
  void a_lingering_worker_takes_a_job_enqueued_after_its_lane_ran_empty(TestDatabase tdb) {
    QueueConfig config = QueueHarness.testConfig().withLinger(Duration.ofSeconds(20));
    try (QueueHarness h = QueueHarness.open(tdb, config)) {
      long first = h.submit("alice", "noop", "{}");
      h.awaitStatus(first, "succeeded");
      long worker = h.job(first).longValue("worker_id");
      assertThat(h.worker(worker).string("status")).isEqualTo("running");

      long second = h.submit("bob", "noop", "{}");
      h.awaitStatus(second, "succeeded");

      assertThat(h.job(second).longValue("worker_id")).isEqualTo(worker);
      assertThat(h.platform.launchRequests()).isEqualTo(1);
      assertThat(h.eventTypes(second)).containsExactly("enqueued", "dispatched", "succeeded");
    }
  }

  @Test
  void a_lingering_worker_drains_and_exits_when_no_work_comes(TestDatabase tdb) {
    QueueConfig config = QueueHarness.testConfig().withLinger(Duration.ofMillis(200));
    try (QueueHarness h = QueueHarness.open(tdb, config)) {
      // The workers' monotonic clock stands still until the test moves it, and counts its readings:
      // a lingering worker reads it before each look for work.
      AtomicLong nanos = new AtomicLong();
      AtomicInteger readings = new AtomicInteger();
      h.platform.nanoTime(
          () -> {
            readings.incrementAndGet();
            return nanos.get();
          });
      long job = h.submit("alice", "noop", "{}");
      h.awaitStatus(job, "succeeded");
      long worker = h.job(job).longValue("worker_id");
      int before = readings.get();
      Await.until(
          "the worker to look for work three times while it lingers",
          () -> readings.get() >= before + 3);
      assertThat(h.worker(worker).string("status"))
          .as("before its linger is over")
          .isEqualTo("running");

      nanos.addAndGet(config.linger().toNanos());
      h.awaitWorkersExited();
      assertThat(h.worker(worker).string("exit_reason")).isEqualTo("exited: drained");
      assertThat(h.workers()).hasSize(1);
    }
  }

  @Test
  void a_lingering_worker_drains_at_once_when_its_chain_window_has_closed(TestDatabase tdb)
      throws Exception {
    QueueConfig config = QueueHarness.testConfig().withLinger(Duration.ofSeconds(20));
    try (QueueHarness h = QueueHarness.open(tdb, config)) {
      long first = h.submitGate("alice");
      h.gates.awaitEntered(first);
      h.clock.advance(config.chainWindow());
      long worker = h.job(first).longValue("worker_id");
      h.gates.open(first);
      h.awaitStatus(first, "succeeded");
      // The job's end and the worker's drain are one statement: a worker that lingered would still
      // be running the moment its job succeeded.
      assertThat(h.worker(worker).string("status")).isIn("draining", "exited");
      h.awaitWorkersExited();
      assertThat(h.workers()).hasSize(1);
    }
  }
}
