package buildqueue.worker;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * User code for one job kind. The worker calls {@link #run} with the job's payload and a context
 * for progress, cancellation and follow-up jobs. A handler that may be interrupted (its worker can
 * die at any point) should resume from {@link JobContext#progress()}, which is where the last
 * attempt got to.
 */
public interface JobHandler {

  /** The kind this handler runs, as submitted in {@code POST /jobs}. */
  String kind();

  /**
   * Checks a payload before it is accepted. Throw {@link IllegalArgumentException} with a message a
   * person can act on; the API answers 400 with it and writes nothing.
   */
  default void validate(JsonNode payload) {}

  /**
   * Runs the job. Return {@link JobOutcome#succeeded()} or {@link JobOutcome#failed}; an exception
   * fails the job with its message. Progress reports may throw {@link JobCancelledException},
   * {@link WorkerStoppingException} or {@link WorkerFencedOffException}: let them propagate.
   */
  JobOutcome run(JobContext context) throws Exception;
}
