package buildqueue.aws.lambda;

import buildqueue.aws.db.DataApiClients;
import buildqueue.aws.db.DataApiDatabase;
import buildqueue.aws.db.DataApiSettings;
import buildqueue.aws.db.WorkerRolePassword;
import buildqueue.aws.ecs.EcsClients;
import buildqueue.aws.webhooks.WebhookDeliveryStarter;
import buildqueue.db.Database;
import buildqueue.db.Params;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.ecs.EcsClient;
import software.amazon.awssdk.services.ecs.model.AssignPublicIp;
import software.amazon.awssdk.services.ecs.model.LaunchType;
import software.amazon.awssdk.services.eventbridge.EventBridgeClient;
import software.amazon.awssdk.services.eventbridge.model.PutEventsRequestEntry;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;

/**
 * Part of SnapStart priming ({@link Priming}): the SDK calls a first event makes (Data API
 * statements and a transaction through the queue's own {@link DataApiDatabase}, RunTask,
 * DescribeTasks, StopTask, PutEvents, GetSecretValue, Lambda's Invoke), against a loopback HTTP
 * server in this JVM that answers each with a fixed answer of the shape the real service sends (a
 * Data API result with a row of every kind of value the queue reads, a started task, an accepted
 * event, a secret). Their request and answer paths (marshalling, signing, the HTTP client,
 * unmarshalling, the adapter's reading of rows) are then loaded and run before the snapshot, each
 * {@link Priming#ROUNDS} times (25): often enough for the JIT to compile the hot ones, which the
 * snapshot keeps, where a path run once stays interpreted and the first event after a restore runs
 * it at the interpreter's pace.
 *
 * <p>It calls neither AWS nor the database: clients of its own, pointed at the loopback server,
 * with fixed credentials that sign nothing anyone checks (so the credential chain, which on
 * SnapStart may fetch over HTTP, is not run), all closed with the server before the snapshot. The
 * function's real clients stay unused until the first event, after restore. Its answers hold no
 * random value: fixed ids, a fixed "secret" no one uses.
 */
final class Rehearsal implements AutoCloseable {
  private static final String REGION = "us-east-1";

  /**
   * A statement's text as long as the queue's (0.2 to 6 KB): the request's marshalling escapes it
   * and the signature hashes it, loops that a short text would leave uncompiled.
   */
  private static final String QUEUE_SIZED_TAIL =
      "\n  -- as long as a statement of the queue, whose text the request escapes and the signature hashes"
          .repeat(30);

  /** A Data API result: one row with a value of each kind the queue's statements read. */
  private static final String EXECUTE_ANSWER =
      """
      {"columnMetadata": [
         {"name": "id", "label": "id", "typeName": "int8", "type": -5},
         {"name": "status", "label": "status", "typeName": "text", "type": 12},
         {"name": "at", "label": "at", "typeName": "timestamptz", "type": 93},
         {"name": "ok", "label": "ok", "typeName": "bool", "type": -7},
         {"name": "detail", "label": "detail", "typeName": "jsonb", "type": 1111},
         {"name": "share", "label": "share", "typeName": "float8", "type": 8},
         {"name": "gone", "label": "gone", "typeName": "text", "type": 12}],
       "records": [[{"longValue": 1}, {"stringValue": "queued"}, {"stringValue": "2026-01-01 00:00:00.123456"},
         {"booleanValue": true}, {"stringValue": "{\\"a\\": 1}"}, {"doubleValue": 0.5}, {"isNull": true}]],
       "numberOfRecordsUpdated": 1}
      """;

  private static final String TASK =
      """
      {"taskArn": "arn:aws:ecs:us-east-1:111122223333:task/priming/0", "clusterArn": "arn:aws:ecs:us-east-1:111122223333:cluster/priming",
       "taskDefinitionArn": "arn:aws:ecs:us-east-1:111122223333:task-definition/priming:1", "lastStatus": "%s",
       "desiredStatus": "%s", "startedBy": "bq-0", "createdAt": 1767225600.0, "launchType": "FARGATE",
       "containers": [{"name": "worker", "lastStatus": "%s", "exitCode": 0}],
       "overrides": {"containerOverrides": [{"name": "worker", "environment": [{"name": "N", "value": "V"}]}]}}""";

  /** Answers by the request's {@code X-Amz-Target} (JSON 1.1 services) or path (the Data API). */
  private static final java.util.Map<String, String> ANSWERS =
      java.util.Map.of(
          "/Execute",
          EXECUTE_ANSWER,
          "/BeginTransaction",
          "{\"transactionId\": \"priming\"}",
          "/CommitTransaction",
          "{\"transactionStatus\": \"Transaction Committed\"}",
          "AmazonEC2ContainerServiceV20141113.RunTask",
          "{\"tasks\": ["
              + TASK.formatted("PROVISIONING", "RUNNING", "PENDING")
              + "], \"failures\": []}",
          "AmazonEC2ContainerServiceV20141113.DescribeTasks",
          "{\"tasks\": ["
              + TASK.formatted("STOPPED", "STOPPED", "STOPPED")
              + "], \"failures\": [{\"arn\": \"x\", \"reason\": \"MISSING\"}]}",
          "AmazonEC2ContainerServiceV20141113.StopTask",
          "{\"task\": " + TASK.formatted("RUNNING", "STOPPED", "RUNNING") + "}",
          "AWSEvents.PutEvents",
          "{\"FailedEntryCount\": 0, \"Entries\": [{\"EventId\": \"priming\"}]}",
          "secretsmanager.GetSecretValue",
          "{\"ARN\": \"priming\", \"Name\": \"priming\", \"SecretString\": \"{\\\"password\\\": \\\"priming\\\"}\"}");

  private static final AwsCredentialsProvider NOBODY =
      StaticCredentialsProvider.create(
          AwsBasicCredentials.create("AKIAPRIMINGREHEARSAL", "priming-rehearsal"));

  private final HttpServer server;
  private final URI endpoint;
  private final java.util.concurrent.atomic.AtomicInteger requests =
      new java.util.concurrent.atomic.AtomicInteger();

  private Rehearsal() {
    // Without it the JDK's server sends an answer's headers and body in two packets and the second
    // waits for the client's delayed ACK (40 ms a call). Read when the JVM's first such server is
    // made; in a Lambda this is the only one.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext(
        "/",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          requests.incrementAndGet();
          if (exchange.getRequestURI().getPath().endsWith("/invocations")) {
            exchange.sendResponseHeaders(202, -1); // Lambda's answer to an asynchronous Invoke
            exchange.close();
            return;
          }
          String target = exchange.getRequestHeaders().getFirst("X-Amz-Target");
          String answer =
              ANSWERS.getOrDefault(
                  target != null ? target : exchange.getRequestURI().getPath(), "{}");
          byte[] body = answer.getBytes(StandardCharsets.UTF_8);
          exchange
              .getResponseHeaders()
              .set(
                  "Content-Type",
                  target != null ? "application/x-amz-json-1.1" : "application/json");
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    server.start();
    endpoint = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  static Rehearsal start() {
    return new Rehearsal();
  }

  /** A statement, and a transaction of two, through the queue's Data API adapter. */
  Rehearsal dataApi() {
    DataApiSettings settings =
        new DataApiSettings(
            REGION,
            Optional.of(endpoint),
            "arn:aws:rds:us-east-1:111122223333:cluster:priming",
            "arn:aws:secretsmanager:us-east-1:111122223333:secret:priming-AbCdEf",
            "priming");
    try (RdsDataClient client = DataApiClients.create(settings, NOBODY)) {
      Database db = new DataApiDatabase(client, settings);
      for (int i = 0; i < Priming.ROUNDS; i++) {
        quietly(
            () ->
                db.query(
                    "select :a as a, :b as b, :c as c" + QUEUE_SIZED_TAIL,
                    Params.of("a", 1L, "b", "text", "c", Instant.EPOCH)));
        quietly(
            () ->
                db.transaction(
                    tx -> tx.update("select :a" + QUEUE_SIZED_TAIL, Params.of("a", 1L))));
      }
    }
    return this;
  }

  /** RunTask, DescribeTasks and StopTask, shaped as the platform sends them. */
  Rehearsal ecs() {
    try (EcsClient ecs =
        EcsClients.create(EcsClients.Settings.defaults(REGION).withEndpoint(endpoint), NOBODY)) {
      for (int i = 0; i < Priming.ROUNDS; i++) {
        ecsCalls(ecs);
      }
    }
    return this;
  }

  private static void ecsCalls(EcsClient ecs) {
    quietly(
        () ->
            ecs.runTask(
                r ->
                    r.cluster("priming")
                        .taskDefinition("priming")
                        .launchType(LaunchType.FARGATE)
                        .count(1)
                        .clientToken("00000000-0000-0000-0000-000000000000")
                        .startedBy("bq-0")
                        .networkConfiguration(
                            n ->
                                n.awsvpcConfiguration(
                                    v ->
                                        v.subnets("subnet-0")
                                            .assignPublicIp(AssignPublicIp.DISABLED)))
                        .overrides(
                            o ->
                                o.containerOverrides(
                                    c ->
                                        c.name("worker")
                                            .environment(e -> e.name("N").value("V"))))));
    quietly(
        () ->
            ecs.describeTasks(
                r ->
                    r.cluster("priming")
                        .tasks(List.of("arn:aws:ecs:us-east-1:111122223333:task/priming/0"))));
    quietly(
        () ->
            ecs.stopTask(
                r ->
                    r.cluster("priming")
                        .task("arn:aws:ecs:us-east-1:111122223333:task/priming/0")
                        .reason("priming")));
  }

  /** PutEvents. */
  Rehearsal eventBridge() {
    try (EventBridgeClient events =
        EventBridgeClient.builder()
            .region(Region.of(REGION))
            .endpointOverride(endpoint)
            .credentialsProvider(NOBODY)
            .httpClient(UrlConnectionHttpClient.create())
            .build()) {
      for (int i = 0; i < Priming.ROUNDS; i++) {
        quietly(
            () ->
                events.putEvents(
                    r ->
                        r.entries(
                            PutEventsRequestEntry.builder()
                                .source("buildqueue")
                                .detailType("Build Job State Change")
                                .detail("{}")
                                .eventBusName("default")
                                .build())));
      }
    }
    return this;
  }

  /**
   * An asynchronous Invoke, as the tick starts a webhook delivery pass ({@link
   * WebhookDeliveryStarter}); the loopback server answers it as Lambda does, an empty 202.
   */
  Rehearsal lambda() {
    try (WebhookDeliveryStarter starter =
        WebhookDeliveryStarter.create(
            REGION,
            "arn:aws:lambda:us-east-1:111122223333:function:priming:live",
            endpoint,
            NOBODY)) {
      for (int i = 0; i < Priming.ROUNDS; i++) {
        quietly(() -> starter.start("tick", "00000000-0000-0000-0000-000000000000"));
      }
    }
    return this;
  }

  /** The worker role's password read as the schema function reads it, once. */
  Rehearsal secretsManager() {
    try (SecretsManagerClient secrets =
        SecretsManagerClient.builder()
            .region(Region.of(REGION))
            .endpointOverride(endpoint)
            .credentialsProvider(NOBODY)
            .httpClientBuilder(UrlConnectionHttpClient.builder())
            .build()) {
      quietly(
          () ->
              WorkerRolePassword.read(
                  secrets, "arn:aws:secretsmanager:us-east-1:111122223333:secret:priming-AbCdEf"));
    }
    return this;
  }

  /** The loopback server's address, for a call of the function's own to rehearse against. */
  URI endpoint() {
    return endpoint;
  }

  /** How many requests the loopback server answered. */
  int requests() {
    return requests.get();
  }

  @Override
  public void close() {
    server.stop(0);
  }

  /**
   * A call whose answer the code refuses (its fixed answer does not fit) still ran its path, which
   * is the point.
   */
  private static void quietly(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException expected) {
      // Expected for some calls: see above.
    }
  }
}
