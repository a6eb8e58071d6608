package buildqueue.aws.lambda;

import buildqueue.aws.db.DataApiClients;
import buildqueue.aws.db.DataApiDatabase;
import buildqueue.aws.db.DataApiSettings;
import buildqueue.aws.ecs.EcsClients;
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

/**
 * Part of SnapStart priming ({@link Priming}): the SDK calls a first event makes (Data API
 * statements and a transaction through the queue's own {@link DataApiDatabase}, RunTask,
 * DescribeTasks, StopTask, PutEvents), each once, against a loopback HTTP server in this JVM that
 * answers every request with an empty JSON object. Their request and answer paths (marshalling,
 * signing, the HTTP client, unmarshalling) are then loaded and run before the snapshot.
 *
 * <p>It calls neither AWS nor the database: clients of its own, pointed at the loopback server,
 * with fixed credentials that sign nothing anyone checks (so the credential chain, which on
 * SnapStart may fetch over HTTP, is not run), all closed with the server before the snapshot. The
 * function's real clients stay unused until the first event, after restore.
 */
final class Rehearsal implements AutoCloseable {
  private static final String REGION = "us-east-1";
  private static final AwsCredentialsProvider NOBODY =
      StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIAPRIMINGREHEARSAL", "priming-rehearsal"));

  private final HttpServer server;
  private final URI endpoint;
  private final java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();

  private Rehearsal() {
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext("/", exchange -> {
      exchange.getRequestBody().readAllBytes();
      requests.incrementAndGet();
      byte[] empty = "{}".getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "application/x-amz-json-1.1");
      exchange.sendResponseHeaders(200, empty.length);
      exchange.getResponseBody().write(empty);
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
    DataApiSettings settings = new DataApiSettings(REGION, Optional.of(endpoint),
        "arn:aws:rds:us-east-1:111122223333:cluster:priming",
        "arn:aws:secretsmanager:us-east-1:111122223333:secret:priming-AbCdEf", "priming");
    try (RdsDataClient client = DataApiClients.create(settings, NOBODY)) {
      Database db = new DataApiDatabase(client, settings);
      quietly(() -> db.query("select :a as a, :b as b, :c as c",
          Params.of("a", 1L, "b", "text", "c", Instant.EPOCH)));
      quietly(() -> db.transaction(tx -> tx.update("select :a", Params.of("a", 1L))));
    }
    return this;
  }

  /** RunTask, DescribeTasks and StopTask, shaped as the platform sends them. */
  Rehearsal ecs() {
    try (EcsClient ecs = EcsClients.create(EcsClients.Settings.defaults(REGION).withEndpoint(endpoint), NOBODY)) {
      quietly(() -> ecs.runTask(r -> r.cluster("priming").taskDefinition("priming").launchType(LaunchType.FARGATE)
          .count(1).clientToken("00000000-0000-0000-0000-000000000000").startedBy("bq-0")
          .networkConfiguration(n -> n.awsvpcConfiguration(v -> v.subnets("subnet-0").assignPublicIp(AssignPublicIp.DISABLED)))
          .overrides(o -> o.containerOverrides(c -> c.name("worker").environment(e -> e.name("N").value("V"))))));
      quietly(() -> ecs.describeTasks(r -> r.cluster("priming").tasks(List.of("arn:aws:ecs:us-east-1:111122223333:task/priming/0"))));
      quietly(() -> ecs.stopTask(r -> r.cluster("priming").task("arn:aws:ecs:us-east-1:111122223333:task/priming/0").reason("priming")));
    }
    return this;
  }

  /** One PutEvents. */
  Rehearsal eventBridge() {
    try (EventBridgeClient events = EventBridgeClient.builder().region(Region.of(REGION)).endpointOverride(endpoint)
        .credentialsProvider(NOBODY).httpClient(UrlConnectionHttpClient.create()).build()) {
      quietly(() -> events.putEvents(r -> r.entries(PutEventsRequestEntry.builder().source("buildqueue")
          .detailType("Build Job State Change").detail("{}").eventBusName("default").build())));
    }
    return this;
  }

  /** How many requests the loopback server answered. */
  int requests() {
    return requests.get();
  }

  @Override
  public void close() {
    server.stop(0);
  }

  /** An answer the code makes nothing of (an empty object) may fail; the path ran, which is the point. */
  private static void quietly(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException expected) {
      // Expected for some calls: see above.
    }
  }
}
