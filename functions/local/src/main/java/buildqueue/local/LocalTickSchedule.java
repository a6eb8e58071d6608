package buildqueue.local;

import buildqueue.core.TickSchedule;
import java.time.Duration;

/**
 * The local server's tick schedule (docs/architecture.md §4.5, "Idle at zero"): the tick loop still
 * wakes every tick interval, in process, but touches the database only while armed, or when the
 * fallback is due. An arm made by a request is seen at the loop's next wake-up (a few seconds at
 * most); the request's own dispatch has started its job already.
 */
final class LocalTickSchedule implements TickSchedule {
  /** As on AWS (the fallback rule's {@code rate(1 day)}): what a lost arm can delay at most. */
  static final Duration FALLBACK = Duration.ofDays(1);

  /**
   * The fallback of a server whose retention is {@code retention}: a day, or the retention if
   * shorter. An idle queue's only tick is the fallback, and the housekeeping runs in it: on AWS (a
   * retention of days) a finished job is deleted at most a day past its retention, and a local
   * server told to keep jobs for seconds must not keep them a day.
   */
  static Duration fallbackFor(Duration retention) {
    return retention.compareTo(FALLBACK) < 0 ? retention : FALLBACK;
  }

  private final Duration fallback;
  private volatile boolean armed = true;
  private long lastTickNanos;
  private boolean ticked;

  LocalTickSchedule(Duration fallback) {
    this.fallback = fallback;
  }

  @Override
  public void arm() {
    armed = true;
  }

  @Override
  public void disarm() {
    armed = false;
  }

  boolean armed() {
    return armed;
  }

  /**
   * Why the loop should tick at {@code nowNanos}, or null: not armed, and the fallback not due (a
   * fallback interval since the last tick of either kind).
   */
  synchronized Cause due(long nowNanos) {
    Cause cause =
        armed
            ? Cause.SCHEDULE
            : !ticked || nowNanos - lastTickNanos >= fallback.toNanos() ? Cause.FALLBACK : null;
    if (cause != null) {
      ticked = true;
      lastTickNanos = nowNanos;
    }
    return cause;
  }
}
