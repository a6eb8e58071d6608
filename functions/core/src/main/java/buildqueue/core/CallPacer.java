package buildqueue.core;

import buildqueue.platform.CallRates;
import java.time.Duration;

/**
 * A token bucket the tick draws on before each platform call, on the tick's own time, so that one
 * tick working through a backlog stays inside the platform's request rate ({@link CallRates}). It
 * starts full: a tick runs once a minute, long after the platform's buckets have refilled.
 */
final class CallPacer {
  private final CallRates.Rate rate;
  private final MonotonicClock time;
  private double tokens;
  private long last;

  CallPacer(CallRates.Rate rate, MonotonicClock time) {
    this.rate = rate;
    this.time = time;
    this.tokens = rate.burst();
    this.last = time.nanoTime();
  }

  /**
   * Takes a token, waiting for one if it comes before {@code deadline} (a {@link
   * MonotonicClock#nanoTime} value); false, with nothing taken, if it would come later.
   */
  boolean acquire(long deadline) {
    if (rate.unlimited()) {
      return true;
    }
    refill();
    if (tokens < 1) {
      // A millisecond more than this bucket needs, so that the platform's own, which refills on a
      // clock of its own, has its token too.
      long wait = (long) Math.ceil((1 - tokens) / rate.perSecond() * 1e9) + 1_000_000;
      if (time.nanoTime() + wait > deadline) {
        return false;
      }
      try {
        time.sleep(Duration.ofNanos(wait));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
      refill();
    }
    tokens = Math.max(0, tokens - 1);
    return true;
  }

  /** How many calls the bucket allows from now until {@code deadline}, at most {@code cap}. */
  int affordable(long deadline, int cap) {
    if (rate.unlimited()) {
      return cap;
    }
    refill();
    double seconds = Math.max(0, deadline - time.nanoTime()) / 1e9;
    return (int) Math.min(cap, Math.floor(tokens + seconds * rate.perSecond()));
  }

  private void refill() {
    long now = time.nanoTime();
    if (now > last) {
      tokens = Math.min(rate.burst(), tokens + (now - last) / 1e9 * rate.perSecond());
      last = now;
    }
  }
}
