package buildqueue.worker;

/**
 * Where each line of a job's output goes besides the tail the queue keeps: the worker's own log
 * (CloudWatch Logs through {@code awslogs} on AWS, the worker's log file locally), a file per job.
 * A sink must not throw: a job's log is never a reason to fail it.
 */
public interface JobLogSink {

  void line(long jobId, JobLog.Stream stream, String text);

  /** Where this job's whole log can be read, for its record; null when nowhere but the tail. */
  default String location(long jobId) {
    return null;
  }

  /** The job ended on this worker: release what its log held (a file handle). */
  default void close(long jobId) {}

  /** Lines go nowhere (tests that only look at the tail). */
  JobLogSink NONE = (jobId, stream, text) -> {};
}
