package buildqueue.core;

import java.time.Duration;

/**
 * How long one tick may work, and the clock it is measured on. A tick works through everything due
 * (liveness checks, unresolved launches, expired leases, lanes to dispatch) batch after batch until
 * it is done or its budget is spent; whatever is left is first in line at the next tick. Each part
 * always does its first batch, whatever the budget, so a tick never does nothing.
 *
 * <p>The queue holds every tick to at most half the launch grace ({@link
 * BuildQueue#maxTickBudget}), whatever its caller allows: a relaunch claimed at the end of the
 * budget must have finished, within the platform client's own timeout (ECS: 25 s), before its claim
 * lapses and another tick may relaunch the same worker. The Lambda passes what its timeout leaves
 * ({@code TickFunction}).
 *
 * @param limit how long the tick may go on starting new work
 * @param time what the limit and the pacing of platform calls are measured on
 */
public record TickBudget(Duration limit, MonotonicClock time) {
  public TickBudget {
    if (limit == null || limit.isNegative()) {
      throw new IllegalArgumentException("a tick budget must not be negative, was " + limit);
    }
    if (time == null) {
      throw new IllegalArgumentException("a tick budget needs a time to measure it on");
    }
  }

  /** A budget on the machine's clock. */
  public static TickBudget of(Duration limit) {
    return new TickBudget(limit, MonotonicClock.SYSTEM);
  }

  TickBudget atMost(Duration max) {
    return limit.compareTo(max) <= 0 ? this : new TickBudget(max, time);
  }
}
