package buildqueue.aws.template;

import static buildqueue.aws.template.CfnTemplate.list;
import static buildqueue.aws.template.CfnTemplate.map;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.lambda.EnqueueFunction;
import buildqueue.aws.lambda.MigrateFunction;
import buildqueue.aws.lambda.TaskStateChangeFunction;
import buildqueue.aws.lambda.TickFunction;
import buildqueue.aws.lambda.WebhookDeliveryFunction;
import buildqueue.aws.lambda.WorkerSecretRotationFunction;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.core.QueueConfig;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.KindCatalogue;
import buildqueue.platform.Capacity;
import buildqueue.worker.QueueKindLimits;
import buildqueue.worker.WorkerStop;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Checks template.yaml, as CloudFormation reads it after AWS's SAM translator ({@link
 * SamTranslation}), against the code, so a deploy cannot be the first to find a mismatch: the
 * handlers exist, each function (and the worker task) gets every variable its code reads and none
 * it does not, the stop-event rule matches the stop events, and each function's IAM policy allows
 * the AWS calls its code makes, and not much more; and the API function and the worker image read
 * one kind catalogue.
 */
class TemplateTest {
  private static CfnTemplate TEMPLATE;
  private static final JsonNode STOPPED = SampleEvents.tree("ecs-task-stopped.json");
  private static final String CLUSTER_ARN = STOPPED.get("detail").get("clusterArn").asText();
  private static final String DB_CLUSTER_ARN =
      "arn:aws:rds:eu-west-1:111122223333:cluster:buildqueue-db";
  private static final String SECRET_ARN =
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:bq-db-AbCdEf";
  private static final String WORKER_SECRET_ARN =
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:bq-db-worker-GhIjKl";
  private static final String STACK = "buildqueue";

  private static final String ARTIFACTS_BUCKET_ARN = "stand-in-ArtifactsBucket-Arn";

  /** The managed policy SAM gives every function's role: writing its own logs. */
  private static final String LAMBDA_BASIC_EXECUTION =
      "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole";

  /** The kind catalogue the operator writes: one file for the API function and the worker image. */
  private static final String CATALOGUE = "infra/kinds/kinds.json";

  /** Which part of the stack each function is. */
  private static final Map<Class<?>, Component> HANDLERS =
      Map.of(
          EnqueueFunction.class, Component.ENQUEUE,
          TickFunction.class, Component.TICK,
          TaskStateChangeFunction.class, Component.TASK_STATE_CHANGE,
          MigrateFunction.class, Component.MIGRATE,
          WorkerSecretRotationFunction.class, Component.WORKER_SECRET_ROTATION,
          WebhookDeliveryFunction.class, Component.WEBHOOK_DELIVERY);

  /**
   * The AWS calls each part makes through the ports, beyond the database: launching (every queue
   * function dispatches), StopTask (a cancel before the worker starts, a worker past its lease),
   * DescribeTasks (the tick's liveness check), PutEvents (publishing after writes, and the tick);
   * EnableRule (the first enqueue after idle arms the tick's rule) and DisableRule (the tick that
   * finds no work), on the tick's rule only. Artifacts: a worker puts its attempt's files, the API
   * presigns downloads (GetObject), and the API, the tick and the stop handler remove an attempt's
   * files (ListBucket, DeleteObject). Webhooks: the tick starts the delivery function (an Invoke),
   * which itself calls nothing but the database. Every SDK call in the code must be attributed here
   * ({@link #every_aws_call_in_the_code_is_attributed}).
   */
  private static final Map<Component, Set<String>> CALLS =
      Map.of(
          Component.ENQUEUE,
              Set.of(
                  "ecs:RunTask",
                  "ecs:StopTask",
                  "events:PutEvents",
                  "events:EnableRule",
                  "s3:GetObject",
                  "s3:ListBucket",
                  "s3:DeleteObject"),
          Component.TICK,
              Set.of(
                  "ecs:RunTask",
                  "ecs:DescribeTasks",
                  "ecs:StopTask",
                  "events:PutEvents",
                  "events:EnableRule",
                  "events:DisableRule",
                  "s3:ListBucket",
                  "s3:DeleteObject",
                  "lambda:InvokeFunction"),
          Component.TASK_STATE_CHANGE,
              Set.of("ecs:RunTask", "events:PutEvents", "s3:ListBucket", "s3:DeleteObject"),
          Component.WEBHOOK_DELIVERY, Set.of(), // the database only; the endpoints are not AWS
          Component.MIGRATE, Set.of("secretsmanager:GetSecretValue"), // the worker role's password
          // Secrets Manager's rotation steps, on the worker role's secret only.
          Component.WORKER_SECRET_ROTATION,
              Set.of(
                  "secretsmanager:DescribeSecret",
                  "secretsmanager:GetSecretValue",
                  "secretsmanager:PutSecretValue",
                  "secretsmanager:UpdateSecretVersionStage"),
          Component.WORKER, Set.of("s3:PutObject"));

  private static final Map<String, Set<String>> SDK_CALLS =
      SdkCalls.in(
          Path.of(AwsSettings.class.getProtectionDomain().getCodeSource().getLocation().getPath()));

  @BeforeAll
  static void translate() {
    TEMPLATE = SamTranslation.repositoryTemplate();
  }

  /** Everything a part may call: its own calls, the database's, and what those imply. */
  private static Set<String> needed(Component c) {
    Set<String> needed = new TreeSet<>(CALLS.get(c));
    SDK_CALLS.keySet().stream().filter(a -> a.startsWith("rds-data:")).forEach(needed::add);
    needed.add("secretsmanager:GetSecretValue"); // the Data API reads the secret as the caller
    if (needed.contains("ecs:RunTask")) {
      needed.add("iam:PassRole"); // the task's execution and task roles
    }
    if (c == Component.TASK_STATE_CHANGE) {
      needed.add("sqs:SendMessage"); // Lambda's own delivery to its dead-letter queue (SAM adds it)
    }
    return needed;
  }

  private static Object resolve(Object value) {
    return TEMPLATE.resolve(
        value,
        TemplateTest::standIn,
        p -> p.equals("SubnetIds") ? "subnet-0aaa1111,subnet-0bbb2222" : "param-" + p);
  }

  /** What a deploy would put where the template refers to a resource. */
  private static String standIn(String resource, String attribute) {
    if (attribute == null) {
      return switch (resource) {
        case "AWS::Region" -> "eu-west-1";
        case "AWS::Partition" -> "aws";
        case "AWS::AccountId" -> "111122223333";
        case "AWS::StackName" -> STACK;
        default -> "stand-in-" + resource;
      };
    }
    if (resource.equals("DatabaseSecret") && attribute.equals("Ref")) {
      return SECRET_ARN;
    }
    if (resource.equals("WorkerDatabaseSecret") && attribute.equals("Ref")) {
      return WORKER_SECRET_ARN;
    }
    return switch (resource + "." + attribute) {
      case "WorkerCluster.Arn" -> CLUSTER_ARN;
      case "DatabaseCluster.DBClusterArn" -> DB_CLUSTER_ARN;
      case "WorkerTaskDefinition.Ref" ->
          "arn:aws:ecs:eu-west-1:111122223333:task-definition/" + STACK + "-worker:1";
      default -> "stand-in-" + resource + "-" + attribute;
    };
  }

  private static List<String> functions() {
    return TEMPLATE.resourcesOfType("AWS::Lambda::Function");
  }

  /**
   * The functions that run the queue (API, tick, stop events): not the migration or the secret's
   * rotation.
   */
  private static boolean isQueueFunction(Component c) {
    return c == Component.ENQUEUE || c == Component.TICK || c == Component.TASK_STATE_CHANGE;
  }

  /**
   * The functions that work on the queue's tables at run time, invoked often enough for a snapshot
   * to pay: the queue functions and the webhook delivery function.
   */
  private static boolean usesTheQueue(Component c) {
    return isQueueFunction(c) || c == Component.WEBHOOK_DELIVERY;
  }

  /**
   * Whether a resource's FunctionName (a permission's, an invoke config's) names one of {@code
   * functions}.
   */
  private static boolean invokes(String resource, List<String> functions) {
    Object name = TEMPLATE.properties(resource).get("FunctionName");
    String target =
        name instanceof Map<?, ?> ref ? String.valueOf(ref.get("Ref")) : String.valueOf(name);
    return functions.stream().anyMatch(target::startsWith);
  }

  private static String migrateFunction() throws ClassNotFoundException {
    for (String f : functions()) {
      if (HANDLERS.get(handlerClass(f)) == Component.MIGRATE) {
        return f;
      }
    }
    throw new AssertionError("no function runs " + MigrateFunction.class);
  }

  /** The function's role's inline statements (SAM turns a function's Policies into its role's). */
  private static List<Map<String, Object>> functionStatements(String function) {
    Object role = map(TEMPLATE.properties(function).get("Role")).get("Fn::GetAtt");
    Map<String, Object> roleProperties = TEMPLATE.properties(String.valueOf(list(role).get(0)));
    assertThat(list(roleProperties.get("ManagedPolicyArns")))
        .as(
            "%s: managed policies (the rest are inline statements, not managed or template policies)",
            function)
        .allSatisfy(arn -> assertThat(resolve(arn)).isEqualTo(LAMBDA_BASIC_EXECUTION));
    List<Object> documents = new java.util.ArrayList<>();
    for (Object p : list(roleProperties.get("Policies"))) {
      documents.add(map(p).get("PolicyDocument"));
    }
    return statements(documents);
  }

  /** The {@code live} alias of a function, which every event source and the API invoke. */
  private static Map<String, Object> liveAlias(String function) {
    for (String alias : TEMPLATE.resourcesOfType("AWS::Lambda::Alias")) {
      Map<String, Object> p = TEMPLATE.properties(alias);
      if (p.get("FunctionName").equals(Map.of("Ref", function)) && "live".equals(p.get("Name"))) {
        return p;
      }
    }
    throw new AssertionError(function + " has no live alias");
  }

  private static Class<?> handlerClass(String function) throws ClassNotFoundException {
    String handler = String.valueOf(TEMPLATE.properties(function).get("Handler"));
    return Class.forName(handler.split("::")[0]);
  }

  private static Map<String, String> environment(String function) {
    Map<String, String> env = new LinkedHashMap<>();
    Object vars =
        map(TEMPLATE
                .properties(function)
                .getOrDefault("Environment", Map.of("Variables", Map.of())))
            .get("Variables");
    map(resolve(vars)).forEach((k, v) -> env.put(k, String.valueOf(v)));
    return env;
  }

  private static Map<String, String> workerEnvironment() {
    Map<String, Object> container = workerContainer();
    Map<String, String> env = new LinkedHashMap<>();
    for (Object kv : list(container.get("Environment"))) {
      Map<String, Object> pair = map(resolve(kv));
      env.put(String.valueOf(pair.get("Name")), String.valueOf(pair.get("Value")));
    }
    return env;
  }

  private static Map<String, Object> workerContainer() {
    return map(
        list(TEMPLATE.properties("WorkerTaskDefinition").get("ContainerDefinitions")).get(0));
  }

  /** Loads a part's settings from {@code env}; returns the names its code asked for. */
  private static Set<String> readBy(Component c, Map<String, String> env) {
    Set<String> read = new HashSet<>();
    AwsSettings.load(
        c,
        name -> {
          read.add(name);
          return env.get(name);
        });
    return read;
  }

  @Test
  void every_handler_is_a_class_lambda_can_build_and_call() throws Exception {
    assertThat(functions()).hasSize(HANDLERS.size());
    for (String f : functions()) {
      Class<?> c = handlerClass(f);
      assertThat(HANDLERS).as("handler of %s", f).containsKey(c);
      assertThat(
              RequestHandler.class.isAssignableFrom(c)
                  || RequestStreamHandler.class.isAssignableFrom(c))
          .as("%s implements a Lambda handler interface", c)
          .isTrue();
      assertThat(Modifier.isPublic(c.getConstructor().getModifiers()))
          .as("%s has a public no-arg constructor", c)
          .isTrue();
      // Lambda builds the handler at init (into the SnapStart snapshot): that must need no
      // environment and make no client; both wait for the first invocation.
      assertThat(c.getConstructor().newInstance()).isNotNull();
      assertThat(Stream.of(c.getMethods()).anyMatch(m -> m.getName().equals("handleRequest")))
          .isTrue();

      Map<String, Object> p = TEMPLATE.properties(f);
      assertThat(p.get("Runtime")).as("Runtime of %s", f).isEqualTo("java21");
      // Maven builds the shaded jar CodeUri names; sam build must copy it, not build it as a source
      // directory.
      assertThat(map(TEMPLATE.resource(f).get("Metadata")))
          .as("Metadata of %s", f)
          .containsEntry("SkipBuild", true);
      // SnapStart where a snapshot pays: not for the migration, which runs once per deploy, nor the
      // secret's rotation, a few invocations a rotation.
      assertThat(map(p.get("SnapStart")).get("ApplyOn"))
          .as("SnapStart of %s", f)
          .isEqualTo(usesTheQueue(HANDLERS.get(c)) ? "PublishedVersions" : "None");
      String version =
          String.valueOf(list(map(liveAlias(f).get("FunctionVersion")).get("Fn::GetAtt")).get(0));
      assertThat(TEMPLATE.resource(version).get("Type")).isEqualTo("AWS::Lambda::Version");
      assertThat(TEMPLATE.properties(version).get("FunctionName")).isEqualTo(Map.of("Ref", f));
    }
  }

  @Test
  void every_function_gets_the_variables_its_code_reads_and_no_others() throws Exception {
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      Map<String, String> env = environment(f);
      env.put(AwsSettings.AWS_REGION, "eu-west-1"); // set by Lambda itself

      Set<String> read = readBy(c, env); // throws, naming the variable, if one is missing

      assertThat(read)
          .as("variables %s sets that its code never reads", f)
          .containsAll(env.keySet());
    }
  }

  @Test
  void the_worker_task_gets_the_variables_the_worker_reads_and_no_others() {
    Map<String, String> env = workerEnvironment();
    // Set per task by RunTask's container overrides, not by the task definition.
    assertThat(env).doesNotContainKeys(AwsSettings.WORKER_ID, AwsSettings.WORKER_TOKEN);
    env.put(AwsSettings.WORKER_ID, "42");
    env.put(AwsSettings.WORKER_TOKEN, UUID.randomUUID().toString());

    Set<String> read = readBy(Component.WORKER, env);

    assertThat(read).containsAll(env.keySet());
  }

  @Test
  void the_worker_container_has_an_init_process_that_reaps_what_jobs_leave() {
    assertThat(map(workerContainer().get("LinuxParameters")))
        .containsEntry("InitProcessEnabled", true);
  }

  @Test
  void the_functions_launch_into_the_container_the_task_definition_has() throws Exception {
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      if (!isQueueFunction(c)) {
        continue;
      }
      Map<String, String> env = environment(f);
      env.put(AwsSettings.AWS_REGION, "eu-west-1");
      AwsSettings s = AwsSettings.load(c, env::get);
      assertThat(s.ecs().containerName()).isEqualTo(workerContainer().get("Name"));
      assertThat(s.ecs().ownsTask(STOPPED.get("detail").get("taskArn").asText())).isTrue();
    }
  }

  @Test
  void the_queue_functions_launch_the_workers_family_so_ecs_runs_its_latest_active_revision()
      throws Exception {
    String family = workerFamily();
    assertThat(family).as("one family per stack").isEqualTo(STACK + "-worker");
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      if (!isQueueFunction(c)) {
        continue;
      }
      Map<String, String> env = environment(f);
      env.put(AwsSettings.AWS_REGION, "eu-west-1");
      assertThat(AwsSettings.load(c, env::get).ecs().taskDefinition())
          .as("%s launches", f)
          .isEqualTo(family);
    }
  }

  @Test
  void
      the_queue_functions_their_versions_aliases_routes_and_schedule_wait_for_the_schema_migration()
          throws Exception {
    String migration = "SchemaMigration";
    assertThat(TEMPLATE.resource(migration).get("Type")).isEqualTo("Custom::SchemaMigration");
    List<String> waiting = new java.util.ArrayList<>();
    List<String> others = new java.util.ArrayList<>();
    for (String f : functions()) {
      if (!usesTheQueue(HANDLERS.get(handlerClass(f)))) {
        others.add(f);
        continue;
      }
      waiting.add(f);
      waiting.add(
          String.valueOf(list(map(liveAlias(f).get("FunctionVersion")).get("Fn::GetAtt")).get(0)));
    }
    for (String type :
        List.of(
            "AWS::Lambda::Alias",
            "AWS::Events::Rule",
            "AWS::Lambda::Permission",
            "AWS::Lambda::EventInvokeConfig",
            "AWS::ApiGatewayV2::Api")) {
      for (String id : TEMPLATE.resourcesOfType(type)) {
        if (others.stream().noneMatch(id::startsWith) && !invokes(id, others)) {
          waiting.add(id);
        }
      }
    }
    assertThat(waiting)
        .as("queue functions and what invokes them")
        .hasSizeGreaterThan(10)
        .allSatisfy(
            id -> assertThat(TEMPLATE.dependencies(id)).as("%s waits for", id).contains(migration));
    assertThat(TEMPLATE.resourcesOfType("AWS::Events::Rule"))
        .anySatisfy(
            rule ->
                assertThat(map(TEMPLATE.properties(rule)))
                    .containsEntry("ScheduleExpression", "rate(1 minute)"))
        .allSatisfy(
            rule ->
                assertThat(TEMPLATE.dependencies(rule))
                    .as("%s waits for", rule)
                    .contains(migration));
    assertThat(TEMPLATE.dependencies(migration))
        .as("the migration waits for")
        .contains(migrateFunction(), "DatabaseInstance")
        .doesNotContainAnyElementsOf(waiting);
  }

  @Test
  void cloudformation_waits_for_the_migration_longer_than_it_may_run_and_far_less_than_an_hour()
      throws Exception {
    int serviceTimeout =
        Integer.parseInt(
            String.valueOf(TEMPLATE.properties("SchemaMigration").get("ServiceTimeout")));
    int functionTimeout =
        Integer.parseInt(String.valueOf(TEMPLATE.properties(migrateFunction()).get("Timeout")));

    assertThat(serviceTimeout)
        .isGreaterThan(functionTimeout)
        .isLessThanOrEqualTo(functionTimeout + 120);
    assertThat(serviceTimeout).as("CloudFormation's limit").isLessThanOrEqualTo(3600);
  }

  @Test
  void by_default_workers_get_a_public_ip_so_a_default_vpc_without_nat_starts_them()
      throws Exception {
    // A default VPC's subnets are public and have no NAT gateway: a task without a public IP there
    // cannot pull its image from ECR. Private subnets with a NAT set WorkerPublicIp=false.
    assertThat(TEMPLATE.parameters().get("WorkerPublicIp"))
        .isEqualTo(
            Map.of(
                "Type",
                "String",
                "AllowedValues",
                List.of("true", "false"),
                "Default",
                "true",
                "Description",
                map(TEMPLATE.parameters().get("WorkerPublicIp")).get("Description")));
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      if (isQueueFunction(c)) {
        Map<String, String> env = environment(f);
        env.put(AwsSettings.AWS_REGION, "eu-west-1");
        assertThat(AwsSettings.load(c, env::get).ecs().assignPublicIp())
            .as("%s assigns a public IP", f)
            .isTrue();
      }
    }
  }

  @Test
  void the_stack_default_capacity_is_a_parameter_that_every_launching_function_reads()
      throws Exception {
    Map<String, Object> parameter = map(TEMPLATE.parameters().get("DefaultCapacity"));
    assertThat(parameter.get("AllowedValues"))
        .isEqualTo(Stream.of(Capacity.values()).map(Capacity::label).toList());
    assertThat(parameter.get("Default")).isEqualTo(Capacity.ON_DEMAND.label());
    int launching = 0;
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      Object raw =
          map(map(TEMPLATE.properties(f).getOrDefault("Environment", Map.of("Variables", Map.of())))
                  .get("Variables"))
              .get(AwsSettings.DEFAULT_CAPACITY);
      if (isQueueFunction(c)) {
        launching++;
        assertThat(raw).as(f).isEqualTo(Map.of("Ref", "DefaultCapacity"));
        Map<String, String> env = environment(f);
        env.put(AwsSettings.AWS_REGION, "eu-west-1");
        assertThat(AwsSettings.load(c, env::get).defaultCapacity())
            .as("%s's default", f)
            .isEqualTo(Capacity.ON_DEMAND);
      } else {
        assertThat(raw).as("%s launches no worker", f).isNull();
      }
    }
    assertThat(launching).as("the API, the tick, the stop handler").isEqualTo(3);
  }

  @Test
  void every_function_that_launches_times_out_inside_the_launch_grace() throws Exception {
    // The tick relaunches a launch whose outcome was never recorded once the launch grace has
    // passed; that is safe only if the caller that started it is dead by then (see the faults
    // package notes), and Lambda's timeout is what kills it.
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      if (!CALLS.get(c).contains("ecs:RunTask")) {
        continue;
      }
      Map<String, String> env = environment(f);
      env.put(AwsSettings.AWS_REGION, "eu-west-1");
      Duration grace = AwsSettings.load(c, env::get).queue().launchGrace();
      int timeout = Integer.parseInt(String.valueOf(TEMPLATE.properties(f).get("Timeout")));
      assertThat(Duration.ofSeconds(timeout)).as("Timeout of %s", f).isLessThan(grace);
    }
  }

  @Test
  void the_stop_rule_matches_stopped_tasks_of_the_worker_cluster_and_nothing_else() {
    List<Map<String, Object>> rules =
        TEMPLATE.resourcesOfType("AWS::Events::Rule").stream()
            .map(TEMPLATE::properties)
            .filter(
                r ->
                    list(r.get("Targets")).stream()
                        .anyMatch(
                            t ->
                                map(t)
                                    .get("Arn")
                                    .equals(Map.of("Ref", "TaskStateChangeFunctionAliaslive"))))
            .toList();
    assertThat(rules).as("rules that invoke the stop-event function").hasSize(1);
    Map<String, Object> rule = rules.get(0);
    Map<String, Object> pattern = map(resolve(rule.get("EventPattern")));
    ObjectNode running = STOPPED.deepCopy();
    ((ObjectNode) running.get("detail")).put("lastStatus", "RUNNING");
    ObjectNode otherCluster = STOPPED.deepCopy();
    ((ObjectNode) otherCluster.get("detail"))
        .put("clusterArn", CLUSTER_ARN.replace("buildqueue-workers", "other"));

    assertThat(EventPatterns.matches(pattern, STOPPED)).isTrue();
    assertThat(EventPatterns.matches(pattern, SampleEvents.tree("ecs-task-failed-to-start.json")))
        .isTrue();
    assertThat(EventPatterns.matches(pattern, running)).isFalse();
    assertThat(EventPatterns.matches(pattern, otherCluster)).isFalse();
    assertThat(EventPatterns.matches(pattern, SampleEvents.tree("schedule-tick.json"))).isFalse();
    assertThat(map(map(list(rule.get("Targets")).get(0)).get("DeadLetterConfig"))).isNotEmpty();
    assertThat(TEMPLATE.properties("TaskStateChangeFunction")).containsKey("DeadLetterConfig");
  }

  @Test
  void every_aws_call_in_the_code_is_attributed() {
    Set<String> attributed = new TreeSet<>();
    CALLS.values().forEach(attributed::addAll);
    Set<String> calledByCode =
        SDK_CALLS.keySet().stream()
            .filter(a -> !a.startsWith("rds-data:"))
            .collect(Collectors.toCollection(TreeSet::new));

    assertThat(attributed)
        .as("calls the code makes, found in its classes: %s", SDK_CALLS)
        .isEqualTo(calledByCode);
  }

  @Test
  void each_function_may_make_the_calls_its_code_makes_and_not_much_more() throws Exception {
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      assertPolicy(f, c, functionStatements(f));
    }
  }

  @Test
  void the_worker_task_role_may_make_the_calls_the_worker_makes_and_not_much_more() {
    List<Map<String, Object>> statements = new java.util.ArrayList<>();
    for (Object p : list(TEMPLATE.properties("WorkerTaskRole").get("Policies"))) {
      statements.addAll(statements(List.of(map(p).get("PolicyDocument"))));
    }
    assertPolicy("WorkerTaskRole", Component.WORKER, statements);
  }

  @Test
  void the_worker_task_can_read_the_worker_roles_secret_and_never_the_master_secret() {
    List<Map<String, Object>> statements = new java.util.ArrayList<>();
    for (Object p : list(TEMPLATE.properties("WorkerTaskRole").get("Policies"))) {
      statements.addAll(statements(List.of(map(p).get("PolicyDocument"))));
    }
    Set<Object> secretsRead = new java.util.HashSet<>();
    for (Map<String, Object> s : statements) {
      for (Object a : list(s.get("Action"))) {
        String action = String.valueOf(a);
        // A wildcard would reach the master secret (or let the task read it some other way).
        assertThat(action).as("WorkerTaskRole action").doesNotContain("*");
        if (action.startsWith("secretsmanager:")) {
          secretsRead.addAll(list(resolve(s.get("Resource"))));
        }
      }
      assertThat(list(resolve(s.get("Resource"))))
          .as("WorkerTaskRole resources")
          .doesNotContain("*", SECRET_ARN);
    }
    // The Data API reads the secret a request names with the caller's permissions: without the
    // master secret, rds-data with it is refused.
    assertThat(secretsRead).containsExactly(WORKER_SECRET_ARN);
    assertThat(workerEnvironment()).containsEntry(AwsSettings.DB_SECRET_ARN, WORKER_SECRET_ARN);
  }

  @Test
  void the_migrate_function_reads_both_secrets_and_is_told_the_worker_roles() throws Exception {
    String migrate = migrateFunction();
    Set<Object> secretsRead = new java.util.HashSet<>();
    for (Map<String, Object> s : functionStatements(migrate)) {
      if (list(s.get("Action")).contains("secretsmanager:GetSecretValue")) {
        secretsRead.addAll(list(resolve(s.get("Resource"))));
      }
    }
    assertThat(secretsRead).containsExactlyInAnyOrder(SECRET_ARN, WORKER_SECRET_ARN);
    assertThat(environment(migrate))
        .containsEntry(AwsSettings.WORKER_DB_SECRET_ARN, WORKER_SECRET_ARN);
  }

  @Test
  void the_api_function_and_the_worker_image_read_one_catalogue_file() throws IOException {
    byte[] catalogue = Files.readAllBytes(SampleEvents.repoFile(CATALOGUE));

    // The worker image: infra/Dockerfile copies the operator's file where the task definition says
    // it is.
    String workerPath = workerEnvironment().get(AwsSettings.KINDS_FILE);
    assertThat(workerPath).isEqualTo(AwsSettings.WORKER_KINDS_FILE);
    assertThat(dockerCopies())
        .as("infra/Dockerfile COPY instructions")
        .containsEntry(workerPath, CATALOGUE);

    // The API function: the build puts the same file at the root of the functions' jar, which
    // Lambda unpacks into /var/task.
    try (InputStream inJar = AwsSettings.class.getResourceAsStream("/kinds.json")) {
      assertThat(inJar)
          .as("kinds.json at the root of the functions' jar (functions/aws/pom.xml resources)")
          .isNotNull();
      assertThat(inJar.readAllBytes())
          .as("the jar's catalogue is " + CATALOGUE)
          .isEqualTo(catalogue);
    }
    assertThat(environment("EnqueueFunction").get(AwsSettings.KINDS_FILE))
        .isEqualTo(AwsSettings.ENQUEUE_KINDS_FILE)
        .isEqualTo("/var/task/kinds.json");
  }

  @Test
  void every_part_that_needs_the_kinds_is_told_where_they_are_and_no_other() throws Exception {
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      assertThat(environment(f).containsKey(AwsSettings.KINDS_FILE))
          .as("%s (%s) gets %s", f, c, AwsSettings.KINDS_FILE)
          .isEqualTo(c.needsKinds());
    }
    assertThat(Component.ENQUEUE.needsKinds()).isTrue();
    assertThat(Component.WORKER.needsKinds()).isTrue();
    assertThat(workerEnvironment()).containsKey(AwsSettings.KINDS_FILE);
  }

  /**
   * ECS sends SIGKILL {@code StopTimeout} seconds after SIGTERM; the worker learns it from its
   * environment, so the two must agree, and Fargate allows at most 120. The shipped kinds' graces
   * fit in what a stop leaves a program ({@link WorkerStop#programTimeLeft}), so a stop gives them
   * their whole grace.
   */
  @Test
  void the_worker_knows_its_containers_stop_timeout_and_the_shipped_kinds_grace_fits_in_it()
      throws Exception {
    Object stopTimeout = workerContainer().get("StopTimeout");
    assertThat(stopTimeout).as("the worker container's StopTimeout").isInstanceOf(Integer.class);
    assertThat((Integer) stopTimeout)
        .isBetween(2, (int) WorkerStop.MAX_FARGATE_STOP_TIMEOUT.toSeconds());
    Map<String, String> env = workerEnvironment();
    assertThat(env).containsEntry(AwsSettings.STOP_TIMEOUT_SECONDS, stopTimeout.toString());
    env.put(AwsSettings.WORKER_ID, "42");
    env.put(AwsSettings.WORKER_TOKEN, UUID.randomUUID().toString());
    AwsSettings worker = AwsSettings.load(Component.WORKER, env::get);
    assertThat(worker.stopTimeout()).isEqualTo(Duration.ofSeconds((Integer) stopTimeout));

    Duration programs = new WorkerStop(worker.stopTimeout()).programTimeLeft();
    for (CommandKind kind :
        KindCatalogue.load(SampleEvents.repoFile(CATALOGUE), QueueKindLimits.of(worker.queue()))
            .kinds()) {
      assertThat(kind.cancelGracePeriod())
          .as("kind %s's grace", kind.name())
          .isLessThanOrEqualTo(programs);
    }
  }

  @Test
  void the_shipped_catalogue_loads_under_the_queue_settings_the_template_gives() throws Exception {
    Map<String, String> env = workerEnvironment();
    env.put(AwsSettings.WORKER_ID, "42");
    env.put(AwsSettings.WORKER_TOKEN, UUID.randomUUID().toString());
    AwsSettings worker = AwsSettings.load(Component.WORKER, env::get);

    KindCatalogue catalogue =
        KindCatalogue.load(SampleEvents.repoFile(CATALOGUE), QueueKindLimits.of(worker.queue()));

    assertThat(catalogue.kinds()).isNotEmpty();
  }

  /** {@code COPY src dest} lines of infra/Dockerfile, as destination to source. */
  private static Map<String, String> dockerCopies() throws IOException {
    Map<String, String> copies = new LinkedHashMap<>();
    for (String line : Files.readAllLines(SampleEvents.repoFile("infra/Dockerfile"))) {
      List<String> words = List.of(line.trim().split("\\s+"));
      if (!words.isEmpty() && words.get(0).equalsIgnoreCase("COPY")) {
        List<String> args = words.stream().skip(1).filter(w -> !w.startsWith("--")).toList();
        copies.put(args.get(args.size() - 1), args.get(0));
      }
    }
    return copies;
  }

  @Test
  void the_artifacts_bucket_is_encrypted_private_owner_enforced_and_expires_a_day_after_its_jobs() {
    Map<String, Object> p = TEMPLATE.properties("ArtifactsBucket");

    assertThat(p.get("BucketEncryption"))
        .isEqualTo(
            Map.of(
                "ServerSideEncryptionConfiguration",
                List.of(
                    Map.of("ServerSideEncryptionByDefault", Map.of("SSEAlgorithm", "AES256")))));
    assertThat(p.get("PublicAccessBlockConfiguration"))
        .isEqualTo(
            Map.of(
                "BlockPublicAcls", true,
                "BlockPublicPolicy", true,
                "IgnorePublicAcls", true,
                "RestrictPublicBuckets", true));
    assertThat(p.get("OwnershipControls"))
        .isEqualTo(Map.of("Rules", List.of(Map.of("ObjectOwnership", "BucketOwnerEnforced"))));
    assertThat(p).doesNotContainKeys("BucketName", "WebsiteConfiguration", "AccessControl");
    List<Object> rules = list(map(p.get("LifecycleConfiguration")).get("Rules"));
    assertThat(rules).hasSize(1);
    Map<String, Object> rule = map(rules.get(0));
    assertThat(rule).containsEntry("Status", "Enabled").containsEntry("Prefix", "jobs/");
    // The tick deletes a finished job after the retention; its objects stay a day longer, so a job
    // that is listed never links to an object S3 already expired (S3 expires at the midnight UTC
    // after the day count, from the upload, which comes before the job ends).
    assertThat(((Number) rule.get("ExpirationInDays")).longValue())
        .isEqualTo(QueueConfig.defaults().retention().toDays() + 1);
  }

  @Test
  void the_artifacts_bucket_refuses_plain_http_and_every_write_that_could_overwrite() {
    Map<String, Object> p = TEMPLATE.properties("ArtifactsBucketPolicy");
    assertThat(p.get("Bucket")).isEqualTo(Map.of("Ref", "ArtifactsBucket"));
    List<Map<String, Object>> statements = statements(List.of(p.get("PolicyDocument")));
    // The bucket policy only refuses; what each part may do is its role's.
    assertThat(statements).allSatisfy(s -> assertThat(s.get("Effect")).isEqualTo("Deny"));

    Map<String, Object> tls = statement(statements, "TlsOnly");
    assertThat(tls).containsEntry("Principal", "*").containsEntry("Action", "s3:*");
    assertThat(list(resolve(tls.get("Resource"))))
        .containsExactlyInAnyOrder(ARTIFACTS_BUCKET_ARN, ARTIFACTS_BUCKET_ARN + "/*");
    assertThat(resolve(tls.get("Condition")))
        .isEqualTo(Map.of("Bool", Map.of("aws:SecureTransport", "false")));

    Map<String, Object> once = statement(statements, "PutOnce");
    assertThat(once).containsEntry("Principal", "*").containsEntry("Action", "s3:PutObject");
    assertThat(resolve(once.get("Resource"))).isEqualTo(ARTIFACTS_BUCKET_ARN + "/*");
    assertThat(resolve(once.get("Condition")))
        .isEqualTo(Map.of("Null", Map.of("s3:if-none-match", "true")));
  }

  @Test
  void the_worker_and_the_queue_functions_are_told_the_artifacts_bucket_and_no_other_function()
      throws Exception {
    String bucket = standIn("ArtifactsBucket", "Ref");
    assertThat(workerEnvironment()).containsEntry(AwsSettings.ARTIFACTS_BUCKET, bucket);
    for (String f : functions()) {
      Component c = HANDLERS.get(handlerClass(f));
      if (isQueueFunction(c)) {
        assertThat(environment(f)).as(f).containsEntry(AwsSettings.ARTIFACTS_BUCKET, bucket);
      } else {
        assertThat(environment(f)).as(f).doesNotContainKey(AwsSettings.ARTIFACTS_BUCKET);
      }
    }
  }

  private static String webhookFunction() throws ClassNotFoundException {
    for (String f : functions()) {
      if (HANDLERS.get(handlerClass(f)) == Component.WEBHOOK_DELIVERY) {
        return f;
      }
    }
    throw new AssertionError("no function runs " + WebhookDeliveryFunction.class);
  }

  @Test
  void the_webhook_delivery_function_runs_outside_any_vpc_and_may_use_only_the_database()
      throws Exception {
    String f = webhookFunction();
    // The rule: deliveries go from a Lambda outside any VPC (so never from an address of
    // the stack's network, and never to one: the deliverer refuses private targets besides).
    assertThat(TEMPLATE.properties(f)).doesNotContainKey("VpcConfig");
    assertThat(functionStatements(f))
        .flatExtracting(s -> list(s.get("Action")))
        .allSatisfy(
            a ->
                assertThat(String.valueOf(a)).matches("rds-data:.*|secretsmanager:GetSecretValue"));
    assertThat(environment(f))
        .as("no ECS, bucket, kinds or rule: the database's variables only")
        .containsOnlyKeys(
            AwsSettings.DB_CLUSTER_ARN, AwsSettings.DB_SECRET_ARN, AwsSettings.DB_NAME);
  }

  @Test
  void only_the_tick_may_start_the_webhook_delivery_function_and_it_is_told_its_live_alias()
      throws Exception {
    String f = webhookFunction();
    String alias = standIn("WebhookDeliveryFunctionAliaslive", "Ref");
    assertThat(liveAlias(f)).containsEntry("Name", "live");
    for (String other : functions()) {
      Component c = HANDLERS.get(handlerClass(other));
      boolean invokes =
          functionStatements(other).stream()
              .anyMatch(s -> list(s.get("Action")).contains("lambda:InvokeFunction"));
      assertThat(invokes).as("%s may invoke a function", other).isEqualTo(c == Component.TICK);
      if (c == Component.TICK) {
        assertThat(environment(other)).containsEntry(AwsSettings.WEBHOOK_FUNCTION, alias);
        Map<String, String> env = environment(other);
        env.put(AwsSettings.AWS_REGION, "eu-west-1");
        assertThat(AwsSettings.load(c, env::get).webhookFunction()).contains(alias);
      } else {
        assertThat(environment(other)).doesNotContainKey(AwsSettings.WEBHOOK_FUNCTION);
      }
    }
    // No schedule, rule, queue or API route starts it: only the tick, when deliveries are due.
    for (String type : List.of("AWS::Events::Rule", "AWS::Lambda::Permission")) {
      for (String id : TEMPLATE.resourcesOfType(type)) {
        assertThat(id).doesNotStartWith(f);
        assertThat(invokes(id, List.of(f))).as("%s invokes %s", id, f).isFalse();
      }
    }
    assertThat(TEMPLATE.resourcesOfType("AWS::Lambda::EventSourceMapping")).isEmpty();
  }

  @Test
  void a_webhook_pass_ends_well_inside_the_functions_timeout_and_a_late_start_is_dropped()
      throws Exception {
    String f = webhookFunction();
    Duration timeout =
        Duration.ofSeconds(Integer.parseInt(String.valueOf(TEMPLATE.properties(f).get("Timeout"))));
    Duration budget =
        WebhookDeliveryFunction.budget(buildqueue.aws.testing.TestContext.withTimeLeft(timeout));

    assertThat(budget).as("what a pass may spend").isPositive();
    // A batch claimed at the budget's last moment, every request at its timeout, still records
    // its outcomes with time to spare.
    assertThat(budget.plus(WebhookDeliveryFunction.WORST_BATCH))
        .isLessThanOrEqualTo(timeout.minusSeconds(10));
    // An asynchronous start is tried once, and dropped after a minute: the next tick starts one.
    Map<String, Object> invokeConfig =
        TEMPLATE.resourcesOfType("AWS::Lambda::EventInvokeConfig").stream()
            .map(TEMPLATE::properties)
            .filter(p -> p.get("FunctionName").equals(Map.of("Ref", f)))
            .findFirst()
            .orElseThrow();
    assertThat(invokeConfig)
        .containsEntry("Qualifier", "live")
        .containsEntry("MaximumRetryAttempts", 0)
        .containsEntry("MaximumEventAgeInSeconds", 60);
  }

  private static Map<String, Object> statement(List<Map<String, Object>> statements, String sid) {
    return statements.stream()
        .filter(s -> sid.equals(s.get("Sid")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no statement " + sid));
  }

  private static void assertPolicy(String who, Component c, List<Map<String, Object>> statements) {
    Map<String, List<Map<String, Object>>> allowing = new HashMap<>();
    for (Map<String, Object> s : statements) {
      assertThat(s.get("Effect")).isEqualTo("Allow");
      for (Object a : list(s.get("Action"))) {
        allowing.computeIfAbsent(String.valueOf(a), k -> new java.util.ArrayList<>()).add(s);
      }
      if (list(s.get("Resource")).contains("*")) {
        assertThat(s)
            .as("%s: a statement on every resource must be narrowed by a condition", who)
            .containsKey("Condition");
      }
    }
    Set<String> needed = needed(c);
    assertThat(allowing.keySet()).as("%s allows exactly the calls of %s", who, c).isEqualTo(needed);
    allowing.forEach(
        (action, ss) -> {
          for (Map<String, Object> s : ss) {
            Object resource = resolve(s.get("Resource"));
            Map<String, Object> condition =
                s.containsKey("Condition") ? map(resolve(s.get("Condition"))) : Map.of();
            if (action.startsWith("rds-data:")) {
              assertThat(resource).as("%s %s", who, action).isEqualTo(DB_CLUSTER_ARN);
            } else if (action.equals("secretsmanager:GetSecretValue")) {
              // A worker reads its own role's secret only; the Migrate function also reads it, to
              // set
              // the role's password; every other function reads the master secret only.
              if (c == Component.MIGRATE || c == Component.WORKER_SECRET_ROTATION) {
                assertThat(resource).as("%s reads", who).isIn(SECRET_ARN, WORKER_SECRET_ARN);
              } else {
                assertThat(resource)
                    .as("%s reads", who)
                    .isEqualTo(c == Component.WORKER ? WORKER_SECRET_ARN : SECRET_ARN);
              }
            } else if (action.startsWith("secretsmanager:")) {
              // Writing a secret's versions: the worker role's secret only, never the master's.
              assertThat(resource).as("%s %s", who, action).isEqualTo(WORKER_SECRET_ARN);
            } else if (action.equals("ecs:RunTask")) {
              // Every revision of the worker's family, and nothing else: RunTask with the bare
              // family
              // is authorised against its latest ACTIVE revision.
              assertThat(resource)
                  .isEqualTo(
                      "arn:aws:ecs:eu-west-1:111122223333:task-definition/"
                          + workerFamily()
                          + ":*");
              assertThat(condition)
                  .isEqualTo(Map.of("ArnEquals", Map.of("ecs:cluster", CLUSTER_ARN)));
            } else if (action.equals("ecs:DescribeTasks") || action.equals("ecs:StopTask")) {
              assertThat(condition)
                  .isEqualTo(Map.of("ArnEquals", Map.of("ecs:cluster", CLUSTER_ARN)));
            } else if (action.equals("iam:PassRole")) {
              assertThat(list(resource))
                  .containsExactlyInAnyOrder(
                      standIn("WorkerExecutionRole", "Arn"), standIn("WorkerTaskRole", "Arn"));
              assertThat(condition)
                  .isEqualTo(
                      Map.of(
                          "StringEquals",
                          Map.of("iam:PassedToService", "ecs-tasks.amazonaws.com")));
            } else if (action.equals("s3:ListBucket")) {
              // The bucket, and only the keys under jobs/.
              assertThat(resource).as("%s %s", who, action).isEqualTo(ARTIFACTS_BUCKET_ARN);
              assertThat(condition)
                  .as("%s %s", who, action)
                  .isEqualTo(Map.of("StringLike", Map.of("s3:prefix", "jobs/*")));
            } else if (action.startsWith("s3:")) {
              // Objects under jobs/, nothing else in the bucket, no other bucket.
              assertThat(resource)
                  .as("%s %s", who, action)
                  .isEqualTo(ARTIFACTS_BUCKET_ARN + "/jobs/*");
              assertThat(condition).as("%s %s", who, action).isEmpty();
            } else if (action.equals("sqs:SendMessage")) {
              assertThat(resource)
                  .as("%s sends to", who)
                  .isEqualTo(standIn("StopEventsDeadLetterQueue", "Arn"));
            } else if (action.equals("events:PutEvents")) {
              assertThat(String.valueOf(resource)).endsWith(":event-bus/default");
            } else if (action.equals("lambda:InvokeFunction")) {
              assertThat(resource)
                  .as("%s starts only the webhook delivery function's live alias", who)
                  .isEqualTo(standIn("WebhookDeliveryFunctionAliaslive", "Ref"));
            } else if (action.equals("events:EnableRule") || action.equals("events:DisableRule")) {
              assertThat(String.valueOf(resource))
                  .as("%s turns only the tick's rule on and off", who)
                  .isEqualTo("arn:aws:events:eu-west-1:111122223333:rule/" + STACK + "-tick");
            }
          }
        });
  }

  private static String workerFamily() {
    return String.valueOf(resolve(TEMPLATE.properties("WorkerTaskDefinition").get("Family")));
  }

  private static List<Map<String, Object>> statements(Object policies) {
    List<Map<String, Object>> out = new java.util.ArrayList<>();
    for (Object p : list(policies)) {
      for (Object s : list(map(p).get("Statement"))) {
        out.add(map(s));
      }
    }
    return out;
  }
}
