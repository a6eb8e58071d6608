package buildqueue.core;

import java.time.Duration;

/**
 * Elapsed time, and waiting: what a tick's budget and its pacing of platform calls are measured on,
 * and what a program job's timeout and grace period are. The machine's monotonic clock in
 * production; a simulation supplies its own, so a budget ends or a timeout falls at a virtual
 * instant.
 */
public interface MonotonicClock {
  /** Monotonic nanoseconds, as {@link System#nanoTime}. */
  long nanoTime();

  void sleep(Duration duration) throws InterruptedException;

  MonotonicClock SYSTEM =
      new MonotonicClock() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public void sleep(Duration duration) throws InterruptedException {
          if (!duration.isNegative()) {
            Thread.sleep(duration.toMillis(), (int) (duration.toNanos() % 1_000_000));
          }
        }
      };
}
