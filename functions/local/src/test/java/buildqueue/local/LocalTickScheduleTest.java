package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.TickSchedule.Cause;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The local tick loop touches the database only while armed, or when the fallback is due. */
class LocalTickScheduleTest {
  private static final long MINUTE = Duration.ofMinutes(1).toNanos();

  @Test
  void disarmed_it_ticks_only_at_the_fallback_and_an_arm_wakes_it_at_once() {
    LocalTickSchedule s = new LocalTickSchedule(Duration.ofHours(1));
    assertThat(s.due(0)).isEqualTo(Cause.SCHEDULE);

    s.disarm();
    int ticks = 0;
    for (long t = MINUTE; t < 60 * MINUTE; t += MINUTE) {
      ticks += s.due(t) == null ? 0 : 1;
    }
    assertThat(ticks).as("no tick in the hour after the disarm").isZero();
    assertThat(s.due(60 * MINUTE)).isEqualTo(Cause.FALLBACK);
    assertThat(s.due(61 * MINUTE)).isNull();

    s.arm();
    assertThat(s.due(61 * MINUTE + 1)).isEqualTo(Cause.SCHEDULE);
  }

  @Test
  void the_fallback_is_a_day_or_the_retention_if_shorter_so_an_idle_server_still_housekeeps() {
    assertThat(LocalTickSchedule.fallbackFor(Duration.ofDays(7))).isEqualTo(Duration.ofDays(1));
    assertThat(LocalTickSchedule.fallbackFor(Duration.ofSeconds(10)))
        .isEqualTo(Duration.ofSeconds(10));
  }
}
