package buildqueue.worker;

import buildqueue.BuildQueueException;

/**
 * The worker was told to stop (SIGTERM, {@link WorkerStop}) while its job ran: the job returns, and
 * the worker records an interruption that keeps its progress, so it resumes on another worker.
 */
public final class WorkerStoppingException extends BuildQueueException {
  public WorkerStoppingException(long workerId, long jobId) {
    super(
        "worker "
            + workerId
            + " was told to stop while job "
            + jobId
            + " ran; the job goes back to its lane with"
            + " its progress");
  }
}
