package buildqueue.worker;

/** How a handler's run ended. */
public sealed interface JobOutcome {
  record Succeeded() implements JobOutcome {}

  /** {@code message} is shown to the user as the job's error: say what to do about it. */
  record Failed(String message) implements JobOutcome {}

  /**
   * The job could not finish this time but may next time (a process exited with one of its kind's
   * {@code retryExitCodes}): it goes back to the head of its lane under the recovery policy, as if
   * its worker had died, while this worker goes on.
   */
  record Interrupted(String reason) implements JobOutcome {}

  static JobOutcome succeeded() {
    return new Succeeded();
  }

  static JobOutcome failed(String message) {
    return new Failed(message);
  }

  static JobOutcome interrupted(String reason) {
    return new Interrupted(reason);
  }
}
