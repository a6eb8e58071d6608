package buildqueue.worker;

import buildqueue.BuildQueueException;

/**
 * A fenced write changed nothing: this worker's slot was reclaimed or its job requeued. The worker
 * stops at once, writing nothing more.
 */
public final class WorkerFencedOffException extends BuildQueueException {
  public WorkerFencedOffException(long workerId, long jobId) {
    super(
        "worker "
            + workerId
            + " no longer owns job "
            + jobId
            + " (its lease or token is no longer valid); it stops now");
  }
}
