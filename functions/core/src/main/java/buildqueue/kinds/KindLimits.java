package buildqueue.kinds;

import java.time.Duration;
import java.util.Objects;

/**
 * What a worker's life leaves a kind: the catalogue refuses a kind whose {@code timeout} or {@code
 * cancelGracePeriod} a worker could not honour. The numbers are the queue's (its {@code
 * QueueConfig}); the worker side builds this from them, so that the catalogue needs nothing of the
 * queue's core.
 *
 * @param workerLifetime how long a worker may live
 * @param chainWindow how long after its start a worker may still take another job
 * @param deadlineMargin how long before its lease a worker kills itself
 * @param leaseSlack how far the lease reaches past the lifetime
 */
public record KindLimits(
    Duration workerLifetime, Duration chainWindow, Duration deadlineMargin, Duration leaseSlack) {

  public KindLimits {
    Objects.requireNonNull(workerLifetime, "workerLifetime");
    Objects.requireNonNull(chainWindow, "chainWindow");
    Objects.requireNonNull(deadlineMargin, "deadlineMargin");
    Objects.requireNonNull(leaseSlack, "leaseSlack");
  }

  /**
   * The longest timeout a kind may have: a job taken at the end of the chain window still ends
   * before the worker must.
   */
  public Duration maxTimeout() {
    return workerLifetime.minus(chainWindow).minus(deadlineMargin);
  }

  /**
   * The longest {@code cancelGracePeriod}: a job stopped at its timeout is gone before its worker's
   * lease runs out.
   */
  public Duration maxCancelGracePeriod() {
    return leaseSlack;
  }
}
