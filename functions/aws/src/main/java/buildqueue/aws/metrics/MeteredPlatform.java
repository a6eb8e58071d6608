package buildqueue.aws.metrics;

import buildqueue.platform.ForwardingWorkerPlatform;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts launch outcomes on their way from the platform to the queue. The queue is built once per
 * container while metrics are per invocation, so the counts accumulate here and each invocation
 * {@link #drainInto drains} them into its own {@link Metrics}.
 */
public final class MeteredPlatform extends ForwardingWorkerPlatform {
  private final AtomicLong started = new AtomicLong();
  private final AtomicLong notStarted = new AtomicLong();
  private final AtomicLong unknown = new AtomicLong();

  public MeteredPlatform(WorkerPlatform delegate) {
    super(delegate);
  }

  @Override
  public LaunchOutcome launch(WorkerLaunch launch) {
    LaunchOutcome outcome;
    try {
      outcome = delegate.launch(launch);
    } catch (RuntimeException e) {
      unknown.incrementAndGet(); // the queue treats a throwing launch as an unknown outcome
      throw e;
    }
    if (outcome instanceof LaunchOutcome.Started) {
      started.incrementAndGet();
    } else if (outcome instanceof LaunchOutcome.NotStarted) {
      notStarted.incrementAndGet();
    } else {
      unknown.incrementAndGet();
    }
    return outcome;
  }

  /**
   * Moves the counts so far into {@code metrics} (only those that are not zero) and resets them.
   */
  public void drainInto(Metrics metrics) {
    put(metrics, Metrics.LAUNCHES, started.getAndSet(0));
    put(metrics, Metrics.LAUNCH_FAILURES, notStarted.getAndSet(0));
    put(metrics, Metrics.LAUNCHES_UNKNOWN, unknown.getAndSet(0));
  }

  private static void put(Metrics metrics, String name, long n) {
    if (n > 0) {
      metrics.count(name, n);
    }
  }
}
