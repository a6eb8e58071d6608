package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.testing.EventBridgeFake;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.testing.TestContext;
import buildqueue.aws.testing.TestServices;
import buildqueue.core.QueueClock;
import buildqueue.db.CountingDatabase;
import buildqueue.kinds.KindCatalogue;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import buildqueue.worker.QueueKindLimits;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPEvent;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPResponse;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SnapStart priming ({@link Priming}): each function registers its hook when Lambda builds its
 * handler; the hook builds and loads what a first event needs without calling AWS or the database
 * (its SDK calls go to a loopback server of its own), without writing, without making a token or
 * loading the random UUIDs' generator; and the handler works after a checkpoint and restore, making
 * its tokens then.
 */
@ExtendWith(PostgresExtension.class)
class PrimingTest {
  private static final List<String> FUNCTIONS =
      List.of(
          "EnqueueFunction",
          "TickFunction",
          "TaskStateChangeFunction",
          "MigrateFunction",
          "WebhookDeliveryFunction");

  /**
   * A fresh JVM, as Lambda starts one for a snapshot: the five handlers built as the runtime builds
   * them, their hooks run, every AWS endpoint a socket that counts connections, and the JVM's class
   * loading logged.
   */
  @Test
  void
      a_fresh_jvm_primed_for_a_snapshot_registers_every_hook_opens_no_connection_and_makes_no_token()
          throws Exception {
    Path classLog = Files.createTempFile("priming-classes", ".log");
    try (ServerSocket endpoint = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      AtomicInteger connections = new AtomicInteger();
      Thread acceptor =
          new Thread(
              () -> {
                while (!endpoint.isClosed()) {
                  try (Socket s = endpoint.accept()) {
                    connections.incrementAndGet();
                  } catch (java.io.IOException closed) {
                    return;
                  }
                }
              });
      acceptor.setDaemon(true);
      acceptor.start();
      String url = "http://127.0.0.1:" + endpoint.getLocalPort();

      List<String> cmd =
          new ArrayList<>(
              List.of(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-Xlog:class+load=info:file=" + classLog,
                  "-cp",
                  System.getProperty("java.class.path"),
                  PrimingProbe.class.getName()));
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      Map<String, String> env = pb.environment();
      env.clear();
      env.putAll(lambdaEnvironment(url));
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();

      assertThat(p.exitValue()).as(out).isZero();
      assertThat(out).contains("PRIMED " + String.join(",", FUNCTIONS));
      assertThat(out)
          .as("every hook primed its function")
          .doesNotContain("could not be primed")
          .doesNotContain("rehearsal failed");
      assertThat(out.split("primed for the snapshot in", -1)).hasSize(FUNCTIONS.size() + 1);
      assertThat(connections.get()).as("connections opened to AWS while priming").isZero();
      List<String> loaded =
          Files.readAllLines(classLog).stream()
              .map(l -> l.replaceAll("^.*\\] ", "").replaceAll(" source:.*$", ""))
              .toList();
      assertThat(loaded)
          .as("classes the priming loaded")
          .contains(
              "buildqueue.aws.lambda.Priming",
              "software.amazon.awssdk.services.rdsdata.RdsDataClient",
              "software.amazon.awssdk.services.ecs.EcsClient",
              // the rehearsal's calls, against its own loopback server
              "software.amazon.awssdk.services.ecs.transform.RunTaskRequestMarshaller",
              "software.amazon.awssdk.services.eventbridge.transform.PutEventsRequestMarshaller");
      // The SDK clients' TLS contexts do make a SecureRandom (NativePRNG on Linux, whose every
      // output is mixed with /dev/urandom read at the time); what must not be in a snapshot is a
      // token, or the random UUIDs' generator, which would then be shared by every restored copy.
      assertThat(loaded)
          .as("the random UUIDs' generator, made by the first token")
          .doesNotContain("java.util.UUID$Holder");
    } finally {
      Files.deleteIfExists(classLog);
    }
  }

  private static Map<String, String> lambdaEnvironment(String endpoint) {
    Map<String, String> env = new HashMap<>();
    env.put("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
    env.put("AWS_REGION", "eu-west-1");
    env.put("AWS_ACCESS_KEY_ID", "AKIAPRIMINGPROBE");
    env.put("AWS_SECRET_ACCESS_KEY", "priming-not-a-secret");
    env.put("AWS_ENDPOINT_URL_RDS_DATA", endpoint);
    env.put("AWS_ENDPOINT_URL_ECS", endpoint);
    env.put("AWS_ENDPOINT_URL_EVENTBRIDGE", endpoint);
    env.put("BUILDQUEUE_DB_CLUSTER_ARN", "arn:aws:rds:eu-west-1:111122223333:cluster:buildqueue");
    env.put(
        "BUILDQUEUE_DB_SECRET_ARN",
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:buildqueue-AbCdEf");
    env.put(
        "BUILDQUEUE_WORKER_DB_SECRET_ARN",
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:worker-AbCdEf");
    env.put("BUILDQUEUE_ECS_CLUSTER", "buildqueue");
    env.put("BUILDQUEUE_TASK_DEFINITION", "buildqueue-worker");
    env.put("BUILDQUEUE_SUBNETS", "subnet-0a1b2c3d");
    env.put(
        "BUILDQUEUE_KINDS_FILE",
        SampleEvents.repoFile("infra/kinds/kinds.json").toAbsolutePath().toString());
    return env;
  }

  @Test
  void the_rehearsal_makes_each_sdk_call_of_a_first_event_against_its_own_loopback_server() {
    try (Rehearsal r = Rehearsal.start()) {
      r.dataApi();
      int dataApi = r.requests();
      r.ecs();
      int ecs = r.requests() - dataApi;
      r.eventBridge();
      int events = r.requests() - dataApi - ecs;
      r.lambda();
      int invokes = r.requests() - dataApi - ecs - events;
      r.secretsManager();

      assertThat(dataApi)
          .as("a statement; begin, statement, commit; each round")
          .isEqualTo(4 * Priming.ROUNDS);
      assertThat(ecs)
          .as("RunTask, DescribeTasks, StopTask; each round")
          .isEqualTo(3 * Priming.ROUNDS);
      assertThat(events).as("PutEvents, each round").isEqualTo(Priming.ROUNDS);
      assertThat(invokes).as("an asynchronous Invoke, each round").isEqualTo(Priming.ROUNDS);
      assertThat(r.requests() - dataApi - ecs - events - invokes).as("GetSecretValue").isEqualTo(1);
    }
  }

  @Test
  void building_a_handler_registers_its_priming_once() {
    new EnqueueFunction();
    new TickFunction();
    new TaskStateChangeFunction();
    new MigrateFunction();
    new WebhookDeliveryFunction();
    new EnqueueFunction();

    assertThat(Priming.registered()).containsAll(FUNCTIONS).doesNotHaveDuplicates();
  }

  @Test
  void priming_sends_no_statement_launches_nothing_publishes_nothing_and_writes_nothing(
      TestDatabase tdb) {
    CountingDatabase counted = new CountingDatabase(tdb.jdbc());
    ManualPlatform platform = new ManualPlatform();
    QueueClock.Settable clock = new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));
    try (EventBridgeFake eventBridge = new EventBridgeFake()) {
      QueueServices api =
          new QueueServices(
              Component.ENQUEUE,
              counted,
              platform,
              eventBridge.client(),
              "bus",
              QueueHarness.testConfig(),
              clock,
              "buildqueue-test",
              TestServices.METRICS,
              KindCatalogue.load(
                      SampleEvents.repoFile("infra/kinds/kinds.json"),
                      QueueKindLimits.of(QueueHarness.testConfig()))
                  .registry());
      QueueServices tick = TestServices.of(Component.TICK, counted, platform, eventBridge, clock);
      QueueServices stops =
          TestServices.of(Component.TASK_STATE_CHANGE, counted, platform, eventBridge, clock);
      String before = tables(tdb);

      EnqueueFunction.prime(api);
      TickFunction.prime(tick);
      TaskStateChangeFunction.prime(stops);
      MigrateFunction.prime(() -> counted);
      WebhookDeliveryFunction.prime(
          AwsServices.webhookServices(counted, "buildqueue-test", TestServices.METRICS));

      assertThat(counted.statements()).as("statements sent while priming").isZero();
      assertThat(platform.launches())
          .as("launches (each would carry a new worker token)")
          .isEmpty();
      assertThat(platform.checks()).isEmpty();
      assertThat(eventBridge.received()).isEmpty();
      assertThat(tables(tdb)).isEqualTo(before);
    }
  }

  @Test
  void the_api_works_after_a_checkpoint_and_restore_and_makes_a_new_token_per_dispatch(
      TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      EnqueueFunction.prime(w.services);
      // Whatever else this JVM registered: none of it may break the handler.
      Priming.checkpointAndRestore();
      w.services.queue().setDedicated("alice", true); // a lane each, so both dispatch at once
      w.services.queue().setDedicated("bob", true);

      APIGatewayV2HTTPResponse first = post(w, "alice");
      WorkerLaunch a = w.lastLaunch();
      APIGatewayV2HTTPResponse second = post(w, "bob");
      WorkerLaunch b = w.lastLaunch();

      assertThat(first.getStatusCode()).isEqualTo(201);
      assertThat(second.getStatusCode()).isEqualTo(201);
      assertThat(a.token()).isNotEqualTo(b.token()).isNotEqualTo(new UUID(0, 0));
      assertThat(w.liveWorkers()).hasSize(2);
    }
  }

  @Test
  void the_tick_and_the_stop_handler_work_after_a_checkpoint_and_restore(TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.TASK_STATE_CHANGE)) {
      TickFunction.prime(w.services);
      TaskStateChangeFunction.prime(w.services);
      String arn =
          "arn:aws:ecs:eu-west-1:111122223333:task/queue-workers/"
              + "0123456789abcdef0123456789abcdef";
      w.platform.nextOutcomes(new LaunchOutcome.Started(arn));
      w.submit("alice");
      WorkerLaunch launch = w.lastLaunch();
      w.workers.start(launch.workerId(), launch.token()).orElseThrow();

      TaskStateChangeFunction.Outcome outcome =
          new TaskStateChangeFunction(() -> w.services)
              .handle(TaskStateChangeFunctionTest.stopped(launch, arn));
      String report =
          new TickFunction(() -> w.services)
              .handleRequest(
                  TickFunctionTest.event("schedule-tick.json"),
                  TestContext.withTimeLeft(Duration.ofSeconds(55)));

      assertThat(outcome).isEqualTo(TaskStateChangeFunction.Outcome.WORKER_EXITED);
      assertThat(report).contains("cutShort=[]");
    }
  }

  @Test
  void the_schema_function_works_after_a_checkpoint_and_restore(TestDatabase tdb) throws Exception {
    List<String> answers = new ArrayList<>();
    HttpServer s3 =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    s3.createContext(
        "/",
        exchange -> {
          answers.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
          exchange.sendResponseHeaders(200, -1);
          exchange.close();
        });
    s3.start();
    try {
      MigrateFunction.prime(tdb::jdbc);
      var request = SampleEvents.tree("cloudformation-create.json");
      request.put("ResponseURL", "http://127.0.0.1:" + s3.getAddress().getPort() + "/answer");

      new MigrateFunction(tdb::jdbc, () -> TestDatabases.WORKER_PASSWORD)
          .handleRequest(
              new ByteArrayInputStream(SampleEvents.bytes(request)),
              new ByteArrayOutputStream(),
              TestContext.withTimeLeft(Duration.ofMinutes(5)));

      assertThat(answers).singleElement().asString().contains("\"Status\":\"SUCCESS\"");
    } finally {
      s3.stop(0);
    }
  }

  private static APIGatewayV2HTTPResponse post(QueueWorld w, String user) {
    var event = SampleEvents.tree("api-gateway-post-jobs.json");
    ((com.fasterxml.jackson.databind.node.ObjectNode)
            event.get("requestContext").get("authorizer").get("jwt").get("claims"))
        .put("sub", user);
    APIGatewayV2HTTPEvent e =
        SampleEvents.asLambdaEvent(SampleEvents.bytes(event), APIGatewayV2HTTPEvent.class);
    return new EnqueueFunction(() -> w.services)
        .handleRequest(e, TestContext.withTimeLeft(Duration.ofSeconds(30)));
  }

  private static String tables(TestDatabase tdb) {
    return tdb.jdbc().query("select * from build_worker").toString()
        + tdb.jdbc().query("select * from build_job")
        + tdb.jdbc().query("select * from build_job_event");
  }
}
