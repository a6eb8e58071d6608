package buildqueue.platform;

import java.util.UUID;

/**
 * What a platform needs to start one worker. The token doubles as the platform's idempotency key
 * (RunTask's {@code clientToken}): launching the same worker twice starts at most one task.
 */
public record WorkerLaunch(long workerId, UUID token, String lane, String slot) {

  /** The {@code startedBy} tag that lets a stop event name its worker: {@code bq-<workerId>}. */
  public String startedBy() {
    return "bq-" + workerId;
  }
}
