package buildqueue.platform;

/** What a launch request achieved, as far as the caller can tell. */
public sealed interface LaunchOutcome {

  /**
   * The platform accepted the task; {@code taskId} is how it can be checked and stopped. {@code
   * ranOn}: the capacity it runs on when it is not the one the launch asked for first (Spot had
   * none and the launch fell back to on-demand); null otherwise.
   */
  record Started(String taskId, Capacity ranOn) implements LaunchOutcome {
    public Started(String taskId) {
      this(taskId, null);
    }
  }

  /**
   * Definitely nothing runs. {@code retryable} marks transient refusals (capacity shortages, a
   * deploy window): the job goes back to the queue with backoff. Otherwise the job fails with
   * {@code reason}, which a user must be able to act on.
   *
   * <p>{@code beforeToken}: the platform refused this request before looking at its token (IAM
   * denying the call, a deregistered task definition revision): this request started nothing, but
   * that says nothing of an earlier request with the same token. A relaunch so refused is an
   * unknown outcome to the queue, never a free slot.
   */
  record NotStarted(String reason, boolean retryable, boolean beforeToken)
      implements LaunchOutcome {
    public NotStarted(String reason, boolean retryable) {
      this(reason, retryable, false);
    }
  }

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
