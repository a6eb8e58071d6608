package buildqueue.aws.fake;

import static buildqueue.aws.fake.FakeEcs.Operation.DESCRIBE_TASKS;
import static buildqueue.aws.fake.FakeEcs.Operation.RUN_TASK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.ecs.EcsClient;
import software.amazon.awssdk.services.ecs.model.AccessDeniedException;
import software.amazon.awssdk.services.ecs.model.ClientException;
import software.amazon.awssdk.services.ecs.model.ConflictException;
import software.amazon.awssdk.services.ecs.model.EcsException;
import software.amazon.awssdk.services.ecs.model.InvalidParameterException;
import software.amazon.awssdk.services.ecs.model.LaunchType;
import software.amazon.awssdk.services.ecs.model.RunTaskRequest;
import software.amazon.awssdk.services.ecs.model.RunTaskResponse;
import software.amazon.awssdk.services.ecs.model.Task;
import software.amazon.awssdk.services.ecs.model.TaskStopCode;

/** The fake's wire behaviour as the plain SDK client sees it, so other tests can rely on it. */
class FakeEcsTest {
  FakeEcs fake;
  EcsClient ecs;

  @BeforeEach
  void start() {
    fake = FakeEcs.start();
    ecs = fake.newClient();
  }

  @AfterEach
  void stop() {
    ecs.close();
    fake.close();
  }

  RunTaskRequest.Builder runTask(String token) {
    return RunTaskRequest.builder()
        .cluster("c")
        .taskDefinition(FakeEcs.TASK_DEFINITION)
        .launchType(LaunchType.FARGATE)
        .clientToken(token)
        .networkConfiguration(n -> n.awsvpcConfiguration(v -> v.subnets("subnet-1")));
  }

  @Test
  void requests_are_signed_json_1_1_posts_to_the_root() {
    ecs.runTask(runTask("t1").build());

    FakeEcs.Request r = fake.requests(RUN_TASK).get(0);
    assertThat(r.header("X-Amz-Target")).isEqualTo(FakeEcs.TARGET_PREFIX + "RunTask");
    assertThat(r.header("Content-Type")).isEqualTo(FakeEcs.CONTENT_TYPE);
    assertThat(r.header("Authorization"))
        .startsWith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE/")
        .contains("/eu-west-1/ecs/aws4_request");
  }

  @Test
  void run_task_answers_a_provisioning_task_the_sdk_parses() {
    RunTaskResponse response = ecs.runTask(runTask("t1").startedBy("bq-1").build());

    Task task = response.tasks().get(0);
    assertThat(task.lastStatus()).isEqualTo("PROVISIONING");
    assertThat(task.startedBy()).isEqualTo("bq-1");
    assertThat(task.clusterArn()).isEqualTo(FakeEcs.clusterArn("c"));
    assertThat(task.createdAt()).isCloseTo(Instant.now(), within(5, ChronoUnit.SECONDS));
    assertThat(task.containers()).extracting(c -> c.name()).containsExactly(FakeEcs.CONTAINER);
    assertThat(response.failures()).isEmpty();
  }

  @Test
  void the_same_token_with_other_parameters_is_a_conflict_naming_the_first_task() {
    String arn = ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn();

    assertThatThrownBy(() -> ecs.runTask(runTask("t1").startedBy("someone-else").build()))
        .isInstanceOfSatisfying(
            ConflictException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.resourceIds()).containsExactly(arn);
            });
    assertThat(ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn()).isEqualTo(arn);
    assertThat(fake.tasks()).hasSize(1);
  }

  @Test
  void tokens_are_scoped_to_the_cluster() {
    ecs.runTask(runTask("t1").build());
    ecs.runTask(runTask("t1").cluster("other").build());

    assertThat(fake.tasks()).extracting(FakeEcs.TaskView::cluster).containsExactly("c", "other");
  }

  @Test
  void describe_tasks_refuses_more_than_100_tasks() {
    List<String> arns = new ArrayList<>(Collections.nCopies(101, fake.addTask("c", "RUNNING")));

    assertThatThrownBy(() -> ecs.describeTasks(b -> b.cluster("c").tasks(arns)))
        .isInstanceOf(InvalidParameterException.class);
  }

  @Test
  void describe_tasks_only_finds_tasks_of_the_given_cluster() {
    String arn = fake.addTask("c", "RUNNING");

    var response = ecs.describeTasks(b -> b.cluster("other").tasks(arn));

    assertThat(response.tasks()).isEmpty();
    assertThat(response.failures())
        .singleElement()
        .satisfies(f -> assertThat(f.reason()).isEqualTo("MISSING"))
        .satisfies(f -> assertThat(f.arn()).isEqualTo(arn));
  }

  @Test
  void stop_task_stops_the_task_as_user_initiated() {
    String arn = fake.addTask("c", "RUNNING");

    Task task = ecs.stopTask(b -> b.cluster("c").task(arn).reason("enough")).task();

    assertThat(task.lastStatus()).isEqualTo("STOPPED");
    assertThat(task.stopCode()).isEqualTo(TaskStopCode.USER_INITIATED);
    assertThat(task.stoppedReason()).isEqualTo("enough");
    assertThat(ecs.describeTasks(b -> b.cluster("c").tasks(arn)).tasks().get(0).lastStatus())
        .isEqualTo("STOPPED");
  }

  @Test
  void the_limits_ecs_enforces_are_refused_as_invalid_parameters() {
    String arn = fake.addTask("c", "RUNNING");

    assertThatThrownBy(() -> ecs.stopTask(b -> b.cluster("c").task(arn).reason("x".repeat(256))))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> ecs.runTask(runTask("t".repeat(65)).build()))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> ecs.runTask(runTask("t2").startedBy("has spaces").build()))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(
            () ->
                ecs.runTask(
                    runTask("t3")
                        .overrides(
                            o ->
                                o.containerOverrides(
                                    c -> c.name(FakeEcs.CONTAINER).command("x".repeat(9000))))
                        .build()))
        .isInstanceOf(InvalidParameterException.class)
        .hasMessageContaining("8192");
    assertThat(fake.tasks()).hasSize(1);
  }

  @Test
  void scripted_answers_are_used_in_order_then_normal_ones() {
    fake.answer(DESCRIBE_TASKS, FakeEcs.Answer.error(400, "AccessDeniedException", "denied"));
    String arn = fake.addTask("c", "RUNNING");

    assertThatThrownBy(() -> ecs.describeTasks(b -> b.cluster("c").tasks(arn)))
        .isInstanceOfSatisfying(
            EcsException.class,
            e -> assertThat(e.awsErrorDetails().errorCode()).isEqualTo("AccessDeniedException"));
    assertThat(ecs.describeTasks(b -> b.cluster("c").tasks(arn)).tasks()).hasSize(1);
    assertThat(fake.replies(DESCRIBE_TASKS))
        .extracting(FakeEcs.Reply::status)
        .containsExactly(400, 200);
  }

  // ---- task definition revisions, and a deploy's windows -------------------------------------

  @Test
  void run_task_takes_a_family_as_its_latest_active_revision_a_family_and_revision_or_an_arn() {
    int two = fake.registerRevision(FakeEcs.TASK_DEFINITION);
    int three = fake.registerRevision(FakeEcs.TASK_DEFINITION);
    fake.deregister(FakeEcs.TASK_DEFINITION, three);

    String byFamily = ecs.runTask(runTask("t1").build()).tasks().get(0).taskDefinitionArn();
    String byNumber =
        ecs.runTask(runTask("t2").taskDefinition(FakeEcs.TASK_DEFINITION + ":1").build())
            .tasks()
            .get(0)
            .taskDefinitionArn();
    String byArn =
        ecs.runTask(
                runTask("t3")
                    .taskDefinition(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, two))
                    .build())
            .tasks()
            .get(0)
            .taskDefinitionArn();

    assertThat(byFamily)
        .as("latest ACTIVE, not the INACTIVE third")
        .isEqualTo(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, two));
    assertThat(byNumber).isEqualTo(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, 1));
    assertThat(byArn).isEqualTo(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, two));
    assertThatThrownBy(
            () -> ecs.runTask(runTask("t4").taskDefinition(FakeEcs.TASK_DEFINITION + ":9").build()))
        .isInstanceOfSatisfying(
            ClientException.class,
            e ->
                assertThat(e.awsErrorDetails().errorMessage())
                    .isEqualTo("TaskDefinition not found."));
  }

  @Test
  void an_inactive_revision_is_refused_as_ecs_refuses_it_and_starts_nothing() {
    fake.registerRevision(FakeEcs.TASK_DEFINITION);
    fake.deregister(FakeEcs.TASK_DEFINITION, 1);

    assertThatThrownBy(
            () -> ecs.runTask(runTask("t1").taskDefinition(FakeEcs.TASK_DEFINITION + ":1").build()))
        .isInstanceOfSatisfying(
            InvalidParameterException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("InvalidParameterException");
              assertThat(e.awsErrorDetails().errorMessage())
                  .isEqualTo("TaskDefinition is inactive");
            });
    assertThat(fake.replies(RUN_TASK))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.body().path("__type").asText()).isEqualTo("InvalidParameterException");
              assertThat(r.body().path("message").asText()).isEqualTo("TaskDefinition is inactive");
            });
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_family_with_no_active_revision_left_is_not_found() {
    fake.deregister(FakeEcs.TASK_DEFINITION, 1);

    assertThatThrownBy(() -> ecs.runTask(runTask("t1").build()))
        .isInstanceOf(ClientException.class);
  }

  @Test
  void run_task_is_denied_by_iam_until_the_window_ends_even_for_a_token_whose_task_exists() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    String arn = ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn();
    fake.denyRunTaskUntil(now.get().plusSeconds(30));

    assertThatThrownBy(() -> ecs.runTask(runTask("t2").build()))
        .isInstanceOfSatisfying(
            AccessDeniedException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("AccessDeniedException");
              assertThat(e.awsErrorDetails().errorMessage())
                  .isEqualTo(
                      "User: arn:aws:sts::111122223333:assumed-role/"
                          + "buildqueue-tick-role/buildqueue-tick is not authorized to perform: ecs:RunTask on resource: "
                          + FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, 1)
                          + " because no identity-based policy allows the ecs:RunTask action");
            });
    assertThatThrownBy(() -> ecs.runTask(runTask("t1").build()))
        .as("IAM decides before the token is looked at")
        .isInstanceOf(AccessDeniedException.class);
    now.set(now.get().plusSeconds(30));

    assertThat(ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn()).isEqualTo(arn);
    assertThat(ecs.runTask(runTask("t2").build()).tasks()).hasSize(1);
    assertThat(fake.tasks()).hasSize(2);
  }

  @Test
  void an_account_without_the_ecs_service_linked_role_is_refused_until_it_is_created() {
    fake.withoutServiceLinkedRole();

    assertThatThrownBy(() -> ecs.runTask(runTask("t1").build()))
        .isInstanceOfSatisfying(
            InvalidParameterException.class,
            e ->
                assertThat(e.awsErrorDetails().errorMessage())
                    .isEqualTo(
                        "Unable to assume the service linked role. Please verify that the ECS service linked role exists."));
    assertThat(fake.tasks()).isEmpty();
    fake.createServiceLinkedRole();
    assertThat(ecs.runTask(runTask("t1").build()).tasks()).hasSize(1);
  }

  // ---- client token lifetime ----------------------------------------------------------------

  @Test
  void a_client_token_is_kept_until_an_hour_after_its_task_stopped() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    String arn = ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn();
    now.set(now.get().plus(Duration.ofMinutes(30)));
    fake.stopTask(arn, "EssentialContainerExited", "Essential container in task exited", 0, null);

    now.set(now.get().plus(Duration.ofMinutes(59)));
    assertThat(ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn()).isEqualTo(arn);
    now.set(now.get().plus(Duration.ofMinutes(1)));
    String after = ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn();

    assertThat(after).isNotEqualTo(arn);
    assertThat(fake.tasks()).hasSize(2);
  }

  @Test
  void a_client_token_is_kept_at_most_24_hours_even_while_its_task_runs() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    String arn = ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn();
    fake.setLastStatus(arn, "RUNNING");

    now.set(now.get().plus(Duration.ofHours(24)).minusSeconds(1));
    assertThat(ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn()).isEqualTo(arn);
    now.set(now.get().plusSeconds(1));
    String after = ecs.runTask(runTask("t1").build()).tasks().get(0).taskArn();

    assertThat(after).as("a second task beside a first that still runs").isNotEqualTo(arn);
    assertThat(fake.tasks())
        .extracting(FakeEcs.TaskView::lastStatus)
        .containsExactly("RUNNING", "PROVISIONING");
  }

  @Test
  void a_repeat_of_a_request_that_got_failures_replays_the_failures_and_starts_nothing() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    fake.answer(RUN_TASK, FakeEcs.Answer.failure("RESOURCE:MEMORY"));
    ecs.runTask(runTask("t1").build());

    RunTaskResponse repeat = ecs.runTask(runTask("t1").build());

    assertThat(repeat.tasks()).isEmpty();
    assertThat(repeat.failures())
        .singleElement()
        .satisfies(f -> assertThat(f.reason()).isEqualTo("RESOURCE:MEMORY"));
    assertThat(fake.tasks()).isEmpty();
    now.set(now.get().plus(Duration.ofHours(1)));
    assertThat(ecs.runTask(runTask("t1").build()).tasks()).hasSize(1);
  }

  // ---- request rates ---------------------------------------------------------------------------

  @Test
  void fargate_run_task_calls_are_throttled_past_20_a_second_and_refill_at_20_a_second() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    EcsClient once = onceClient();
    for (int i = 0; i < 20; i++) {
      once.runTask(runTask("burst-" + i).build());
    }

    assertThatThrownBy(() -> once.runTask(runTask("burst-20").build()))
        .satisfies(FakeEcsTest::isThrottling);
    now.set(now.get().plusMillis(500));
    for (int i = 21; i < 31; i++) {
      once.runTask(runTask("burst-" + i).build());
    }
    assertThatThrownBy(() -> once.runTask(runTask("burst-31").build()))
        .satisfies(FakeEcsTest::isThrottling);
    assertThat(fake.tasks()).hasSize(30);
    once.close();
  }

  @Test
  void stop_task_and_run_task_share_one_bucket_of_100_refilled_at_40_a_second() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    EcsClient once = onceClient();
    String arn = fake.addTask("c", "RUNNING");
    for (int i = 0; i < 100; i++) {
      once.stopTask(b -> b.cluster("c").task(arn));
    }

    assertThatThrownBy(() -> once.stopTask(b -> b.cluster("c").task(arn)))
        .satisfies(FakeEcsTest::isThrottling);
    assertThatThrownBy(() -> once.runTask(runTask("t1").build()))
        .satisfies(FakeEcsTest::isThrottling);
    assertThat(once.describeTasks(b -> b.cluster("c").tasks(arn)).tasks())
        .as("reads have their own bucket")
        .hasSize(1);
    now.set(now.get().plusMillis(30));
    once.runTask(runTask("t1").build());
    assertThatThrownBy(() -> once.runTask(runTask("t2").build()))
        .satisfies(FakeEcsTest::isThrottling);
    once.close();
  }

  @Test
  void describe_tasks_has_its_own_bucket_of_100_refilled_at_20_a_second() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    EcsClient once = onceClient();
    String arn = fake.addTask("c", "RUNNING");
    for (int i = 0; i < 100; i++) {
      once.describeTasks(b -> b.cluster("c").tasks(arn));
    }

    assertThatThrownBy(() -> once.describeTasks(b -> b.cluster("c").tasks(arn)))
        .satisfies(FakeEcsTest::isThrottling);
    once.runTask(runTask("t1").build());
    now.set(now.get().plusMillis(100));
    once.describeTasks(b -> b.cluster("c").tasks(arn));
    once.describeTasks(b -> b.cluster("c").tasks(arn));
    assertThatThrownBy(() -> once.describeTasks(b -> b.cluster("c").tasks(arn)))
        .satisfies(FakeEcsTest::isThrottling);
    once.close();
  }

  @Test
  void fargate_launches_more_than_100_tasks_at_once_only_at_20_a_second() {
    AtomicReference<Instant> now = clockAt("2026-12-01T10:00:00Z");
    EcsClient once = onceClient();
    for (int i = 0; i < 10; i++) {
      once.runTask(runTask("ten-" + i).count(10).build());
    }

    assertThatThrownBy(() -> once.runTask(runTask("ten-10").count(1).build()))
        .satisfies(FakeEcsTest::isThrottling);
    assertThat(once.runTask(runTask("ten-0").count(10).build()).tasks())
        .as("a repeat launches nothing")
        .hasSize(10);
    now.set(now.get().plusMillis(250));
    once.runTask(runTask("five").count(5).build());
    assertThat(fake.tasks()).hasSize(105);
    once.close();
  }

  /** The fake's time, settable, starting at {@code start}. */
  AtomicReference<Instant> clockAt(String start) {
    AtomicReference<Instant> now = new AtomicReference<>(Instant.parse(start));
    fake.useClock(now::get);
    return now;
  }

  /** A client that does not retry, so each call is one request against the buckets. */
  EcsClient onceClient() {
    return fake.newClient(fake.clientSettings().withMaxAttempts(1));
  }

  static void isThrottling(Throwable e) {
    assertThat(e)
        .isInstanceOfSatisfying(
            EcsException.class,
            x -> {
              assertThat(x.statusCode()).isEqualTo(400);
              assertThat(x.awsErrorDetails().errorCode()).isEqualTo("ThrottlingException");
              assertThat(x.awsErrorDetails().errorMessage()).isEqualTo("Rate exceeded");
            });
  }

  @Test
  void an_operation_the_fake_does_not_speak_is_refused() {
    assertThatThrownBy(() -> ecs.listTasks(b -> b.cluster("c")))
        .isInstanceOfSatisfying(
            EcsException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("UnknownOperationException");
            });
  }

  RunTaskRequest.Builder runOnSpot(String token) {
    return runTask(token)
        .launchType((String) null)
        .capacityProviderStrategy(p -> p.capacityProvider("FARGATE_SPOT").weight(1));
  }

  @Test
  void a_capacity_provider_strategy_runs_the_task_on_its_provider() {
    Task task = ecs.runTask(runOnSpot("s1").build()).tasks().get(0);

    assertThat(task.capacityProviderName()).isEqualTo("FARGATE_SPOT");
    assertThat(fake.capacityProviderOf(task.taskArn())).isEqualTo("FARGATE_SPOT");
    assertThat(ecs.runTask(runTask("d1").build()).tasks().get(0).capacityProviderName()).isNull();
  }

  @Test
  void a_launch_type_beside_a_capacity_provider_strategy_is_refused_and_starts_nothing() {
    assertThatThrownBy(
            () ->
                ecs.runTask(
                    runTask("s1")
                        .capacityProviderStrategy(p -> p.capacityProvider("FARGATE_SPOT").weight(1))
                        .build()))
        .isInstanceOf(InvalidParameterException.class)
        .hasMessageContaining(
            "Specifying both a launch type and capacity provider strategy is not supported");
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_provider_the_cluster_is_not_associated_with_is_refused() {
    assertThatThrownBy(
            () ->
                ecs.runTask(
                    runOnSpot("s1")
                        .capacityProviderStrategy(p -> p.capacityProvider("MY_ASG").weight(1))
                        .build()))
        .isInstanceOf(InvalidParameterException.class)
        .hasMessageContaining("not associated with the cluster");

    fake.associateCapacityProviders("FARGATE");
    assertThatThrownBy(() -> ecs.runTask(runOnSpot("s2").build()))
        .isInstanceOf(InvalidParameterException.class)
        .hasMessageContaining("not associated with the cluster");
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_strategy_weight_outside_0_to_1000_is_refused() {
    assertThatThrownBy(
            () ->
                ecs.runTask(
                    runOnSpot("s1")
                        .capacityProviderStrategy(
                            p -> p.capacityProvider("FARGATE_SPOT").weight(1001))
                        .build()))
        .isInstanceOf(InvalidParameterException.class)
        .hasMessageContaining("between 0 and 1000");
  }

  @Test
  void without_spot_capacity_a_spot_run_task_answers_a_failure_and_on_demand_still_runs() {
    fake.spotCapacity(false);

    RunTaskResponse spot = ecs.runTask(runOnSpot("s1").build());
    RunTaskResponse again = ecs.runTask(runOnSpot("s1").build());
    RunTaskResponse onDemand = ecs.runTask(runTask("d1").build());

    assertThat(spot.tasks()).isEmpty();
    assertThat(spot.failures()).extracting(f -> f.reason()).containsExactly(FakeEcs.NO_CAPACITY);
    assertThat(again.failures()).as("the token's first answer, replayed").hasSize(1);
    assertThat(onDemand.tasks()).hasSize(1);
    assertThat(fake.tasks()).hasSize(1);
  }

  @Test
  void a_reclaim_sends_sigterm_then_stops_the_task_with_aws_stop_code_and_reason() {
    String arn = ecs.runTask(runOnSpot("s1").startedBy("bq-7").build()).tasks().get(0).taskArn();
    fake.setLastStatus(arn, "RUNNING");
    List<String> warned = new ArrayList<>();
    fake.onSigterm(
        t -> warned.add(t.arn() + " " + t.lastStatus() + " desired " + t.desiredStatus()));

    com.fasterxml.jackson.databind.node.ObjectNode event = fake.reclaim(arn);

    assertThat(warned).containsExactly(arn + " RUNNING desired STOPPED");
    Task task = ecs.describeTasks(b -> b.cluster("c").tasks(arn)).tasks().get(0);
    assertThat(task.lastStatus()).isEqualTo("STOPPED");
    assertThat(task.stopCode()).isEqualTo(TaskStopCode.SPOT_INTERRUPTION);
    assertThat(task.stoppedReason()).isEqualTo("Your Spot Task was interrupted.");
    assertThat(task.containers().get(0).exitCode()).isEqualTo(143);
    assertThat(event.path("detail-type").asText()).isEqualTo("ECS Task State Change");
    assertThat(event.path("source").asText()).isEqualTo("aws.ecs");
    assertThat(event.path("detail").path("stopCode").asText()).isEqualTo("SpotInterruption");
    assertThat(event.path("detail").path("lastStatus").asText()).isEqualTo("STOPPED");
    assertThat(event.path("detail").path("capacityProviderName").asText())
        .isEqualTo("FARGATE_SPOT");
    assertThat(event.path("detail").path("startedBy").asText()).isEqualTo("bq-7");
  }

  @Test
  void only_a_live_spot_task_can_be_reclaimed() {
    String arn = ecs.runTask(runTask("d1").build()).tasks().get(0).taskArn();

    assertThatThrownBy(() -> fake.reclaim(arn))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("FARGATE_SPOT");
  }
}
