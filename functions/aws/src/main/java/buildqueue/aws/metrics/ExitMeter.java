package buildqueue.aws.metrics;

import buildqueue.core.BuildQueue;
import buildqueue.core.ExitTransitions;
import buildqueue.core.JobStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Collects the worker exits the queue records (through the stop handler, the tick's liveness check
 * or lease expiry) until an invocation drains them into its metrics: workers exited, how long each
 * held its slot, and what became of the jobs they left behind.
 */
public final class ExitMeter implements BuildQueue.ExitListener {
  private final List<ExitTransitions.Exited> exits = new ArrayList<>();

  @Override
  public synchronized void exited(ExitTransitions.Exited exited) {
    exits.add(exited);
  }

  public synchronized void drainInto(Metrics metrics) {
    if (exits.isEmpty()) {
      return;
    }
    metrics.count(Metrics.WORKERS_EXITED, exits.size());
    long recoveries = 0;
    long failed = 0;
    long neverStarted = 0;
    for (ExitTransitions.Exited e : exits) {
      metrics.observe(
          Metrics.SLOT_HELD_SECONDS, e.slotHeld().isNegative() ? Duration.ZERO : e.slotHeld());
      JobStatus jobStatus = e.jobStatus().orElse(null);
      if (e.neverStarted()) {
        // A task that failed to start is a launch failure: its job never ran.
        neverStarted++;
      } else if (jobStatus == JobStatus.QUEUED) {
        recoveries++;
      } else if (jobStatus == JobStatus.FAILED) {
        failed++;
      }
    }
    if (recoveries > 0) {
      metrics.count(Metrics.RECOVERIES, recoveries);
    }
    if (failed > 0) {
      metrics.count(Metrics.JOBS_FAILED_AFTER_EXITS, failed);
    }
    if (neverStarted > 0) {
      metrics.count(Metrics.WORKERS_NEVER_STARTED, neverStarted);
    }
    exits.clear();
  }
}
