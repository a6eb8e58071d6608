package buildqueue.platform;

import java.util.Collection;
import java.util.Map;

/**
 * Where workers run: ECS/Fargate tasks in AWS, child processes locally, threads in tests. The queue
 * asks it to launch, to check, and (for a cancelled job's worker) to stop tasks. Exits are reported
 * to the queue separately, as stop evidence ({@code BuildQueue#taskStopped}).
 */
public interface WorkerPlatform {

  /**
   * Starts one worker. Must be idempotent per {@link WorkerLaunch#token()}: a second call for the
   * same token returns the first call's task, never a second one.
   */
  LaunchOutcome launch(WorkerLaunch launch);

  /**
   * The state of each task. A task the platform does not answer for is {@link TaskState.Missing}.
   * Adapters batch as their API requires (ECS: 100 per DescribeTasks).
   */
  Map<String, TaskState> check(Collection<String> taskIds);

  /**
   * Whether {@link #check} can give evidence for this task from here. A worker that cannot be
   * checked (a local process on another host) is reclaimed by lease expiry alone.
   */
  boolean canCheck(String taskId);

  /** Asks the platform to stop a task. Best effort: the slot is freed by the stop evidence. */
  void stop(String taskId, String reason);

  /** How fast the tick may call this platform; by default without limit. */
  default CallRates callRates() {
    return CallRates.UNLIMITED;
  }
}
