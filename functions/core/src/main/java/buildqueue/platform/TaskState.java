package buildqueue.platform;

/** What a platform knows about a launched task. */
public sealed interface TaskState {

  /** The task may still run (pending, provisioning, running, stopping). */
  record Running() implements TaskState {}

  /** Termination evidence: the task is gone and cannot run again. */
  record Stopped(String reason) implements TaskState {}

  /** The platform does not know the task (MISSING): no evidence until the lease has expired. */
  record Missing() implements TaskState {}

  /**
   * The platform gave no answer for the task (its call failed): no evidence either way, so it is
   * checked again later. {@code throttled}: the platform refused the call for its request rate, and
   * the caller should stop checking for now rather than add to the load.
   */
  record Unanswered(String reason, boolean throttled) implements TaskState {}
}
