package buildqueue.core;

import buildqueue.BuildQueueException;
import java.time.Instant;

/**
 * A user's jobs were billed their budget of this period already: the submission wrote nothing
 * (docs/architecture.md §4.8).
 *
 * @see Ledger#defaultBudgetVcpuSeconds()
 */
public final class BudgetExceededException extends BuildQueueException {
  private final long usedVcpuSeconds;
  private final long budgetVcpuSeconds;
  private final String period;
  private final Instant periodEnds;
  private final long retryAfterSeconds;

  public BudgetExceededException(
      String userId,
      long usedVcpuSeconds,
      long budgetVcpuSeconds,
      String period,
      Instant periodEnds,
      long retryAfterSeconds) {
    super(
        "user "
            + userId
            + " used "
            + usedVcpuSeconds
            + " of a budget of "
            + budgetVcpuSeconds
            + " vCPU-seconds this "
            + period
            + ", which ends at "
            + periodEnds
            + ". Nothing was written.");
    this.usedVcpuSeconds = usedVcpuSeconds;
    this.budgetVcpuSeconds = budgetVcpuSeconds;
    this.period = period;
    this.periodEnds = periodEnds;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  public long usedVcpuSeconds() {
    return usedVcpuSeconds;
  }

  public long budgetVcpuSeconds() {
    return budgetVcpuSeconds;
  }

  public String period() {
    return period;
  }

  public Instant periodEnds() {
    return periodEnds;
  }

  /** Seconds until the period ends, at least 1. */
  public long retryAfterSeconds() {
    return retryAfterSeconds;
  }
}
