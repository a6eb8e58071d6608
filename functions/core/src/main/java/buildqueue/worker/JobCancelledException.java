package buildqueue.worker;

import buildqueue.BuildQueueException;

/** The job's owner asked to cancel it; the worker ends it {@code cancelled}. */
public final class JobCancelledException extends BuildQueueException {
  public JobCancelledException(long jobId) {
    super("job " + jobId + " was cancelled by its owner; the worker ends it as cancelled");
  }
}
