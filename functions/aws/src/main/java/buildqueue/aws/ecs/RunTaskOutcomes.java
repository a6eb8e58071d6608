package buildqueue.aws.ecs;

import buildqueue.platform.LaunchOutcome;
import java.util.Locale;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.ecs.model.ConflictException;
import software.amazon.awssdk.services.ecs.model.Failure;
import software.amazon.awssdk.services.ecs.model.RunTaskResponse;

/**
 * How a RunTask answer becomes a {@link LaunchOutcome} (design §4).
 *
 * <ul>
 *   <li>A returned task: started.
 *   <li>A {@code failures[]} entry and no task: nothing was created (no task, no event). Capacity
 *       shortages are retryable; anything else is a configuration problem the job fails with.
 *   <li>A 4xx exception: ECS refused the request, so nothing runs; not retryable.
 *   <li>{@code ConflictException}: the token was used before with other parameters (the settings
 *       changed between a call and its retry): that earlier call's task is ours, named in {@code
 *       resourceIds}.
 *   <li>Throttling, by type ({@code ThrottlingException}) or by message (an {@code
 *       InvalidParameterException} saying "Request limit exceeded", see {@link
 *       #isThrottlingMessage}): unknown, not "not started". The SDK has already retried it, and an earlier
 *       attempt of the same call may have timed out after ECS started the task; freeing the slot
 *       then could put a second paid worker in it. Holding the slot until the tick's relaunch
 *       (same token, a minute later) costs one minute of one slot and doubles as backoff; the
 *       outcome says it was throttled, so a tick with more launches to make stops making them.
 *   <li>5xx, timeouts, I/O errors: unknown; the tick retries with the same token, which returns
 *       the task if one was started.
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
      String code = service.awsErrorDetails() == null ? null : service.awsErrorDetails().errorCode();
      String what = (code == null ? "HTTP " + service.statusCode() : code) + ": " + message(e);
      if (service.isThrottlingException() || isThrottlingMessage(message(e))) {
        return new LaunchOutcome.Unknown(
            limit("RunTask throttled (" + what + "); the tick retries with the same client token"), true);
      }
      if (service.statusCode() >= 400 && service.statusCode() < 500) {
        return new LaunchOutcome.NotStarted(limit("ECS refused RunTask: " + what), isCapacityShortage(message(e)));
      }
      return new LaunchOutcome.Unknown(limit("RunTask failed on the ECS side (" + what + ")"));
    }
    // SdkClientException: timeouts (ApiCallTimeoutException, ApiCallAttemptTimeoutException), I/O.
    return new LaunchOutcome.Unknown(limit("RunTask outcome unknown: " + e.getClass().getSimpleName() + ": " + message(e)));
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
   * Whether a RunTask failure reason is a transient shortage of capacity rather than a fault in
   * our configuration: Fargate's "Capacity is unavailable at this time", {@code RESOURCE:*} and
   * {@code AGENT} placement failures, and the account's concurrent task or vCPU quota ("You've
   * reached the limit on the number of tasks/vCPUs you can run concurrently"), which frees up as
   * other tasks end.
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
    if (e instanceof AwsServiceException s && s.awsErrorDetails() != null && s.awsErrorDetails().errorMessage() != null) {
      return s.awsErrorDetails().errorMessage();
    }
    return String.valueOf(e.getMessage());
  }

  static String limit(String s) {
    return s.length() <= REASON_LIMIT ? s : s.substring(0, REASON_LIMIT - 1) + "…";
  }
}
