package buildqueue.platform;

/**
 * How fast a platform may be called, as token buckets: {@code burst} calls at once, refilled at
 * {@code perSecond}. The tick paces its own calls by these, so that working through a backlog (ten
 * thousand liveness checks, a thousand unresolved launches) does not run into the platform's
 * request-rate limits. Other callers (the API, the stop handler) are not paced: they make one call
 * each, and a throttled one is an outcome like any other.
 *
 * @param changes calls that start or stop a task (ECS: RunTask and StopTask)
 * @param checks calls that read tasks' states, each for up to a batch of tasks (ECS: DescribeTasks)
 */
public record CallRates(Rate changes, Rate checks) {

  /** A token bucket: at most {@code burst} calls at once, {@code perSecond} sustained. */
  public record Rate(int burst, double perSecond) {
    public static final Rate UNLIMITED = new Rate(Integer.MAX_VALUE, Double.POSITIVE_INFINITY);

    public Rate {
      if (burst < 1 || !(perSecond > 0)) {
        throw new IllegalArgumentException(
            "a rate needs a burst of at least 1 and a positive rate, was "
                + burst
                + " at "
                + perSecond
                + "/s");
      }
    }

    public boolean unlimited() {
      return Double.isInfinite(perSecond);
    }
  }

  /** No limits: a platform that runs workers in this process or on this machine. */
  public static final CallRates UNLIMITED = new CallRates(Rate.UNLIMITED, Rate.UNLIMITED);
}
