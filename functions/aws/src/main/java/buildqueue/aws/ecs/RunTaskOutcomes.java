package buildqueue.aws.ecs;

import buildqueue.platform.LaunchOutcome;
import java.util.Locale;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.ecs.model.ConflictException;
import software.amazon.awssdk.services.ecs.model.Failure;
import software.amazon.awssdk.services.ecs.model.RunTaskResponse;

/**
 * How a RunTask answer becomes a {@link LaunchOutcome} (docs/architecture.md §4.4).
 *
 * <ul>
 *   <li>A returned task: started.
 *   <li>A {@code failures[]} entry and no task: nothing was created (no task, no event). Capacity
 *       shortages are retryable; anything else is a configuration problem the job fails with.
 *   <li>A 4xx exception: ECS refused the request, so nothing runs; not retryable, except the
 *       refusals a deploy window or a fresh account causes ({@link #deployRefusal}): IAM denying
 *       the call while a new policy propagates, a task definition revision a deploy deregistered,
 *       an account without ECS's service-linked role yet. Those are retryable: the job goes back to
 *       the queue with backoff under the launch-failure limit, and if the refusal outlasts it the
 *       job's error says what it was and what the operator does about it. IAM decides before ECS
 *       looks at the client token, and ECS does not say whether it checks a revision's status or
 *       its role before the token, so none of them says anything of an earlier call with the same
 *       token: {@code beforeToken}, which makes a relaunch so refused unknown to the queue.
 *   <li>{@code ConflictException}: the token was used before with other parameters (the settings
 *       changed between a call and its retry): that earlier call's task is ours, named in {@code
 *       resourceIds}.
 *   <li>Throttling, by type ({@code ThrottlingException}) or by message (an {@code
 *       InvalidParameterException} saying "Request limit exceeded", see {@link
 *       #isThrottlingMessage}): unknown, not "not started". The SDK has already retried it, and an
 *       earlier attempt of the same call may have timed out after ECS started the task; freeing the
 *       slot then could put a second paid worker in it. Holding the slot until the tick's relaunch
 *       (same token, a minute later) costs one minute of one slot and doubles as backoff; the
 *       outcome says it was throttled, so a tick with more launches to make stops making them.
 *   <li>5xx, timeouts, I/O errors: unknown; the tick retries with the same token, which returns the
 *       task if one was started.
 * </ul>
 */
final class RunTaskOutcomes {
  /** Launch reasons end up in job errors and events; ECS messages are short, this is a guard. */
  static final int REASON_LIMIT = 500;

  private RunTaskOutcomes() {}

  static LaunchOutcome of(RunTaskResponse response) {
    if (response.hasTasks() && !response.tasks().isEmpty()) {
      return new LaunchOutcome.Started(response.tasks().get(0).taskArn());
    }
    if (response.hasFailures() && !response.failures().isEmpty()) {
      Failure f = response.failures().get(0);
      String reason = f.reason() == null ? "unknown failure" : f.reason();
      String detail = f.detail() == null || f.detail().isBlank() ? "" : " (" + f.detail() + ")";
      return new LaunchOutcome.NotStarted(
          limit("ECS could not place the task: " + reason + detail), isCapacityShortage(reason));
    }
    return new LaunchOutcome.Unknown("RunTask answered with neither a task nor a failure");
  }

  static LaunchOutcome of(SdkException e) {
    if (e instanceof ConflictException conflict) {
      if (conflict.hasResourceIds() && !conflict.resourceIds().isEmpty()) {
        return new LaunchOutcome.Started(conflict.resourceIds().get(0));
      }
      return new LaunchOutcome.Unknown("RunTask ConflictException named no task: " + message(e));
    }
    if (e instanceof AwsServiceException service) {
      String code =
          service.awsErrorDetails() == null ? null : service.awsErrorDetails().errorCode();
      String what = (code == null ? "HTTP " + service.statusCode() : code) + ": " + message(e);
      if (service.isThrottlingException() || isThrottlingMessage(message(e))) {
        return new LaunchOutcome.Unknown(
            limit("RunTask throttled (" + what + "); the tick retries with the same client token"),
            true);
      }
      if (service.statusCode() >= 400 && service.statusCode() < 500) {
        String fix = deployRefusal(code, message(e));
        if (fix != null) {
          return new LaunchOutcome.NotStarted(refusal(what, fix), true, true);
        }
        return new LaunchOutcome.NotStarted(
            limit("ECS refused RunTask: " + what), isCapacityShortage(message(e)));
      }
      return new LaunchOutcome.Unknown(limit("RunTask failed on the ECS side (" + what + ")"));
    }
    // SdkClientException: timeouts (ApiCallTimeoutException, ApiCallAttemptTimeoutException), I/O.
    return new LaunchOutcome.Unknown(
        limit("RunTask outcome unknown: " + e.getClass().getSimpleName() + ": " + message(e)));
  }

  /** What IAM answers when a policy does not (yet) allow the call; the message names the action. */
  static final String ACCESS_DENIED = "AccessDeniedException";

  /**
   * RunTask naming a revision that was deregistered: {@code InvalidParameterException}
   * "TaskDefinition is inactive" (DefangLabs/defang#775, after an image tag change replaced the
   * revision; UpdateService answers the same text as a {@code ClientException}), so matched by
   * message whatever the type.
   */
  static final String INACTIVE_TASK_DEFINITION = "taskdefinition is inactive";

  /**
   * An account where ECS has never created its service-linked role: {@code
   * InvalidParameterException} "Unable to assume the service linked role. Please verify that the
   * ECS service linked role exists." (awslabs/fargatecli#35,
   * aws-solutions/cost-optimizer-for-amazon-workspaces#13 on RunTask).
   */
  static final String NO_SERVICE_LINKED_ROLE = "unable to assume the service linked role";

  /**
   * If a RunTask refusal is one a deploy window or a fresh account causes, what it means and what
   * the operator does if it lasts; otherwise null (a configuration error, final). A deploy replaces
   * the task definition (the old revision is deregistered, INACTIVE) and rewrites the functions'
   * IAM statements, which take a while to reach every caller; a launch by family then uses the
   * latest ACTIVE revision. None of these says anything about the job, so none may fail it at first
   * sight.
   */
  static String deployRefusal(String code, String message) {
    String m = message == null ? "" : message.toLowerCase(Locale.ROOT);
    if (m.contains(NO_SERVICE_LINKED_ROLE)) {
      return "this account has no ECS service-linked role yet; create it once with"
          + " `aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com`";
    }
    if (m.contains(INACTIVE_TASK_DEFINITION)) {
      return "the worker's task definition revision was deregistered by a deploy; if this lasts, the"
          + " function still names that revision: set BUILDQUEUE_TASK_DEFINITION to the family and redeploy";
    }
    if (ACCESS_DENIED.equals(code)) {
      return "IAM denied the call, as it does while a deploy's new policy propagates; if this lasts, the"
          + " function's role needs ecs:RunTask on task-definition/<family>:* and iam:PassRole on the task's roles";
    }
    return null;
  }

  /** A deploy refusal's reason: what ECS said, cut so that the fix always fits. */
  private static String refusal(String what, String fix) {
    String head = "ECS refused RunTask (" + fix + "): ";
    int room = REASON_LIMIT - head.length();
    return head + (what.length() <= room ? what : what.substring(0, room - 1) + "…");
  }

  /**
   * Whether an error's message says a request rate was exceeded, whatever its type: RunTask has
   * answered {@code InvalidParameterException} "… Request limit exceeded. (ErrorCode:
   * RequestLimitExceeded)" when ECS's own EC2 calls were throttled (dask/dask-cloudprovider#56).
   * Such a refusal says nothing about our configuration, so it must never fail a job for good.
   */
  static boolean isThrottlingMessage(String message) {
    if (message == null) {
      return false;
    }
    String m = message.toLowerCase(Locale.ROOT);
    return m.contains("request limit exceeded")
        || m.contains("requestlimitexceeded")
        || m.contains("rate exceeded")
        || m.contains("too many requests")
        || m.contains("throttl");
  }

  /**
   * Whether a RunTask failure reason is a transient shortage of capacity rather than a fault in our
   * configuration: Fargate's "Capacity is unavailable at this time", {@code RESOURCE:*} and {@code
   * AGENT} placement failures, and the account's concurrent task or vCPU quota ("You've reached the
   * limit on the number of tasks/vCPUs you can run concurrently"), which frees up as other tasks
   * end.
   */
  static boolean isCapacityShortage(String reason) {
    if (reason == null) {
      return false;
    }
    String r = reason.toLowerCase(Locale.ROOT);
    return r.startsWith("resource:")
        || r.equals("agent")
        || r.contains("capacity is unavailable")
        || r.contains("reached the limit on the number of");
  }

  private static String message(SdkException e) {
    if (e instanceof AwsServiceException s
        && s.awsErrorDetails() != null
        && s.awsErrorDetails().errorMessage() != null) {
      return s.awsErrorDetails().errorMessage();
    }
    return String.valueOf(e.getMessage());
  }

  static String limit(String s) {
    return s.length() <= REASON_LIMIT ? s : s.substring(0, REASON_LIMIT - 1) + "…";
  }
}
