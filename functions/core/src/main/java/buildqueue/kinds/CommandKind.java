package buildqueue.kinds;

import buildqueue.platform.Capacity;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A job kind the operator defines in the kind catalogue: a program the worker runs for each job.
 *
 * @param name the kind, as submitted in {@code POST /jobs}
 * @param command the program and its arguments (an argv array, never a shell string; the payload is
 *     never put into it)
 * @param timeout the job is stopped and fails after running this long
 * @param payloadSchema checked at submit; a failing payload is refused with a 400
 * @param retryExitCodes exit codes that mean "interrupted, try again" under the recovery policy
 * @param env fixed variables for the program, beside the {@code BUILDQUEUE_*} ones
 * @param cancelGracePeriod after SIGTERM (cancel, timeout), how long before SIGKILL
 * @param capacity what its workers run on ({@code "capacity"}); empty: the stack's default
 * @param artifacts what its jobs may publish ({@code "artifacts"}), within {@link
 *     ArtifactLimits#GLOBAL}
 */
public record CommandKind(
    String name,
    List<String> command,
    Duration timeout,
    PayloadSchema payloadSchema,
    Set<Integer> retryExitCodes,
    Map<String, String> env,
    Duration cancelGracePeriod,
    Optional<Capacity> capacity,
    ArtifactLimits artifacts) {

  public static final Duration DEFAULT_CANCEL_GRACE_PERIOD = Duration.ofSeconds(10);

  public CommandKind {
    command = List.copyOf(command);
    retryExitCodes = Set.copyOf(retryExitCodes);
    env = Map.copyOf(env);
    capacity = capacity == null ? Optional.empty() : capacity;
    artifacts = artifacts == null ? ArtifactLimits.GLOBAL : artifacts;
  }

  /** A kind whose jobs may publish up to the queue's global artifact limits. */
  public CommandKind(
      String name,
      List<String> command,
      Duration timeout,
      PayloadSchema payloadSchema,
      Set<Integer> retryExitCodes,
      Map<String, String> env,
      Duration cancelGracePeriod,
      Optional<Capacity> capacity) {
    this(
        name,
        command,
        timeout,
        payloadSchema,
        retryExitCodes,
        env,
        cancelGracePeriod,
        capacity,
        ArtifactLimits.GLOBAL);
  }

  /** A kind that runs on the stack's default capacity. */
  public CommandKind(
      String name,
      List<String> command,
      Duration timeout,
      PayloadSchema payloadSchema,
      Set<Integer> retryExitCodes,
      Map<String, String> env,
      Duration cancelGracePeriod) {
    this(
        name,
        command,
        timeout,
        payloadSchema,
        retryExitCodes,
        env,
        cancelGracePeriod,
        Optional.empty());
  }
}
