package buildqueue.platform;

import java.time.Duration;

/**
 * A Fargate Spot reclaim on request: what the local runtime offers so that the reclaim path runs
 * end to end with real processes ({@code bq reclaim WORKER}). The worker gets SIGTERM (the
 * two-minute warning, locally a short grace), then SIGKILL, and its exit evidence carries the stop
 * code {@link TaskState#SPOT_INTERRUPTION} as an ECS reclaim's does. On AWS a reclaim is AWS's
 * doing: no AWS component offers this.
 */
@FunctionalInterface
public interface SpotReclaims {

  /**
   * Reclaims worker {@code workerId} if it is a running Spot worker; never throws for a refusal.
   */
  Outcome reclaim(long workerId);

  /** What a reclaim request did. */
  sealed interface Outcome {
    /** SIGTERM was sent; SIGKILL follows after {@code grace} if the worker still runs. */
    record Reclaimed(long workerId, String taskId, Duration grace) implements Outcome {}

    /** No such worker (never launched, or deleted by the retention). */
    record NoSuchWorker(long workerId) implements Outcome {}

    /** The worker exists but cannot be reclaimed; {@code why} says why and what to do. */
    record Refused(long workerId, String why) implements Outcome {}
  }
}
