package buildqueue.platform;

import java.util.UUID;

/**
 * What a platform needs to start one worker. The token doubles as the platform's idempotency key
 * (RunTask's {@code clientToken}): launching the same worker twice starts at most one task. {@code
 * capacity}: what to run it on (on-demand unless the queue chose otherwise for its job).
 */
public record WorkerLaunch(long workerId, UUID token, String lane, String slot, Capacity capacity) {

  public WorkerLaunch {
    capacity = capacity == null ? Capacity.ON_DEMAND : capacity;
  }

  public WorkerLaunch(long workerId, UUID token, String lane, String slot) {
    this(workerId, token, lane, slot, Capacity.ON_DEMAND);
  }

  /** The same launch on another capacity. */
  public WorkerLaunch on(Capacity other) {
    return new WorkerLaunch(workerId, token, lane, slot, other);
  }

  /** The {@code startedBy} tag that lets a stop event name its worker: {@code bq-<workerId>}. */
  public String startedBy() {
    return "bq-" + workerId;
  }
}
