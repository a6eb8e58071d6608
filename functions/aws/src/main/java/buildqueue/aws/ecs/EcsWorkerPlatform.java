package buildqueue.aws.ecs;

import buildqueue.platform.CallRates;
import buildqueue.platform.Capacity;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.ecs.EcsClient;
import software.amazon.awssdk.services.ecs.model.AssignPublicIp;
import software.amazon.awssdk.services.ecs.model.ClusterNotFoundException;
import software.amazon.awssdk.services.ecs.model.Container;
import software.amazon.awssdk.services.ecs.model.DescribeTasksResponse;
import software.amazon.awssdk.services.ecs.model.Failure;
import software.amazon.awssdk.services.ecs.model.KeyValuePair;
import software.amazon.awssdk.services.ecs.model.LaunchType;
import software.amazon.awssdk.services.ecs.model.RunTaskRequest;
import software.amazon.awssdk.services.ecs.model.Task;

/**
 * Workers as ECS/Fargate tasks: one RunTask per worker, DescribeTasks for liveness, StopTask for a
 * worker that must not run on.
 *
 * <p>Guarantees: {@link #launch} is idempotent per worker token (it is RunTask's {@code
 * clientToken}), so calling it again for the same worker resolves an unknown outcome and never
 * starts a second task while ECS keeps the token: the lesser of 24 hours from its first use and the
 * task's lifetime plus one hour (ECS API Reference, Ensuring idempotency). Every RunTask for a
 * worker falls between its dispatch and its lease's end ({@code claimUnresolvedLaunches} takes only
 * unexpired leases), so the token outlives every relaunch while its task may live as long as the
 * lease is shorter than 24 hours, which {@link buildqueue.aws.AwsSettings} enforces; a token
 * forgotten an hour after its task stopped starts a new task only when the first is gone. {@link
 * #launch}, {@link #check} and {@link #stop} never throw: every failure becomes an outcome, a state
 * or a log line. The task's environment overrides carry the worker id and token and nothing else;
 * they are visible in events and DescribeTasks, so the database settings live in the task
 * definition.
 */
public final class EcsWorkerPlatform implements WorkerPlatform {
  /** Environment variable the worker reads its id from. */
  public static final String WORKER_ID_VARIABLE = "BUILDQUEUE_WORKER_ID";

  /** Environment variable the worker reads its token from. */
  public static final String WORKER_TOKEN_VARIABLE = "BUILDQUEUE_WORKER_TOKEN";

  /** DescribeTasks takes at most 100 tasks a call. */
  static final int DESCRIBE_BATCH = 100;

  /** StopTask's reason is at most 255 characters. */
  static final int STOP_REASON_LIMIT = 255;

  /** Stop reasons become the worker's exit reason; containers' reasons can be long. */
  static final int STOPPED_REASON_LIMIT = 1000;

  private static final System.Logger LOG = System.getLogger(EcsWorkerPlatform.class.getName());

  private final EcsClient ecs;
  private final EcsSettings settings;

  public EcsWorkerPlatform(EcsClient ecs, EcsSettings settings) {
    this.ecs = ecs;
    this.settings = settings;
  }

  public EcsSettings settings() {
    return settings;
  }

  /** The capacity provider a Spot launch asks for; the cluster must be associated with it. */
  public static final String FARGATE_SPOT = "FARGATE_SPOT";

  /**
   * Launches the worker on the capacity it asks for. On-demand is {@code launchType FARGATE}, as it
   * always was. Spot is a capacity provider strategy of {@value #FARGATE_SPOT} alone (RunTask
   * refuses a {@code launchType} beside a strategy, and a strategy of two providers splits tasks by
   * weight rather than falling back: ECS API Reference, RunTask). When Spot has no capacity (a
   * {@code failures[]} entry, "Capacity is unavailable at this time", or another retryable
   * refusal), a {@code spot-then-on-demand} worker is launched again on on-demand with a client
   * token of its own ({@link #onDemandToken}: the same token with other parameters would be a
   * {@code ConflictException}); a {@code spot} worker's launch fails as any capacity shortage does,
   * retried with backoff under the launch-failure limit.
   */
  @Override
  public LaunchOutcome launch(WorkerLaunch launch) {
    LaunchOutcome outcome = launchOn(launch, launch.capacity().spot());
    if (launch.capacity() == Capacity.SPOT_THEN_ON_DEMAND
        && outcome instanceof LaunchOutcome.NotStarted n
        && n.retryable()
        && !n.beforeToken()) {
      LOG.log(
          Level.INFO,
          "worker {0}: no Spot capacity ({1}); launching on on-demand",
          launch.workerId(),
          n.reason());
      outcome = launchOn(launch, false);
      if (outcome instanceof LaunchOutcome.Started s) {
        outcome = new LaunchOutcome.Started(s.taskId(), Capacity.ON_DEMAND);
      }
    }
    return outcome;
  }

  private LaunchOutcome launchOn(WorkerLaunch launch, boolean spot) {
    LaunchOutcome outcome;
    try {
      outcome = RunTaskOutcomes.of(ecs.runTask(runTaskRequest(launch, spot)));
    } catch (SdkException e) {
      outcome = RunTaskOutcomes.of(e);
    } catch (RuntimeException e) {
      outcome = new LaunchOutcome.Unknown(RunTaskOutcomes.limit("RunTask outcome unknown: " + e));
    }
    if (outcome instanceof LaunchOutcome.Started s) {
      LOG.log(
          Level.INFO,
          "worker {0} in {1}: task {2} on {3}",
          launch.workerId(),
          launch.slot(),
          s.taskId(),
          spot ? FARGATE_SPOT : "FARGATE");
    }
    return outcome;
  }

  /**
   * The client token of a Spot worker's on-demand fallback: derived from the worker's token, so a
   * relaunch of the fallback is as idempotent as the first launch.
   */
  static String onDemandToken(WorkerLaunch launch) {
    return UUID.nameUUIDFromBytes(
            ("on-demand/" + launch.token()).getBytes(java.nio.charset.StandardCharsets.UTF_8))
        .toString();
  }

  /**
   * The RunTask request for a worker, on Spot or on-demand; the same worker always gives the same
   * request for each.
   */
  RunTaskRequest runTaskRequest(WorkerLaunch launch, boolean spot) {
    RunTaskRequest.Builder b = RunTaskRequest.builder();
    if (spot) {
      b.capacityProviderStrategy(p -> p.capacityProvider(FARGATE_SPOT).weight(1))
          .clientToken(launch.token().toString());
    } else {
      b.launchType(LaunchType.FARGATE)
          .clientToken(
              launch.capacity().spot() ? onDemandToken(launch) : launch.token().toString());
    }
    return b.cluster(settings.cluster())
        .taskDefinition(settings.taskDefinition())
        .count(1)
        .startedBy(launch.startedBy())
        .networkConfiguration(
            n ->
                n.awsvpcConfiguration(
                    v ->
                        v.subnets(settings.subnets())
                            .securityGroups(settings.securityGroups())
                            .assignPublicIp(
                                settings.assignPublicIp()
                                    ? AssignPublicIp.ENABLED
                                    : AssignPublicIp.DISABLED)))
        .overrides(
            o ->
                o.containerOverrides(
                    c ->
                        c.name(settings.containerName())
                            .environment(
                                KeyValuePair.builder()
                                    .name(WORKER_ID_VARIABLE)
                                    .value(Long.toString(launch.workerId()))
                                    .build(),
                                KeyValuePair.builder()
                                    .name(WORKER_TOKEN_VARIABLE)
                                    .value(launch.token().toString())
                                    .build())))
        .build();
  }

  /**
   * DescribeTasks in batches of 100. STOPPED is evidence; any other status may still run. A task
   * ECS does not answer for is {@link TaskState.Missing}, as are all tasks of a cluster that no
   * longer exists (a cluster with tasks cannot be deleted). A call that fails otherwise gives no
   * evidence either way: its tasks are {@link TaskState.Unanswered}, to be checked again at the
   * next tick. Once a call is throttled, the batches after it are not sent: they would only add to
   * the load, and are unanswered, throttled, too.
   */
  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    List<String> ids = List.copyOf(taskIds);
    Map<String, TaskState> states = new LinkedHashMap<>();
    boolean throttled = false;
    for (int from = 0; from < ids.size(); from += DESCRIBE_BATCH) {
      List<String> batch = ids.subList(from, Math.min(ids.size(), from + DESCRIBE_BATCH));
      if (throttled) {
        batch.forEach(
            id ->
                states.put(
                    id,
                    new TaskState.Unanswered(
                        "DescribeTasks not sent: ECS throttled the call before", true)));
        continue;
      }
      Map<String, TaskState> answered = describe(batch);
      throttled =
          answered.values().stream()
              .anyMatch(s -> s instanceof TaskState.Unanswered u && u.throttled());
      states.putAll(answered);
    }
    return states;
  }

  /**
   * ECS's default request rates per account and Region, which the tick paces itself by: RunTask on
   * Fargate 20 calls a second, burst and sustained (StopTask shares RunTask's bucket of 100 at 40 a
   * second, and Fargate launches 100 at 20 a second: 20 a second bounds them all for one task a
   * call); DescribeTasks a bucket of 100 at 20 a second (ECS API Reference, Request throttling; ECS
   * Developer Guide, AWS Fargate throttling quotas). The API and the stop handler share them, so a
   * tick can still be throttled: it then stops that part until the next tick.
   */
  static final CallRates ECS_RATES =
      new CallRates(new CallRates.Rate(20, 20), new CallRates.Rate(100, 20));

  @Override
  public CallRates callRates() {
    return ECS_RATES;
  }

  private Map<String, TaskState> describe(List<String> batch) {
    Map<String, TaskState> states = new LinkedHashMap<>();
    DescribeTasksResponse response;
    try {
      response = ecs.describeTasks(b -> b.cluster(settings.cluster()).tasks(batch));
    } catch (ClusterNotFoundException e) {
      LOG.log(
          Level.WARNING,
          "DescribeTasks: cluster {0} not found; its {1} tasks count as missing",
          settings.cluster(),
          batch.size());
      batch.forEach(id -> states.put(id, new TaskState.Missing()));
      return states;
    } catch (RuntimeException e) {
      boolean throttled =
          e instanceof AwsServiceException s
              && (s.isThrottlingException() || RunTaskOutcomes.isThrottlingMessage(s.getMessage()));
      LOG.log(
          Level.WARNING,
          "DescribeTasks {0} for {1} tasks; no evidence until the next check: {2}",
          throttled ? "throttled" : "failed",
          batch.size(),
          e.toString());
      String reason =
          RunTaskOutcomes.limit("DescribeTasks " + (throttled ? "throttled: " : "failed: ") + e);
      batch.forEach(id -> states.put(id, new TaskState.Unanswered(reason, throttled)));
      return states;
    }
    for (Task t : response.tasks()) {
      states.put(t.taskArn(), stateOf(t));
    }
    for (Failure f : response.failures()) {
      if (f.arn() != null && !"MISSING".equals(f.reason())) {
        LOG.log(
            Level.WARNING,
            "DescribeTasks failure for {0}: {1} {2}",
            f.arn(),
            f.reason(),
            f.detail());
      }
    }
    // MISSING failures, and anything not answered at all, are the same to the queue.
    batch.forEach(id -> states.putIfAbsent(id, new TaskState.Missing()));
    return states;
  }

  static TaskState stateOf(Task t) {
    return "STOPPED".equals(t.lastStatus())
        ? new TaskState.Stopped(stoppedReason(t))
        : new TaskState.Running();
  }

  /**
   * Why a task stopped, from its stop code, stopped reason and containers' exit codes and reasons;
   * never from its overrides (they hold the worker token).
   */
  static String stoppedReason(Task t) {
    List<String> parts = new ArrayList<>();
    String code = t.stopCodeAsString();
    String reason = t.stoppedReason();
    if (reason != null && !reason.isBlank()) {
      parts.add(code == null || reason.startsWith(code) ? reason : code + ": " + reason);
    } else if (code != null) {
      parts.add(code);
    }
    for (Container c : t.containers()) {
      if (c.exitCode() == null && (c.reason() == null || c.reason().isBlank())) {
        continue;
      }
      StringBuilder s = new StringBuilder("container ").append(c.name());
      if (c.exitCode() != null) {
        s.append(" exited ").append(c.exitCode());
      }
      if (c.reason() != null && !c.reason().isBlank()) {
        s.append(": ").append(c.reason());
      }
      parts.add(s.toString());
    }
    String all = parts.isEmpty() ? "stopped" : String.join("; ", parts);
    return all.length() <= STOPPED_REASON_LIMIT
        ? all
        : all.substring(0, STOPPED_REASON_LIMIT - 1) + "…";
  }

  @Override
  public boolean canCheck(String taskId) {
    return settings.ownsTask(taskId);
  }

  /** StopTask, best effort: the slot is freed by the stop evidence, not by this call. */
  @Override
  public void stop(String taskId, String reason) {
    String shortReason =
        reason == null
            ? null
            : reason.length() <= STOP_REASON_LIMIT
                ? reason
                : reason.substring(0, STOP_REASON_LIMIT);
    try {
      ecs.stopTask(b -> b.cluster(settings.cluster()).task(taskId).reason(shortReason));
      LOG.log(Level.INFO, "StopTask {0}: {1}", taskId, shortReason);
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "StopTask {0} failed; its slot stays held until stop evidence arrives: {1}",
          taskId,
          e.toString());
    }
  }
}
