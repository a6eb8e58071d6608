package buildqueue.platform;

/** What a platform knows about a launched task. */
public sealed interface TaskState {

  /** The task may still run (pending, provisioning, running, stopping). */
  record Running() implements TaskState {}

  /** Termination evidence: the task is gone and cannot run again. */
  record Stopped(String reason) implements TaskState {}

  /** The platform does not know the task (MISSING): no evidence until the lease has expired. */
  record Missing() implements TaskState {}
}
