package buildqueue.platform;

/** What a platform knows about a launched task. */
public sealed interface TaskState {

  /** The task may still run (pending, provisioning, running, stopping). */
  record Running() implements TaskState {}

  /**
   * The stop code of a Fargate Spot reclaim (ECS's {@code TaskStopCode.SpotInterruption}). Stop
   * evidence carries its stop code first in its reason ("SpotInterruption: Your Spot Task was
   * interrupted."), on AWS and locally, which is how the exit tells a reclaim from other stops
   * ({@code build_stop_is_reclaim}, V012).
   */
  String SPOT_INTERRUPTION = "SpotInterruption";

  /** What ECS says in {@code stoppedReason} when it reclaims a Spot task. */
  String SPOT_INTERRUPTED_REASON = "Your Spot Task was interrupted.";

  /** Termination evidence: the task is gone and cannot run again. */
  record Stopped(String reason) implements TaskState {
    /** Whether the evidence is a Spot reclaim: its reason starts with the stop code. */
    public boolean reclaimed() {
      return reason != null && reason.startsWith(SPOT_INTERRUPTION);
    }
  }

  /** The platform does not know the task (MISSING): no evidence until the lease has expired. */
  record Missing() implements TaskState {}

  /**
   * The platform gave no answer for the task (its call failed): no evidence either way, so it is
   * checked again later. {@code throttled}: the platform refused the call for its request rate, and
   * the caller should stop checking for now rather than add to the load.
   */
  record Unanswered(String reason, boolean throttled) implements TaskState {}
}
