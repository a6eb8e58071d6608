package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * BENCHMARKS.md's idle day: a day of an empty queue, minute by minute, with the minute schedule
 * firing only while armed and the daily fallback always; the statements the database receives from
 * the tick, and the hours it is awake (Aurora pauses {@link #AUTO_PAUSE} after the last
 * connection). Before idle at zero: 1,440 statements and 24 h awake.
 */
@ExtendWith(PostgresExtension.class)
class IdleDayTest {
  static final Duration AUTO_PAUSE = Duration.ofSeconds(300);
  static final int MINUTES = 24 * 60;

  record Day(long statements, double awakeHours) {}

  static Day day(QueueHarness h, TickSchedule schedule, boolean[] on) {
    BuildQueue queue =
        new BuildQueue(
            h.db, h.manual, h.config, h.clock, BuildQueue.ExitListener.NONE, null, schedule);
    // The tick that found the queue empty at the end of the busy period, before the day starts.
    queue.tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);
    h.db.reset();
    long awakeUntil = Long.MIN_VALUE;
    long awakeSeconds = 0;
    for (int minute = 1; minute <= MINUTES; minute++) {
      // Once a day, at some minute of it: its five minutes awake fall inside the day.
      boolean fallback = minute == MINUTES / 2;
      if (!on[0] && !fallback) {
        continue;
      }
      long before = h.db.statements();
      queue.tick(
          TickBudget.of(queue.maxTickBudget()),
          false,
          fallback ? TickSchedule.Cause.FALLBACK : TickSchedule.Cause.SCHEDULE);
      if (h.db.statements() > before) {
        long now = minute * 60L;
        long until = Math.min(now + AUTO_PAUSE.toSeconds(), MINUTES * 60L);
        awakeSeconds += until - Math.max(now, awakeUntil);
        awakeUntil = until;
      }
    }
    return new Day(h.db.statements(), awakeSeconds / 3600.0);
  }

  @Test
  void an_idle_day_costs_the_fallback_and_nothing_else(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      boolean[] on = {true};
      TickSchedule schedule =
          new TickSchedule() {
            @Override
            public void arm() {
              on[0] = true;
            }

            @Override
            public void disarm() {
              on[0] = false;
            }
          };
      Day after = day(h, schedule, on);
      boolean[] always = {true};
      Day before = day(h, TickSchedule.ALWAYS, always);
      System.out.printf(
          "idle day: before %d statements, %.2f h awake; after %d statements, %.3f h awake%n",
          before.statements(), before.awakeHours(), after.statements(), after.awakeHours());

      assertThat(before.statements()).isEqualTo(MINUTES);
      assertThat(after.statements()).as("the fallback's survey and clear").isEqualTo(2);
      assertThat(after.awakeHours()).isLessThanOrEqualTo(0.1);
    }
  }
}
