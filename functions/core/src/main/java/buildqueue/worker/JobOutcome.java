package buildqueue.worker;

/** How a handler's run ended. */
public sealed interface JobOutcome {
  record Succeeded() implements JobOutcome {}

  /** {@code message} is shown to the user as the job's error: say what to do about it. */
  record Failed(String message) implements JobOutcome {}

  static JobOutcome succeeded() {
    return new Succeeded();
  }

  static JobOutcome failed(String message) {
    return new Failed(message);
  }
}
