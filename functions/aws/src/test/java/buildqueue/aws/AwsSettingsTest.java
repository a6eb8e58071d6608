package buildqueue.aws;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.kinds.KindCatalogueException;
import buildqueue.platform.Capacity;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AwsSettingsTest {
  private static Map<String, String> queueFunctionEnv() {
    Map<String, String> env = new HashMap<>();
    env.put("AWS_REGION", "eu-west-1");
    env.put(AwsSettings.DB_CLUSTER_ARN, "arn:aws:rds:eu-west-1:111122223333:cluster:buildqueue");
    env.put(
        AwsSettings.DB_SECRET_ARN,
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:bq-AbCdEf");
    env.put(AwsSettings.ECS_CLUSTER, "buildqueue-workers");
    env.put(AwsSettings.TASK_DEFINITION, "buildqueue-worker:7");
    env.put(AwsSettings.SUBNETS, "subnet-1, subnet-2");
    env.put(AwsSettings.KINDS_FILE, AwsSettings.ENQUEUE_KINDS_FILE);
    return env;
  }

  @Test
  void a_queue_function_reads_its_settings_with_documented_defaults() {
    AwsSettings s = AwsSettings.load(Component.TICK, queueFunctionEnv()::get);

    assertThat(s.dataApi().database()).isEqualTo("buildqueue");
    assertThat(s.ecs().subnets()).containsExactly("subnet-1", "subnet-2");
    assertThat(s.ecs().securityGroups()).isEmpty();
    assertThat(s.ecs().assignPublicIp()).isFalse();
    assertThat(s.ecs().containerName()).isEqualTo("worker");
    assertThat(s.eventBus()).isEqualTo("default");
    assertThat(s.metricsNamespace()).isEqualTo("buildqueue");
    assertThat(s.queue().sharedSlots()).isEqualTo(1);
    assertThat(s.queue().workerLifetime()).isEqualTo(Duration.ofMinutes(60));
    assertThat(s.queue().chainWindow()).isEqualTo(Duration.ofMinutes(5));
    assertThat(s.queue().sharedOrder()).isEqualTo(buildqueue.core.QueueConfig.SharedOrder.FAIR);
    assertThat(s.queue().maxQueuedJobs()).isEqualTo(1000);
  }

  private static Map<String, String> withDefaultCapacity(String value) {
    Map<String, String> env = queueFunctionEnv();
    env.put(AwsSettings.DEFAULT_CAPACITY, value);
    return env;
  }

  @Test
  void the_stack_default_capacity_is_on_demand_unless_set_and_a_bad_one_fails_the_start() {
    Map<String, String> spot = withDefaultCapacity("spot-then-on-demand");
    Map<String, String> bad = withDefaultCapacity("Spot");
    Map<String, String> empty = withDefaultCapacity("");

    assertThat(AwsSettings.load(Component.TICK, queueFunctionEnv()::get).defaultCapacity())
        .isEqualTo(Capacity.ON_DEMAND);
    for (Component c : List.of(Component.ENQUEUE, Component.TICK, Component.TASK_STATE_CHANGE)) {
      assertThat(AwsSettings.load(c, spot::get).defaultCapacity())
          .as("%s launches workers", c)
          .isEqualTo(Capacity.SPOT_THEN_ON_DEMAND);
      assertThatThrownBy(() -> AwsSettings.load(c, bad::get))
          .isInstanceOf(BuildQueueException.class)
          .hasMessage(
              AwsSettings.DEFAULT_CAPACITY
                  + " must be one of \"on-demand\", \"spot\", \"spot-then-on-demand\" (the"
                  + " stack parameter DefaultCapacity), was \"Spot\"");
    }
    assertThat(AwsSettings.load(Component.ENQUEUE, empty::get).defaultCapacity())
        .as("an empty variable is an unset one")
        .isEqualTo(Capacity.ON_DEMAND);
  }

  @Test
  void the_shared_lanes_order_and_the_quota_are_settings() {
    Map<String, String> env = queueFunctionEnv();
    env.put(AwsSettings.SHARED_ORDER, "fifo");
    env.put(AwsSettings.MAX_QUEUED_JOBS, "50");
    Map<String, String> order = queueFunctionEnv();
    order.put(AwsSettings.SHARED_ORDER, "lottery");
    Map<String, String> quota = queueFunctionEnv();
    quota.put(AwsSettings.MAX_QUEUED_JOBS, "0");

    AwsSettings s = AwsSettings.load(Component.ENQUEUE, env::get);

    assertThat(s.queue().sharedOrder()).isEqualTo(buildqueue.core.QueueConfig.SharedOrder.FIFO);
    assertThat(s.queue().maxQueuedJobs()).isEqualTo(50);
    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, order::get))
        .hasMessageContaining(AwsSettings.SHARED_ORDER);
    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, quota::get))
        .hasMessageContaining(AwsSettings.MAX_QUEUED_JOBS);
  }

  @Test
  void a_worker_lifetime_whose_lease_would_outlive_the_run_task_client_token_is_refused() {
    Map<String, String> longest = queueFunctionEnv();
    longest.put(AwsSettings.WORKER_LIFETIME_MINUTES, "1375");
    Map<String, String> tooLong = queueFunctionEnv();
    tooLong.put(AwsSettings.WORKER_LIFETIME_MINUTES, "1376");

    assertThat(AwsSettings.load(Component.TICK, longest::get).queue().lease())
        .isEqualTo(AwsSettings.MAX_LEASE);
    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, tooLong::get))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining(AwsSettings.WORKER_LIFETIME_MINUTES)
        .hasMessageContaining("1375 minutes")
        .hasMessageContaining("client token");
  }

  @Test
  void every_missing_required_variable_is_named() {
    for (String name :
        List.of(
            "AWS_REGION",
            AwsSettings.DB_CLUSTER_ARN,
            AwsSettings.DB_SECRET_ARN,
            AwsSettings.ECS_CLUSTER,
            AwsSettings.TASK_DEFINITION,
            AwsSettings.SUBNETS,
            AwsSettings.KINDS_FILE)) {
      Map<String, String> env = queueFunctionEnv();
      env.remove(name);
      assertThatThrownBy(() -> AwsSettings.load(Component.ENQUEUE, env::get))
          .isInstanceOf(BuildQueueException.class)
          .hasMessageContaining(name);
    }
  }

  @Test
  void malformed_values_are_refused_with_the_variable_named() {
    Map<String, String> slots = queueFunctionEnv();
    slots.put(AwsSettings.SHARED_SLOTS, "two");
    Map<String, String> zero = queueFunctionEnv();
    zero.put(AwsSettings.SHARED_SLOTS, "0");
    Map<String, String> ip = queueFunctionEnv();
    ip.put(AwsSettings.ASSIGN_PUBLIC_IP, "maybe");
    Map<String, String> subnets = queueFunctionEnv();
    subnets.put(AwsSettings.SUBNETS, " , ");

    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, slots::get))
        .hasMessageContaining(AwsSettings.SHARED_SLOTS);
    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, zero::get))
        .hasMessageContaining(AwsSettings.SHARED_SLOTS);
    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, ip::get))
        .hasMessageContaining(AwsSettings.ASSIGN_PUBLIC_IP);
    assertThatThrownBy(() -> AwsSettings.load(Component.TICK, subnets::get))
        .hasMessageContaining(AwsSettings.SUBNETS);
  }

  @Test
  void migrate_and_the_secret_rotation_need_only_the_database_and_the_worker_roles_secret() {
    for (Component c : List.of(Component.MIGRATE, Component.WORKER_SECRET_ROTATION)) {
      needsOnlyTheDatabaseAndTheWorkerRolesSecret(c);
    }
  }

  private static void needsOnlyTheDatabaseAndTheWorkerRolesSecret(Component component) {
    Map<String, String> env = new HashMap<>();
    env.put("AWS_REGION", "eu-west-1");
    env.put(AwsSettings.DB_CLUSTER_ARN, "arn:aws:rds:eu-west-1:111122223333:cluster:buildqueue");
    env.put(
        AwsSettings.DB_SECRET_ARN,
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:bq-AbCdEf");
    assertThatThrownBy(() -> AwsSettings.load(component, env::get))
        .hasMessageContaining(AwsSettings.WORKER_DB_SECRET_ARN);
    env.put(
        AwsSettings.WORKER_DB_SECRET_ARN,
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:bq-worker-GhIjKl");

    AwsSettings s = AwsSettings.load(component, env::get);

    assertThat(s.dataApi().clusterArn()).endsWith(":cluster:buildqueue");
    assertThat(s.workerSecretArn()).endsWith(":secret:bq-worker-GhIjKl");
    assertThatThrownBy(s::ecs).hasMessageContaining(component.label() + " does not read");
  }

  @Test
  void a_worker_uses_a_jdbc_url_when_given_and_the_data_api_otherwise() {
    UUID token = UUID.randomUUID();
    Map<String, String> jdbc =
        Map.of(
            AwsSettings.JDBC_URL,
            "jdbc:postgresql://db/bq?password=secret",
            AwsSettings.WORKER_ID,
            "42",
            AwsSettings.WORKER_TOKEN,
            token.toString(),
            AwsSettings.KINDS_FILE,
            AwsSettings.WORKER_KINDS_FILE);
    Map<String, String> dataApi = new HashMap<>(queueFunctionEnv());
    dataApi.put(AwsSettings.WORKER_ID, "42");
    dataApi.put(AwsSettings.WORKER_TOKEN, token.toString());

    AwsSettings viaJdbc = AwsSettings.load(Component.WORKER, jdbc::get);
    AwsSettings viaDataApi = AwsSettings.load(Component.WORKER, dataApi::get);

    assertThat(viaJdbc.database()).isInstanceOf(AwsSettings.Jdbc.class);
    assertThat(viaJdbc.worker()).isEqualTo(new AwsSettings.WorkerIdentity(42, token));
    assertThat(viaDataApi.database()).isInstanceOf(AwsSettings.DataApi.class);
    // Neither the URL's password nor the token reaches a log line through toString.
    assertThat(viaJdbc.toString()).doesNotContain("secret").doesNotContain(token.toString());
  }

  @Test
  void a_malformed_token_is_refused_without_repeating_it() {
    Map<String, String> env =
        Map.of(
            AwsSettings.JDBC_URL,
            "jdbc:postgresql://db/bq",
            AwsSettings.WORKER_ID,
            "42",
            AwsSettings.WORKER_TOKEN,
            "not-a-uuid-but-secret");

    assertThatThrownBy(() -> AwsSettings.load(Component.WORKER, env::get))
        .hasMessageContaining(AwsSettings.WORKER_TOKEN)
        .message()
        .doesNotContain("not-a-uuid-but-secret");
  }

  @Test
  void only_the_tick_reads_the_webhook_delivery_function_and_blank_means_none() {
    String alias = "arn:aws:lambda:eu-west-1:111122223333:function:bq-WebhookDelivery-1a2b:live";
    Map<String, String> env = queueFunctionEnv();
    env.put(AwsSettings.WEBHOOK_FUNCTION, alias);
    Map<String, String> blank = queueFunctionEnv();
    blank.put(AwsSettings.WEBHOOK_FUNCTION, " ");

    assertThat(AwsSettings.load(Component.TICK, env::get).webhookFunction()).contains(alias);
    assertThat(AwsSettings.load(Component.TICK, blank::get).webhookFunction()).isEmpty();
    for (Component c : List.of(Component.ENQUEUE, Component.TASK_STATE_CHANGE)) {
      assertThat(AwsSettings.load(c, env::get).webhookFunction()).as("%s", c).isEmpty();
    }
    // The delivery function itself reads the database's variables, and no ECS or kinds.
    Map<String, String> delivery = new HashMap<>();
    delivery.put("AWS_REGION", "eu-west-1");
    delivery.put(AwsSettings.DB_CLUSTER_ARN, env.get(AwsSettings.DB_CLUSTER_ARN));
    delivery.put(AwsSettings.DB_SECRET_ARN, env.get(AwsSettings.DB_SECRET_ARN));
    AwsSettings s = AwsSettings.load(Component.WEBHOOK_DELIVERY, delivery::get);
    assertThat(s.dataApi().database()).isEqualTo("buildqueue");
    assertThat(s.metricsNamespace()).isEqualTo("buildqueue");
    assertThat(Component.WEBHOOK_DELIVERY.label()).isEqualTo("webhook-delivery");
  }

  @Test
  void the_artifacts_bucket_is_read_by_the_queue_functions_and_the_worker_and_blank_means_none() {
    Map<String, String> env = queueFunctionEnv();
    env.put(AwsSettings.ARTIFACTS_BUCKET, " stack-artifactsbucket-1a2b ");
    Map<String, String> blank = queueFunctionEnv();
    blank.put(AwsSettings.ARTIFACTS_BUCKET, "  ");

    for (Component c : List.of(Component.ENQUEUE, Component.TICK, Component.TASK_STATE_CHANGE)) {
      assertThat(AwsSettings.load(c, env::get).artifactsBucket())
          .as("%s", c)
          .contains("stack-artifactsbucket-1a2b");
      assertThat(AwsSettings.load(c, blank::get).artifactsBucket()).as("%s", c).isEmpty();
      assertThat(AwsSettings.load(c, queueFunctionEnv()::get).artifactsBucket()).isEmpty();
    }
    // A self-hosted worker (JDBC) with a bucket needs the region S3 is in.
    Map<String, String> worker = new HashMap<>();
    worker.put(AwsSettings.JDBC_URL, "jdbc:postgresql://db/buildqueue");
    worker.put(AwsSettings.WORKER_ID, "7");
    worker.put(AwsSettings.WORKER_TOKEN, UUID.randomUUID().toString());
    worker.put(AwsSettings.KINDS_FILE, AwsSettings.WORKER_KINDS_FILE);
    assertThat(AwsSettings.load(Component.WORKER, worker::get).artifactsBucket()).isEmpty();
    worker.put(AwsSettings.ARTIFACTS_BUCKET, "b");
    assertThatThrownBy(() -> AwsSettings.load(Component.WORKER, worker::get))
        .hasMessageContaining(AwsSettings.AWS_REGION);
    worker.put(AwsSettings.AWS_REGION, "eu-west-1");
    AwsSettings withBucket = AwsSettings.load(Component.WORKER, worker::get);
    assertThat(withBucket.artifactsBucket()).contains("b");
    assertThat(withBucket.region()).isEqualTo("eu-west-1");
  }

  @Test
  void the_parts_that_launch_or_run_jobs_read_the_catalogue_path_and_the_others_do_not() {
    Map<String, String> relative = queueFunctionEnv();
    relative.put(AwsSettings.KINDS_FILE, "kinds.json");

    assertThat(AwsSettings.load(Component.ENQUEUE, queueFunctionEnv()::get).kindsFile())
        .isEqualTo(Path.of(AwsSettings.ENQUEUE_KINDS_FILE));
    assertThatThrownBy(() -> AwsSettings.load(Component.ENQUEUE, relative::get))
        .hasMessageContaining(AwsSettings.KINDS_FILE)
        .hasMessageContaining("absolute path");
    // The tick and the stop handler launch workers on their kinds' capacity.
    assertThat(AwsSettings.load(Component.TICK, queueFunctionEnv()::get).kindsFile())
        .isEqualTo(Path.of(AwsSettings.ENQUEUE_KINDS_FILE));
    assertThat(AwsSettings.load(Component.TASK_STATE_CHANGE, queueFunctionEnv()::get).kindsFile())
        .isEqualTo(Path.of(AwsSettings.ENQUEUE_KINDS_FILE));
    assertThat(Component.MIGRATE.needsKinds()).isFalse();
    assertThat(Component.WORKER_SECRET_ROTATION.needsKinds()).isFalse();
  }

  @Test
  void an_api_function_without_its_catalogue_refuses_to_start_naming_the_variable_and_the_path() {
    Map<String, String> env = queueFunctionEnv();
    env.put(AwsSettings.KINDS_FILE, "/var/task/no-kinds-here.json");
    AwsSettings s = AwsSettings.load(Component.ENQUEUE, env::get);

    assertThatThrownBy(s::kindCatalogue)
        .isInstanceOf(KindCatalogueException.class)
        .hasMessageContaining(AwsSettings.KINDS_FILE)
        .hasMessageContaining("/var/task/no-kinds-here.json")
        .hasMessageContaining("no such file")
        .hasMessageContaining("mvn package");
  }

  @Test
  void a_worker_image_without_its_catalogue_refuses_to_start_naming_the_variable_and_the_path() {
    Map<String, String> env =
        Map.of(
            AwsSettings.JDBC_URL,
            "jdbc:postgresql://db/bq",
            AwsSettings.WORKER_ID,
            "42",
            AwsSettings.WORKER_TOKEN,
            UUID.randomUUID().toString(),
            AwsSettings.KINDS_FILE,
            "/etc/buildqueue/missing.json");
    AwsSettings s = AwsSettings.load(Component.WORKER, env::get);

    assertThatThrownBy(s::kindCatalogue)
        .hasMessageContaining(AwsSettings.KINDS_FILE)
        .hasMessageContaining("/etc/buildqueue/missing.json")
        .hasMessageContaining("infra/Dockerfile");
  }

  @Test
  void a_bad_catalogue_is_refused_with_its_own_message_and_the_variable(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("kinds.json");
    Files.writeString(
        file, "{\"kinds\": {\"render\": {\"command\": [\"x\"], \"timeout\": \"55m\"}}}");
    Map<String, String> env = queueFunctionEnv();
    env.put(AwsSettings.KINDS_FILE, file.toString());

    assertThatThrownBy(AwsSettings.load(Component.ENQUEUE, env::get)::kindCatalogue)
        .hasMessageContaining(AwsSettings.KINDS_FILE)
        .hasMessageContaining(file + ": kind \"render\": \"timeout\" is 55m")
        .hasMessageContaining("WorkerLifetimeMinutes");

    env.put(AwsSettings.WORKER_LIFETIME_MINUTES, "61");
    assertThat(AwsSettings.load(Component.ENQUEUE, env::get).kindCatalogue().kinds()).hasSize(1);
  }
}
