package buildqueue.platform;

/** What a launch request achieved, as far as the caller can tell. */
public sealed interface LaunchOutcome {

  /** The platform accepted the task; {@code taskId} is how it can be checked and stopped. */
  record Started(String taskId) implements LaunchOutcome {}

  /**
   * Definitely nothing runs. {@code retryable} marks transient capacity shortages: the job goes
   * back to the queue with backoff. Otherwise the job fails with {@code reason}, which a user must
   * be able to act on.
   */
  record NotStarted(String reason, boolean retryable) implements LaunchOutcome {}

  /**
   * The request may or may not have started a task (a timeout, a 5xx, a dead caller). The slot
   * stays held: a retry with the same token resolves it, or the lease does. {@code throttled}: the
   * platform refused the request for its request rate (after its own retries), so a caller with
   * more launches to make should stop for now.
   */
  record Unknown(String reason, boolean throttled) implements LaunchOutcome {
    public Unknown(String reason) {
      this(reason, false);
    }
  }
}
