package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** What a stop leaves a job's programs, on a clock the test moves. */
class WorkerStopTest {
  private final AtomicLong now = new AtomicLong(1_000);

  private WorkerStop stop(int seconds) {
    return new WorkerStop(Duration.ofSeconds(seconds), now::get);
  }

  private void pass(Duration d) {
    now.addAndGet(d.toNanos());
  }

  @Test
  void programs_get_the_stop_timeout_less_five_seconds_from_the_request() {
    WorkerStop stop = stop(120);
    assertThat(stop.requested()).isFalse();
    pass(Duration.ofMinutes(10)); // time before the request does not count
    stop.request("SIGTERM");
    assertThat(stop.programTimeLeft()).isEqualTo(Duration.ofSeconds(115));
    assertThat(stop.hookTimeLeft()).isEqualTo(Duration.ofSeconds(118));
    pass(Duration.ofSeconds(100));
    assertThat(stop.programTimeLeft()).isEqualTo(Duration.ofSeconds(15));
    pass(Duration.ofSeconds(16));
    assertThat(stop.programTimeLeft()).isZero();
    assertThat(stop.hookTimeLeft()).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void a_short_stop_timeout_keeps_half_for_the_record_and_a_tenth_for_the_exit() {
    WorkerStop stop = stop(4);
    stop.request("SIGTERM");
    assertThat(stop.programTimeLeft()).isEqualTo(Duration.ofSeconds(2));
    assertThat(stop.hookTimeLeft()).isEqualTo(Duration.ofMillis(3_600));
  }

  @Test
  void the_first_request_is_the_one_that_counts() {
    WorkerStop stop = stop(30);
    stop.request("first");
    pass(Duration.ofSeconds(10));
    stop.request("second");
    assertThat(stop.reason()).isEqualTo("first");
    assertThat(stop.programTimeLeft()).isEqualTo(Duration.ofSeconds(15));
  }

  @Test
  void the_stop_timeout_is_read_in_seconds_with_ecs_default_and_a_clear_error() {
    assertThat(WorkerEnvironment.stopTimeout(null)).isEqualTo(Duration.ofSeconds(30));
    assertThat(WorkerEnvironment.stopTimeout(" 120 ")).isEqualTo(Duration.ofSeconds(120));
    for (String bad : new String[] {"0", "-5", "2m", "86401"}) {
      assertThatThrownBy(() -> WorkerEnvironment.stopTimeout(bad))
          .isInstanceOf(BuildQueueException.class)
          .hasMessageContaining(WorkerStop.STOP_TIMEOUT_VARIABLE)
          .hasMessageContaining("\"" + bad + "\"");
    }
    WorkerEnvironment env =
        WorkerEnvironment.read(
            Map.of(
                WorkerEnvironment.WORKER_ID,
                "1",
                WorkerEnvironment.WORKER_TOKEN,
                java.util.UUID.randomUUID().toString(),
                WorkerEnvironment.DATABASE_URL,
                "jdbc:postgresql://localhost/x",
                WorkerStop.STOP_TIMEOUT_VARIABLE,
                "10"));
    assertThat(env.stopTimeout()).isEqualTo(Duration.ofSeconds(10));
  }
}
