package buildqueue.core;

/**
 * What turns the scheduled tick on and off (docs/architecture.md §4.5, "Idle at zero"): the tick's
 * EventBridge rule on AWS, the tick loop locally. The queue arms it after the enqueue that found
 * the tick disarmed (V014) and disarms it when a tick finds no work; a slow fallback schedule,
 * which this does not turn off, bounds what a lost arm can delay. Both calls are idempotent and may
 * arrive late or twice: a late arm costs idle ticks until the next one disarms, never a job.
 */
public interface TickSchedule {
  /** Turns the tick on. May throw; the fallback then finds the work. */
  void arm();

  /** Turns the tick off. May throw; the tick then runs on and disarms again at the next one. */
  void disarm();

  /** The tick always runs: the queue neither arms nor disarms (a caller with a fixed schedule). */
  TickSchedule ALWAYS =
      new TickSchedule() {
        @Override
        public void arm() {}

        @Override
        public void disarm() {}
      };

  /** Why a tick runs: its own schedule, or the fallback that runs whether armed or not. */
  enum Cause {
    SCHEDULE,
    FALLBACK
  }
}
