package buildqueue.aws.ecs;

import static buildqueue.aws.fake.FakeEcs.Operation.DESCRIBE_TASKS;
import static buildqueue.aws.fake.FakeEcs.Operation.RUN_TASK;
import static buildqueue.aws.fake.FakeEcs.Operation.STOP_TASK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import buildqueue.aws.fake.FakeEcs;
import buildqueue.aws.fake.FakeEcs.Answer;
import buildqueue.platform.Capacity;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.services.ecs.EcsClient;

/** {@link EcsWorkerPlatform} through the real SDK client against {@link FakeEcs}. */
class EcsWorkerPlatformTest {
  static final String CLUSTER = "queue-workers";
  static final EcsSettings SETTINGS =
      new EcsSettings(
          CLUSTER,
          FakeEcs.TASK_DEFINITION,
          List.of("subnet-0aaa", "subnet-0bbb"),
          List.of("sg-0ccc"),
          false,
          "worker");

  FakeEcs fake;
  EcsClient client;
  EcsWorkerPlatform platform;

  @BeforeEach
  void start() {
    fake = FakeEcs.start();
    client = fake.newClient();
    platform = new EcsWorkerPlatform(client, SETTINGS);
  }

  @AfterEach
  void stop() {
    client.close();
    fake.close();
  }

  static WorkerLaunch aLaunch() {
    return new WorkerLaunch(42, UUID.randomUUID(), "shared", "shared#1");
  }

  static LaunchOutcome.NotStarted notStarted(LaunchOutcome outcome) {
    assertThat(outcome).isInstanceOf(LaunchOutcome.NotStarted.class);
    return (LaunchOutcome.NotStarted) outcome;
  }

  // ---- launch -----------------------------------------------------------------------------

  @Test
  void a_returned_task_is_started_with_its_arn() {
    LaunchOutcome outcome = platform.launch(aLaunch());

    assertThat(fake.tasks()).hasSize(1);
    assertThat(outcome).isEqualTo(new LaunchOutcome.Started(fake.tasks().get(0).arn()));
    assertThat(fake.tasks().get(0).arn())
        .startsWith("arn:aws:ecs:eu-west-1:111122223333:task/queue-workers/");
  }

  @Test
  void run_task_parameters_are_exactly_as_configured() {
    WorkerLaunch launch = aLaunch();
    platform.launch(launch);

    FakeEcs.Request request = fake.requests(RUN_TASK).get(0);
    assertThat(request.header("X-Amz-Target"))
        .isEqualTo("AmazonEC2ContainerServiceV20141113.RunTask");
    assertThat(request.header("Content-Type")).isEqualTo("application/x-amz-json-1.1");
    JsonNode body = request.body();
    assertThat(fieldNames(body))
        .containsExactlyInAnyOrder(
            "cluster",
            "taskDefinition",
            "launchType",
            "count",
            "clientToken",
            "startedBy",
            "networkConfiguration",
            "overrides");
    assertThat(body.path("cluster").asText()).isEqualTo(CLUSTER);
    assertThat(body.path("taskDefinition").asText()).isEqualTo("buildqueue-worker");
    assertThat(body.path("launchType").asText()).isEqualTo("FARGATE");
    assertThat(body.path("count").asInt()).isEqualTo(1);
    assertThat(body.path("clientToken").asText())
        .isEqualTo(launch.token().toString())
        .hasSizeLessThanOrEqualTo(64);
    assertThat(body.path("startedBy").asText()).isEqualTo("bq-42");
    JsonNode vpc = body.path("networkConfiguration").path("awsvpcConfiguration");
    assertThat(fieldNames(body.path("networkConfiguration")))
        .containsExactly("awsvpcConfiguration");
    assertThat(texts(vpc.path("subnets"))).containsExactly("subnet-0aaa", "subnet-0bbb");
    assertThat(texts(vpc.path("securityGroups"))).containsExactly("sg-0ccc");
    assertThat(vpc.path("assignPublicIp").asText()).isEqualTo("DISABLED");
  }

  @Test
  void a_public_ip_is_assigned_when_configured() {
    EcsSettings publicIp =
        new EcsSettings(
            CLUSTER, "buildqueue-worker", List.of("subnet-0aaa"), List.of(), true, "worker");
    new EcsWorkerPlatform(client, publicIp).launch(aLaunch());

    JsonNode vpc = fake.last(RUN_TASK).path("networkConfiguration").path("awsvpcConfiguration");
    assertThat(vpc.path("assignPublicIp").asText()).isEqualTo("ENABLED");
  }

  @Test
  void overrides_carry_nothing_but_the_worker_id_and_token() {
    WorkerLaunch launch = aLaunch();
    LaunchOutcome.Started started = (LaunchOutcome.Started) platform.launch(launch);

    JsonNode overrides = fake.last(RUN_TASK).path("overrides");
    assertThat(fieldNames(overrides)).containsExactly("containerOverrides");
    assertThat(overrides.path("containerOverrides")).hasSize(1);
    JsonNode container = overrides.path("containerOverrides").get(0);
    assertThat(fieldNames(container)).containsExactlyInAnyOrder("name", "environment");
    assertThat(container.path("name").asText()).isEqualTo("worker");
    assertThat(fake.task(started.taskId()).environment("worker"))
        .containsExactly(
            Map.entry("BUILDQUEUE_WORKER_ID", "42"),
            Map.entry("BUILDQUEUE_WORKER_TOKEN", launch.token().toString()));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "Capacity is unavailable at this time. Please try again later or in a different availability zone",
        "RESOURCE:CPU",
        "RESOURCE:MEMORY",
        "RESOURCE:ENI",
        "AGENT",
        "You’ve reached the limit on the number of vCPUs you can run concurrently"
      })
  void a_capacity_failure_is_a_retryable_not_started(String reason) {
    fake.answer(RUN_TASK, Answer.failure(reason));

    LaunchOutcome.NotStarted outcome = notStarted(platform.launch(aLaunch()));

    assertThat(outcome.retryable()).isTrue();
    assertThat(outcome.reason()).contains(reason);
    assertThat(fake.tasks()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {"MISSING", "ATTRIBUTE", "INACTIVE"})
  void a_configuration_failure_is_a_final_not_started(String reason) {
    fake.answer(
        RUN_TASK,
        Answer.failure(reason, "arn:aws:ecs:eu-west-1:111122223333:cluster/queue-workers"));

    LaunchOutcome.NotStarted outcome = notStarted(platform.launch(aLaunch()));

    assertThat(outcome.retryable()).isFalse();
    assertThat(outcome.reason()).contains(reason).contains("cluster/queue-workers");
  }

  @ParameterizedTest
  @CsvSource({
    "ClientException, 'Unable to assume role and validate the specified executionRoleArn.'",
    "InvalidParameterException, 'Error retrieving subnet information for [subnet-0aaa]: The subnet ID does not exist.'",
    "ClusterNotFoundException, 'Cluster not found.'",
    "PlatformUnknownException, 'The specified platform version does not exist.'",
    "PlatformTaskDefinitionIncompatibilityException, 'The specified platform does not satisfy the task definition.'",
    "BlockedException, 'Your account is blocked.'",
    "SomeFutureException, 'A 4xx the SDK does not know.'"
  })
  void a_client_error_is_a_final_not_started_and_is_not_retried(String type, String message) {
    fake.answerAlways(RUN_TASK, Answer.error(400, type, message));

    LaunchOutcome.NotStarted outcome = notStarted(platform.launch(aLaunch()));

    assertThat(outcome.retryable()).isFalse();
    assertThat(outcome.reason()).contains(type).contains(message);
    assertThat(fake.count(RUN_TASK)).isEqualTo(1);
  }

  // ---- refusals a deploy window or a fresh account causes: retryable, never final at first sight
  // ----

  @Test
  void a_denied_run_task_is_a_retryable_not_started_naming_iam() {
    fake.denyRunTaskUntil(java.time.Instant.now().plusSeconds(3600));

    LaunchOutcome.NotStarted outcome = notStarted(platform.launch(aLaunch()));

    assertThat(outcome.retryable()).isTrue();
    assertThat(outcome.reason())
        .contains("AccessDeniedException")
        .contains(
            "not authorized to perform: ecs:RunTask on resource: "
                + FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, 1))
        .contains("IAM denied the call");
    assertThat(fake.count(RUN_TASK)).as("not retried by the SDK").isEqualTo(1);
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void
      a_deregistered_revision_named_by_number_is_a_retryable_not_started_and_the_family_runs_the_new_one() {
    int next = fake.registerRevision(FakeEcs.TASK_DEFINITION);
    fake.deregister(FakeEcs.TASK_DEFINITION, 1);
    EcsSettings pinned =
        new EcsSettings(
            CLUSTER,
            FakeEcs.TASK_DEFINITION + ":1",
            SETTINGS.subnets(),
            SETTINGS.securityGroups(),
            false,
            "worker");

    LaunchOutcome.NotStarted outcome =
        notStarted(new EcsWorkerPlatform(client, pinned).launch(aLaunch()));
    LaunchOutcome byFamily = platform.launch(aLaunch());

    assertThat(outcome.retryable()).isTrue();
    assertThat(outcome.reason())
        .contains("InvalidParameterException: TaskDefinition is inactive")
        .contains("set BUILDQUEUE_TASK_DEFINITION to the family");
    assertThat(byFamily).isInstanceOf(LaunchOutcome.Started.class);
    assertThat(fake.tasks())
        .singleElement()
        .satisfies(
            t ->
                assertThat(t.taskDefinitionArn())
                    .isEqualTo(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, next)));
  }

  @Test
  void a_missing_service_linked_role_is_a_retryable_not_started_naming_the_command() {
    fake.withoutServiceLinkedRole();

    LaunchOutcome.NotStarted outcome = notStarted(platform.launch(aLaunch()));

    assertThat(outcome.retryable()).isTrue();
    assertThat(outcome.reason())
        .contains("Unable to assume the service linked role")
        .contains("aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com");
    fake.createServiceLinkedRole();
    assertThat(platform.launch(aLaunch())).isInstanceOf(LaunchOutcome.Started.class);
  }

  @Test
  void an_unknown_task_definition_is_a_final_not_started() {
    EcsSettings wrong =
        new EcsSettings(
            CLUSTER, "no-such-family:1", List.of("subnet-0aaa"), List.of(), false, "worker");

    LaunchOutcome.NotStarted outcome =
        notStarted(new EcsWorkerPlatform(client, wrong).launch(aLaunch()));

    assertThat(outcome.retryable()).isFalse();
    assertThat(outcome.reason())
        .isEqualTo("ECS refused RunTask: ClientException: TaskDefinition not found.");
  }

  @Test
  void a_container_name_not_in_the_task_definition_is_a_final_not_started() {
    EcsSettings wrong =
        new EcsSettings(
            CLUSTER, "buildqueue-worker", List.of("subnet-0aaa"), List.of(), false, "app");

    LaunchOutcome.NotStarted outcome =
        notStarted(new EcsWorkerPlatform(client, wrong).launch(aLaunch()));

    assertThat(outcome.retryable()).isFalse();
    assertThat(outcome.reason())
        .contains("InvalidParameterException")
        .contains("container named app");
  }

  @ParameterizedTest
  @CsvSource({"500, ServerException", "503, ServiceUnavailableException"})
  void a_server_error_is_unknown_after_the_sdk_retried_it(int status, String type) {
    fake.answerAlways(
        RUN_TASK, Answer.error(status, type, "Service Unavailable. Please try again later."));

    LaunchOutcome outcome = platform.launch(aLaunch());

    assertThat(outcome).isInstanceOf(LaunchOutcome.Unknown.class);
    assertThat(((LaunchOutcome.Unknown) outcome).reason()).contains(type);
    assertThat(fake.count(RUN_TASK)).isEqualTo(2);
  }

  @Test
  void the_sdk_retry_of_a_server_error_after_the_task_started_finds_that_task() {
    fake.answer(RUN_TASK, Answer.serverError().afterWork());

    LaunchOutcome outcome = platform.launch(aLaunch());

    assertThat(fake.tasks()).hasSize(1);
    assertThat(outcome).isEqualTo(new LaunchOutcome.Started(fake.tasks().get(0).arn()));
    assertThat(fake.count(RUN_TASK)).isEqualTo(2);
  }

  @Test
  void relaunching_after_an_unknown_server_error_returns_the_task_it_started() {
    fake.answer(RUN_TASK, Answer.serverError().afterWork(), Answer.serverError());
    WorkerLaunch launch = aLaunch();
    assertThat(platform.launch(launch)).isInstanceOf(LaunchOutcome.Unknown.class);

    LaunchOutcome again = platform.launch(launch);

    assertThat(fake.tasks()).hasSize(1);
    assertThat(again).isEqualTo(new LaunchOutcome.Started(fake.tasks().get(0).arn()));
  }

  @Test
  void a_timeout_is_unknown_and_a_relaunch_learns_the_task_it_started() {
    fake.answerAlways(RUN_TASK, Answer.delay(Duration.ofSeconds(3)));
    WorkerLaunch launch = aLaunch();

    LaunchOutcome outcome = platform.launch(launch);

    assertThat(outcome).isInstanceOf(LaunchOutcome.Unknown.class);
    assertThat(((LaunchOutcome.Unknown) outcome).reason()).containsIgnoringCase("time");
    fake.answerNormally(RUN_TASK);
    assertThat(platform.launch(launch))
        .isEqualTo(new LaunchOutcome.Started(fake.tasks().get(0).arn()));
    assertThat(fake.tasks()).hasSize(1);
  }

  @Test
  void a_dropped_connection_is_unknown() {
    fake.answerAlways(RUN_TASK, Answer.drop());

    LaunchOutcome outcome = platform.launch(aLaunch());

    assertThat(outcome).isInstanceOf(LaunchOutcome.Unknown.class);
    assertThat(((LaunchOutcome.Unknown) outcome).reason()).contains("SdkClientException");
    assertThat(fake.replies(RUN_TASK)).isEmpty();
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void throttling_is_unknown_not_a_definite_failure() {
    fake.answerAlways(RUN_TASK, Answer.throttled());

    LaunchOutcome outcome = platform.launch(aLaunch());

    assertThat(outcome).isInstanceOf(LaunchOutcome.Unknown.class);
    assertThat(((LaunchOutcome.Unknown) outcome).reason())
        .contains("ThrottlingException")
        .contains("Rate exceeded");
    assertThat(((LaunchOutcome.Unknown) outcome).throttled())
        .as("a tick stops launching on it")
        .isTrue();
    assertThat(fake.count(RUN_TASK)).isEqualTo(2);
  }

  @Test
  void
      request_limit_exceeded_under_an_invalid_parameter_is_throttling_not_a_configuration_failure() {
    fake.answerAlways(RUN_TASK, Answer.requestLimitExceeded());

    LaunchOutcome outcome = platform.launch(aLaunch());

    assertThat(outcome).isInstanceOf(LaunchOutcome.Unknown.class);
    assertThat(((LaunchOutcome.Unknown) outcome).reason())
        .contains("InvalidParameterException")
        .contains("Request limit exceeded");
    assertThat(((LaunchOutcome.Unknown) outcome).throttled()).isTrue();
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_conflict_is_started_with_the_arn_from_its_resource_ids() {
    WorkerLaunch launch = aLaunch();
    LaunchOutcome first = platform.launch(launch);
    int revision = fake.registerRevision(FakeEcs.TASK_DEFINITION);
    EcsSettings redeployed =
        new EcsSettings(
            CLUSTER,
            FakeEcs.TASK_DEFINITION + ":" + revision,
            SETTINGS.subnets(),
            SETTINGS.securityGroups(),
            false,
            "worker");

    LaunchOutcome second = new EcsWorkerPlatform(client, redeployed).launch(launch);

    FakeEcs.Reply conflict = fake.replies(RUN_TASK).get(1);
    assertThat(conflict.status()).isEqualTo(400);
    assertThat(conflict.errorType()).isEqualTo("ConflictException");
    assertThat(conflict.body().path("resourceIds").get(0).asText())
        .isEqualTo(((LaunchOutcome.Started) first).taskId());
    assertThat(fake.tasks()).hasSize(1);
    assertThat(second).isEqualTo(first);
  }

  @Test
  void relaunching_with_the_same_token_returns_the_same_task() {
    WorkerLaunch launch = aLaunch();

    LaunchOutcome first = platform.launch(launch);
    LaunchOutcome second = platform.launch(launch);

    assertThat(second).isEqualTo(first);
    assertThat(fake.tasks()).hasSize(1);
    assertThat(fake.requests(RUN_TASK))
        .hasSize(2)
        .allSatisfy(
            r ->
                assertThat(r.body().path("clientToken").asText())
                    .isEqualTo(launch.token().toString()));
  }

  @Test
  void two_workers_get_two_tasks() {
    LaunchOutcome a = platform.launch(aLaunch());
    LaunchOutcome b =
        platform.launch(new WorkerLaunch(43, UUID.randomUUID(), "shared", "shared#2"));

    assertThat(a).isNotEqualTo(b);
    assertThat(fake.tasks()).hasSize(2);
  }

  // ---- Spot -------------------------------------------------------------------------------

  static WorkerLaunch aLaunchOn(Capacity capacity) {
    return aLaunch().on(capacity);
  }

  @Test
  void a_spot_worker_runs_through_a_fargate_spot_strategy_without_a_launch_type() {
    LaunchOutcome outcome = platform.launch(aLaunchOn(Capacity.SPOT));

    assertThat(outcome).isInstanceOf(LaunchOutcome.Started.class);
    assertThat(((LaunchOutcome.Started) outcome).ranOn()).isNull();
    JsonNode body = fake.requests(RUN_TASK).get(0).body();
    assertThat(body.has("launchType")).isFalse();
    assertThat(body.path("capacityProviderStrategy").toString())
        .isEqualTo("[{\"capacityProvider\":\"FARGATE_SPOT\",\"weight\":1}]");
    assertThat(fake.capacityProviderOf(((LaunchOutcome.Started) outcome).taskId()))
        .isEqualTo("FARGATE_SPOT");
  }

  @Test
  void an_on_demand_worker_keeps_launch_type_fargate() {
    platform.launch(aLaunch());

    JsonNode body = fake.requests(RUN_TASK).get(0).body();
    assertThat(body.path("launchType").asText()).isEqualTo("FARGATE");
    assertThat(body.has("capacityProviderStrategy")).isFalse();
  }

  @Test
  void without_spot_capacity_spot_then_on_demand_falls_back_to_on_demand_idempotently() {
    fake.spotCapacity(false);
    WorkerLaunch launch = aLaunchOn(Capacity.SPOT_THEN_ON_DEMAND);

    LaunchOutcome first = platform.launch(launch);
    LaunchOutcome again = platform.launch(launch);

    assertThat(first).isInstanceOf(LaunchOutcome.Started.class);
    LaunchOutcome.Started started = (LaunchOutcome.Started) first;
    assertThat(started.ranOn()).isEqualTo(Capacity.ON_DEMAND);
    assertThat(fake.capacityProviderOf(started.taskId())).isNull();
    assertThat(again).isEqualTo(first);
    assertThat(fake.tasks()).hasSize(1);
    assertThat(fake.requests(RUN_TASK))
        .extracting(r -> r.body().path("launchType").asText("strategy"))
        .containsExactly("strategy", "FARGATE", "strategy", "FARGATE");
    assertThat(fake.requests(RUN_TASK).get(1).body().path("clientToken").asText())
        .isEqualTo(EcsWorkerPlatform.onDemandToken(launch))
        .isNotEqualTo(launch.token().toString());
    assertThat(fake.task(started.taskId()).environment(FakeEcs.CONTAINER))
        .containsEntry(EcsWorkerPlatform.WORKER_TOKEN_VARIABLE, launch.token().toString());
  }

  @Test
  void without_spot_capacity_a_spot_worker_is_a_retryable_launch_failure() {
    fake.spotCapacity(false);

    LaunchOutcome.NotStarted outcome = notStarted(platform.launch(aLaunchOn(Capacity.SPOT)));

    assertThat(outcome.retryable()).isTrue();
    assertThat(outcome.reason()).contains(FakeEcs.NO_CAPACITY);
    assertThat(fake.requests(RUN_TASK)).hasSize(1);
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_reclaimed_task_is_stopped_evidence_of_a_reclaim() {
    LaunchOutcome.Started started =
        (LaunchOutcome.Started) platform.launch(aLaunchOn(Capacity.SPOT));
    fake.setLastStatus(started.taskId(), "RUNNING");
    fake.reclaim(started.taskId());

    TaskState state = platform.check(List.of(started.taskId())).get(started.taskId());

    assertThat(state).isInstanceOf(TaskState.Stopped.class);
    assertThat(((TaskState.Stopped) state).reason())
        .startsWith("SpotInterruption: Your Spot Task was interrupted.");
    assertThat(((TaskState.Stopped) state).reclaimed()).isTrue();
  }

  // ---- check ------------------------------------------------------------------------------

  @Test
  void check_describes_250_tasks_in_three_calls_of_at_most_100() {
    List<String> arns = new ArrayList<>();
    for (int i = 0; i < 250; i++) {
      arns.add(fake.addTask(CLUSTER, "RUNNING"));
    }

    Map<String, TaskState> states = platform.check(arns);

    assertThat(fake.requests(DESCRIBE_TASKS))
        .extracting(r -> r.body().path("tasks").size())
        .containsExactly(100, 100, 50);
    assertThat(fake.requests(DESCRIBE_TASKS))
        .allSatisfy(r -> assertThat(r.body().path("cluster").asText()).isEqualTo(CLUSTER));
    assertThat(states)
        .hasSize(250)
        .containsOnlyKeys(arns)
        .allSatisfy((arn, s) -> assertThat(s).isEqualTo(new TaskState.Running()));
  }

  /**
   * A check that meets DescribeTasks' rate (a bucket of 100 calls, refilled at 20 a second; here
   * all but one call of it already spent by other checks): the batch past it is throttled, and a
   * throttled batch is no evidence either way, neither stopped nor missing, so its workers keep
   * their slots until a later check; it says it was throttled, and no further batch is sent.
   */
  @Test
  void
      a_check_past_the_describe_tasks_rate_gives_no_evidence_for_the_throttled_batch_and_sends_no_more() {
    java.time.Instant now = java.time.Instant.parse("2026-12-01T10:00:00Z");
    fake.useClock(() -> now);
    EcsClient once = fake.newClient(fake.clientSettings().withMaxAttempts(1));
    EcsWorkerPlatform checking = new EcsWorkerPlatform(once, SETTINGS);
    String other = fake.addTask(CLUSTER, "RUNNING");
    for (int i = 0; i < 99; i++) {
      checking.check(List.of(other));
    }
    List<String> arns = new ArrayList<>();
    for (int i = 0; i < 3 * EcsWorkerPlatform.DESCRIBE_BATCH; i++) {
      String arn = fake.addTask(CLUSTER, "RUNNING");
      fake.stopTask(arn, "EssentialContainerExited", "Essential container in task exited", 0, null);
      arns.add(arn);
    }

    Map<String, TaskState> states = checking.check(arns);
    once.close();

    assertThat(fake.replies(DESCRIBE_TASKS))
        .extracting(FakeEcs.Reply::errorType)
        .filteredOn(java.util.Objects::nonNull)
        .containsExactly("ThrottlingException");
    assertThat(arns.subList(0, EcsWorkerPlatform.DESCRIBE_BATCH))
        .allSatisfy(arn -> assertThat(states.get(arn)).isInstanceOf(TaskState.Stopped.class));
    assertThat(arns.subList(EcsWorkerPlatform.DESCRIBE_BATCH, arns.size()))
        .allSatisfy(
            arn ->
                assertThat(states.get(arn))
                    .isInstanceOfSatisfying(
                        TaskState.Unanswered.class, u -> assertThat(u.throttled()).isTrue()));
    assertThat(fake.requests(DESCRIBE_TASKS))
        .as("99 before, the one answered, the one throttled")
        .hasSize(101);
  }

  @Test
  void check_maps_stopped_to_evidence_other_statuses_to_running_and_unknown_tasks_to_missing() {
    String provisioning = fake.addTask(CLUSTER, "PROVISIONING");
    String running = fake.addTask(CLUSTER, "RUNNING");
    String deprovisioning = fake.addTask(CLUSTER, "DEPROVISIONING");
    String stopped = fake.addTask(CLUSTER, "RUNNING");
    fake.stopTask(
        stopped, "EssentialContainerExited", "Essential container in task exited", 0, null);
    String forgotten = fake.addTask(CLUSTER, "STOPPED");
    fake.forget(forgotten);
    String neverExisted =
        "arn:aws:ecs:eu-west-1:111122223333:task/queue-workers/ffffffffffffffffffffffffffffffff";

    Map<String, TaskState> states =
        platform.check(
            List.of(provisioning, running, deprovisioning, stopped, forgotten, neverExisted));

    assertThat(states)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                provisioning, new TaskState.Running(),
                running, new TaskState.Running(),
                deprovisioning, new TaskState.Running(),
                stopped,
                    new TaskState.Stopped(
                        "EssentialContainerExited: Essential container in task exited; container worker exited 0"),
                forgotten, new TaskState.Missing(),
                neverExisted, new TaskState.Missing()));
  }

  @Test
  void a_stopped_reason_names_exit_codes_and_container_reasons_but_never_the_overrides() {
    WorkerLaunch launch = aLaunch();
    String arn = ((LaunchOutcome.Started) platform.launch(launch)).taskId();
    fake.stopTask(
        arn,
        "EssentialContainerExited",
        "Essential container in task exited",
        137,
        "OutOfMemoryError: Container killed due to memory usage");

    TaskState state = platform.check(List.of(arn)).get(arn);

    assertThat(state)
        .isEqualTo(
            new TaskState.Stopped(
                "EssentialContainerExited: Essential container in task exited; "
                    + "container worker exited 137: OutOfMemoryError: Container killed due to memory usage"));
    assertThat(((TaskState.Stopped) state).reason()).doesNotContain(launch.token().toString());
  }

  @Test
  void a_task_that_failed_to_start_without_containers_is_stopped_with_its_reason() {
    String arn = fake.addTask(CLUSTER, "PROVISIONING");
    fake.stopTask(
        arn,
        "TaskFailedToStart",
        "CannotPullContainerError: pull image manifest has been retried 5 time(s)",
        null,
        null);

    assertThat(platform.check(List.of(arn)))
        .containsEntry(
            arn,
            new TaskState.Stopped(
                "TaskFailedToStart: CannotPullContainerError: pull image manifest has been retried 5 time(s)"));
  }

  @Test
  void a_failed_describe_gives_no_evidence() {
    String arn = fake.addTask(CLUSTER, "STOPPED");
    fake.answerAlways(DESCRIBE_TASKS, Answer.serverError());

    assertThat(platform.check(List.of(arn)))
        .hasEntrySatisfying(
            arn,
            s ->
                assertThat(s)
                    .isInstanceOfSatisfying(
                        TaskState.Unanswered.class,
                        u -> {
                          assertThat(u.throttled()).isFalse();
                          assertThat(u.reason()).contains("ServerException");
                        }));
  }

  @Test
  void the_tick_is_told_ecs_default_request_rates_the_same_the_ecs_fake_enforces() {
    assertThat(platform.callRates().changes())
        .isEqualTo(new buildqueue.platform.CallRates.Rate(20, 20));
    assertThat(platform.callRates().checks())
        .isEqualTo(new buildqueue.platform.CallRates.Rate(100, 20));
    assertThat(platform.callRates()).isEqualTo(FakeEcs.enforcedRates());
  }

  @Test
  void a_deleted_cluster_has_no_tasks() {
    String arn = fake.addTask(CLUSTER, "RUNNING");
    fake.answerAlways(
        DESCRIBE_TASKS, Answer.error(400, "ClusterNotFoundException", "Cluster not found."));

    assertThat(platform.check(List.of(arn)))
        .containsExactly(Map.entry(arn, new TaskState.Missing()));
  }

  @Test
  void only_task_arns_of_the_configured_cluster_can_be_checked() {
    String ours = fake.addTask(CLUSTER, "RUNNING");
    String theirs = fake.addTask("other-cluster", "RUNNING");
    EcsWorkerPlatform byArn =
        new EcsWorkerPlatform(
            client,
            new EcsSettings(
                FakeEcs.clusterArn(CLUSTER),
                "buildqueue-worker",
                List.of("subnet-0aaa"),
                List.of(),
                false,
                "worker"));

    assertThat(platform.canCheck(ours)).isTrue();
    assertThat(byArn.canCheck(ours)).isTrue();
    assertThat(platform.canCheck(theirs)).isFalse();
    assertThat(byArn.canCheck(theirs)).isFalse();
    assertThat(byArn.canCheck(ours.replace(":111122223333:", ":999999999999:"))).isFalse();
    assertThat(platform.canCheck("inproc-1")).isFalse();
    assertThat(platform.canCheck(null)).isFalse();
    assertThat(platform.canCheck("arn:aws:ecs:eu-west-1:111122223333:task/0123456789abcdef"))
        .isFalse();
  }

  // ---- stop -------------------------------------------------------------------------------

  @Test
  void stop_sends_stop_task_with_the_reason_cut_to_255_characters() {
    String arn = ((LaunchOutcome.Started) platform.launch(aLaunch())).taskId();
    String longReason = "job 7 cancelled before its worker started; " + "x".repeat(300);

    platform.stop(arn, longReason);

    JsonNode body = fake.last(STOP_TASK);
    assertThat(body.path("cluster").asText()).isEqualTo(CLUSTER);
    assertThat(body.path("task").asText()).isEqualTo(arn);
    assertThat(body.path("reason").asText()).isEqualTo(longReason.substring(0, 255));
    assertThat(fake.task(arn).lastStatus()).isEqualTo("STOPPED");
    assertThat(fake.task(arn).stopCode()).isEqualTo("UserInitiated");
  }

  @Test
  void stop_swallows_errors() {
    String arn = fake.addTask(CLUSTER, "RUNNING");
    fake.answer(
        STOP_TASK,
        Answer.serverError(),
        Answer.serverError(),
        Answer.error(400, "AccessDeniedException", "no"));

    assertThatCode(() -> platform.stop(arn, "outlived its lease")).doesNotThrowAnyException();
    assertThatCode(() -> platform.stop(arn, "outlived its lease")).doesNotThrowAnyException();
    assertThatCode(
            () ->
                platform.stop("arn:aws:ecs:eu-west-1:111122223333:task/queue-workers/nope", "gone"))
        .doesNotThrowAnyException();
    assertThat(fake.count(STOP_TASK)).isEqualTo(4);
    assertThat(fake.task(arn).lastStatus()).isEqualTo("RUNNING");
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

  private static List<String> texts(JsonNode array) {
    return StreamSupport.stream(array.spliterator(), false).map(JsonNode::asText).toList();
  }
}
