package buildqueue.worker.exec;

import java.time.Duration;

/**
 * The time a {@link ProcessRunner} measures timeouts and grace periods on, and sleeps by. The
 * real one is the system's monotonic clock; a simulation supplies its own, so a job's timeout falls
 * at a virtual instant.
 */
public interface RunnerClock {
  /** Monotonic nanoseconds, as {@link System#nanoTime}. */
  long nanoTime();

  void sleep(Duration duration) throws InterruptedException;

  RunnerClock SYSTEM =
      new RunnerClock() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public void sleep(Duration duration) throws InterruptedException {
          Thread.sleep(Math.max(0, duration.toMillis()));
        }
      };
}
