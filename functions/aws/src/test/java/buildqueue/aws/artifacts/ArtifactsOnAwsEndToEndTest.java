package buildqueue.aws.artifacts;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.fake.DataApiTestAdapter;
import buildqueue.aws.fake.S3Fake;
import buildqueue.aws.lambda.EnqueueFunction;
import buildqueue.aws.lambda.QueueServices;
import buildqueue.aws.lambda.TaskStateChangeFunction;
import buildqueue.aws.lambda.TickFunction;
import buildqueue.aws.testing.ApiFunctionCalls;
import buildqueue.aws.testing.EventBridgeFake;
import buildqueue.aws.testing.MetricsCapture;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.testing.TestContext;
import buildqueue.aws.testing.TestServices;
import buildqueue.aws.worker.FargateWorkerMain;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.kinds.KindCatalogue;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ArtifactPublisher;
import buildqueue.testing.Await;
import buildqueue.testing.ChildWorker;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.QueueKindLimits;
import buildqueue.worker.exec.ProcessRunner;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPResponse;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Artifacts end to end on the AWS side (docs/architecture.md §4.10), every part the real one: the
 * API function ({@link EnqueueFunction}, driven with API Gateway's event shape), the stop handler
 * ({@link TaskStateChangeFunction}, with ECS's STOPPED event) and the tick ({@link TickFunction}),
 * all on the Data API fake with {@link S3ArtifactStore} on {@link S3Fake}; the worker is {@link
 * FargateWorkerMain} in a child JVM, as a Fargate task runs it, over JDBC to the test's PostgreSQL,
 * with its production wiring ({@code AwsServices.artifactStore} from {@code
 * BUILDQUEUE_ARTIFACTS_BUCKET}) and S3's address given the SDK's way, {@code AWS_ENDPOINT_URL_S3}
 * (as {@code PrimingTest} points its clients at a loopback server), so no production code knows
 * about the fake. A catalogue kind's program writes three files under {@code
 * $BUILDQUEUE_ARTIFACTS}: they are listed and downloaded through presigned URLs byte-identical; a
 * worker SIGKILLed between its upload and its end publishes nothing, the retried attempt's files
 * are the job's, and the tick's sweep removes the killed attempt's objects.
 */
@ExtendWith(PostgresExtension.class)
class ArtifactsOnAwsEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BUCKET = "stack-artifactsbucket-1a2b";
  private static final String KIND = "three-files";
  private static final String TASK_ARN =
      "arn:aws:ecs:eu-west-1:111122223333:task/buildqueue-workers/";

  /** A child JVM's start, an SDK's first call and a program, on a machine shared with others. */
  private static final Duration WORKER_TIMEOUT = Duration.ofMinutes(2);

  /**
   * Three files, one in a subdirectory, one binary; their content names the attempt. A copy of what
   * the attempt wrote is kept under $WROTE, which the worker does not delete with the attempt's
   * directory: the downloads are compared with it.
   */
  private static final String PROGRAM =
      """
      set -eu
      echo "attempt $BUILDQUEUE_ATTEMPT" > "$BUILDQUEUE_ARTIFACTS/report.txt"
      mkdir -p "$BUILDQUEUE_ARTIFACTS/dist"
      printf 'app of attempt %s\\n' "$BUILDQUEUE_ATTEMPT" > "$BUILDQUEUE_ARTIFACTS/dist/app.tar.gz"
      head -c 70000 /dev/urandom > "$BUILDQUEUE_ARTIFACTS/random.bin"
      mkdir -p "$WROTE/attempt-$BUILDQUEUE_ATTEMPT"
      cp -R "$BUILDQUEUE_ARTIFACTS/." "$WROTE/attempt-$BUILDQUEUE_ATTEMPT/"
      echo "wrote the artifacts"
      """;

  private static final List<String> NAMES = List.of("dist/app.tar.gz", "random.bin", "report.txt");

  @TempDir Path dir;
  @RegisterExtension final ChildWorker firstTask = new ChildWorker();
  @RegisterExtension final ChildWorker secondTask = new ChildWorker();

  private final ManualPlatform platform = new ManualPlatform();
  private final EventBridgeFake eventBridge = new EventBridgeFake();
  private final HttpClient http = HttpClient.newHttpClient();
  private final MetricsCapture tickMetrics = new MetricsCapture();
  private S3Fake s3;
  private TestDatabase tdb;
  private Path kinds;
  private Path wrote;
  private QueueServices api;
  private QueueServices stopHandler;
  private QueueServices tick;

  @BeforeEach
  void start(TestDatabase tdb) throws Exception {
    this.tdb = tdb;
    s3 = S3Fake.start().createBucket(BUCKET);
    wrote = Files.createDirectories(dir.resolve("wrote"));
    ObjectNode kind = JSON.createObjectNode();
    kind.putArray("command").add("sh").add("-c").add(PROGRAM);
    kind.put("timeout", "5m");
    kind.putObject("env").put("WROTE", wrote.toString());
    ObjectNode catalogue = JSON.createObjectNode();
    catalogue.putObject("kinds").set(KIND, kind);
    kinds = Files.writeString(dir.resolve("kinds.json"), JSON.writeValueAsString(catalogue));
    // Each function its own services, as each Lambda holds its own; one database, one ECS.
    Database dataApi = new DataApiTestAdapter().open(tdb);
    api = services(Component.ENQUEUE, dataApi, new MetricsCapture());
    stopHandler = services(Component.TASK_STATE_CHANGE, dataApi, new MetricsCapture());
    tick = services(Component.TICK, dataApi, tickMetrics);
  }

  @AfterEach
  void stop() {
    s3.close();
    eventBridge.close();
  }

  /**
   * What {@code AwsServices.queueServices} builds, on the fakes: the catalogue's kinds for the API,
   * the database's clock (the worker's too), and the S3 store on the bucket.
   */
  private QueueServices services(Component component, Database db, MetricsCapture metrics) {
    QueueConfig config = QueueHarness.testConfig();
    return TestServices.of(
            component,
            db,
            platform,
            eventBridge,
            QueueClock.DATABASE,
            config,
            metrics,
            KindCatalogue.load(kinds, QueueKindLimits.of(config)).registry())
        .withArtifacts(
            S3ArtifactStore.create(S3Fake.REGION, BUCKET, s3.endpoint(), S3Fake.credentials()));
  }

  @Test
  void three_files_a_program_wrote_are_listed_and_downloaded_byte_identical_from_s3()
      throws Exception {
    String arn = newTaskArn();
    platform.nextOutcomes(new LaunchOutcome.Started(arn));
    long job = submit();
    WorkerLaunch launch = platform.lastLaunch();

    Process task = firstTask.start(FargateWorkerMain.class, "256m", workerEnv(launch));

    assertThat(task.waitFor(WORKER_TIMEOUT.toSeconds(), TimeUnit.SECONDS))
        .as("the worker to exit; its output:%n%s", firstTask.output())
        .isTrue();
    assertThat(task.exitValue()).as(firstTask.output()).isZero();
    assertThat(job(job).string("status")).isEqualTo("succeeded");
    JsonNode listing = listing(job);
    assertThat(listing.path("status").asText()).isEqualTo("succeeded");
    JsonNode listed = listing.path("artifacts");
    assertThat(listed).extracting(a -> a.path("name").asText()).containsExactlyElementsOf(NAMES);
    AttemptKey attempt = new AttemptKey(job, 1, launch.workerId());
    for (JsonNode a : listed) {
      String name = a.path("name").asText();
      byte[] written = Files.readAllBytes(wrote.resolve("attempt-1").resolve(name));
      byte[] downloaded = download(a, attempt);
      assertThat(downloaded).as(name).isEqualTo(written);
      assertThat(sha256(downloaded)).as(name).isEqualTo(a.path("sha256").asText());
      assertThat(a.path("bytes").asLong()).as(name).isEqualTo(written.length);
    }
    assertThat(Files.readString(wrote.resolve("attempt-1/report.txt"))).isEqualTo("attempt 1\n");
    assertThat(Files.size(wrote.resolve("attempt-1/random.bin"))).isEqualTo(70_000);
  }

  /**
   * The worker's end is held at the artifact table (an exclusive lock taken before the job runs:
   * the end blocks there after ending the job, uncommitted); the worker's JVM is SIGKILLed there,
   * and its session is terminated so the statement never commits (PostgreSQL would not notice the
   * closed socket before answering). That is a task killed between its upload and its end, as
   * {@code ArtifactsEndToEndTest} makes one locally.
   */
  @Test
  void
      a_worker_killed_after_its_upload_publishes_nothing_and_the_retried_attempts_files_are_the_jobs()
          throws Exception {
    String firstArn = newTaskArn();
    String secondArn = newTaskArn();
    platform.nextOutcomes(
        new LaunchOutcome.Started(firstArn), new LaunchOutcome.Started(secondArn));
    long job;
    WorkerLaunch first;
    try (Connection lock = tdb.dataSource().getConnection()) {
      lock.setAutoCommit(false);
      try (Statement s = lock.createStatement()) {
        s.execute("lock table build_job_artifact in exclusive mode");
      }
      job = submit();
      first = platform.lastLaunch();
      Process task = firstTask.start(FargateWorkerMain.class, "256m", workerEnv(first));
      Await.until(
          "the worker's end to wait at the artifact table",
          WORKER_TIMEOUT,
          () -> {
            if (!task.isAlive()) {
              throw new AssertionError("the worker exited early:\n" + firstTask.output());
            }
            return !endsWaiting().isEmpty();
          });
      AttemptKey killed = new AttemptKey(job, 1, first.workerId());
      assertThat(s3.keys(BUCKET))
          .as("the first attempt uploaded its files before its end")
          .containsExactlyElementsOf(keys(killed));

      task.destroyForcibly();
      assertThat(task.waitFor(WORKER_TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
      assertThat(task.exitValue()).as("a JVM ended by SIGKILL").isEqualTo(137);
      for (long pid : endsWaiting()) {
        tdb.jdbc().query("select pg_terminate_backend(:pid::integer)", Params.of("pid", pid));
      }
      lock.rollback();
    }

    JsonNode unpublished = listing(job);
    assertThat(unpublished.path("status").asText()).isEqualTo("running");
    assertThat(unpublished.path("artifacts")).as("the killed attempt published nothing").isEmpty();

    // ECS's evidence of the task's exit: the job goes back to its lane and is dispatched anew.
    assertThat(stopped(first, firstArn, 137))
        .isEqualTo(TaskStateChangeFunction.Outcome.WORKER_EXITED);
    WorkerLaunch second = platform.lastLaunch();
    assertThat(second.workerId()).isNotEqualTo(first.workerId());
    Process retry = secondTask.start(FargateWorkerMain.class, "256m", workerEnv(second));
    assertThat(retry.waitFor(WORKER_TIMEOUT.toSeconds(), TimeUnit.SECONDS))
        .as("the second worker to exit; its output:%n%s", secondTask.output())
        .isTrue();
    assertThat(retry.exitValue()).as(secondTask.output()).isZero();
    assertThat(stopped(second, secondArn, 0))
        .isEqualTo(TaskStateChangeFunction.Outcome.WORKER_EXITED);

    Row row = job(job);
    assertThat(row.string("status")).isEqualTo("succeeded");
    assertThat(row.intValue("attempts")).isEqualTo(2);
    AttemptKey retried = new AttemptKey(job, 2, second.workerId());
    JsonNode listed = listing(job).path("artifacts");
    assertThat(listed).extracting(a -> a.path("name").asText()).containsExactlyElementsOf(NAMES);
    for (JsonNode a : listed) {
      String name = a.path("name").asText();
      byte[] downloaded = download(a, retried);
      assertThat(downloaded)
          .as(name)
          .isEqualTo(Files.readAllBytes(wrote.resolve("attempt-2").resolve(name)));
      assertThat(sha256(downloaded)).as(name).isEqualTo(a.path("sha256").asText());
    }
    assertThat(Files.readString(wrote.resolve("attempt-2/report.txt"))).isEqualTo("attempt 2\n");
    assertThat(ArtifactPublisher.of(tdb.jdbc(), job))
        .containsExactly(new ArtifactPublisher(2, second.workerId()));

    // The killed attempt's objects stay until a tick's sweep: nothing else may remove them.
    AttemptKey killed = new AttemptKey(job, 1, first.workerId());
    List<String> both = new ArrayList<>(keys(killed));
    both.addAll(keys(retried));
    assertThat(s3.keys(BUCKET)).containsExactlyElementsOf(both);

    new TickFunction(() -> tick)
        .handleRequest(schedule(), TestContext.withTimeLeft(Duration.ofSeconds(55)));

    assertThat(s3.keys(BUCKET)).containsExactlyElementsOf(keys(retried));
    assertThat(tickMetrics.last("tick").get("ArtifactsSwept").asLong()).isEqualTo(1);
    assertThat(
            tdb.jdbc()
                .query(
                    "select * from build_artifact_upload where job_id = :id", Params.of("id", job)))
        .isEmpty();
  }

  // ---- the worker

  private Map<String, String> workerEnv(WorkerLaunch launch) throws IOException {
    Map<String, String> env = new HashMap<>();
    env.put(AwsSettings.KINDS_FILE, kinds.toString());
    env.put(AwsSettings.JDBC_URL, tdb.jdbcUrl());
    env.put(AwsSettings.WORKER_ID, Long.toString(launch.workerId()));
    env.put(AwsSettings.WORKER_TOKEN, launch.token().toString());
    env.put(
        ProcessRunner.WORK_DIR,
        Files.createDirectories(dir.resolve("work-" + launch.workerId())).toString());
    env.put(AwsSettings.ARTIFACTS_BUCKET, BUCKET);
    env.put(AwsSettings.AWS_REGION, S3Fake.REGION);
    // The task role's credentials come from the SDK's default chain; here the fake's.
    env.put("AWS_ACCESS_KEY_ID", S3Fake.ACCESS_KEY);
    env.put("AWS_SECRET_ACCESS_KEY", S3Fake.SECRET_KEY);
    env.put("AWS_ENDPOINT_URL_S3", s3.endpoint().toString());
    return env;
  }

  /** The sessions of worker ends waiting for a lock, in this test's database. */
  private List<Long> endsWaiting() {
    return tdb
        .jdbc()
        .query(
            "select pid from pg_stat_activity where wait_event_type = 'Lock'"
                + " and datname = current_database()"
                + " and query like '%build_worker_end_publishing%'")
        .stream()
        .map(r -> r.longValue("pid"))
        .toList();
  }

  // ---- the API function, as API Gateway invokes it

  private long submit() throws Exception {
    ObjectNode event = SampleEvents.tree("api-gateway-post-jobs.json");
    event
        .put("isBase64Encoded", false)
        .put("body", "{\"kind\": \"" + KIND + "\", \"payload\": {}}");
    APIGatewayV2HTTPResponse r = invoke(event);
    assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(201);
    return JSON.readTree(r.getBody()).get("id").asLong();
  }

  private JsonNode listing(long job) throws Exception {
    APIGatewayV2HTTPResponse r = get("/jobs/" + job + "/artifacts");
    assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(200);
    return JSON.readTree(r.getBody());
  }

  /**
   * The listed artifact's download: a 302 to a URL presigned for the attempt's object, fetched as a
   * client would, with no token.
   */
  private byte[] download(JsonNode listed, AttemptKey attempt) throws Exception {
    String name = listed.path("name").asText();
    APIGatewayV2HTTPResponse r = get(listed.path("url").asText());
    assertThat(r.getStatusCode()).as(name).isEqualTo(302);
    assertThat(r.getHeaders())
        .containsEntry("Buildqueue-Artifact-Sha256", listed.path("sha256").asText());
    URI location = URI.create(r.getHeaders().get("Location"));
    assertThat(location.getPath()).isEqualTo("/" + BUCKET + "/" + attempt.prefix() + name);
    assertThat(location.getRawQuery()).contains("X-Amz-Signature=");
    HttpResponse<byte[]> fetched =
        http.send(
            HttpRequest.newBuilder(location).GET().build(),
            HttpResponse.BodyHandlers.ofByteArray());
    assertThat(fetched.statusCode())
        .as("%s: %s", name, new String(fetched.body(), StandardCharsets.UTF_8))
        .isEqualTo(200);
    return fetched.body();
  }

  private APIGatewayV2HTTPResponse get(String path) {
    ObjectNode event = SampleEvents.tree("api-gateway-post-jobs.json");
    event.put("rawPath", path).put("rawQueryString", "").put("routeKey", "GET " + path);
    ((ObjectNode) event.get("requestContext").get("http")).put("method", "GET").put("path", path);
    event.remove("body");
    event.put("isBase64Encoded", false);
    return invoke(event);
  }

  /** Invokes the API function as Lambda does, each answer held to openapi.json. */
  private APIGatewayV2HTTPResponse invoke(ObjectNode event) {
    return ApiFunctionCalls.invoke(api, event);
  }

  // ---- the stop handler and the tick, on the events EventBridge delivers

  /** ECS's STOPPED event for the launch's task, its container having exited with {@code exit}. */
  private TaskStateChangeFunction.Outcome stopped(WorkerLaunch launch, String taskArn, int exit) {
    ObjectNode event = SampleEvents.tree("ecs-task-stopped.json");
    ObjectNode detail = (ObjectNode) event.get("detail");
    detail.put("taskArn", taskArn).put("startedBy", launch.startedBy());
    ((ArrayNode) event.get("resources")).removeAll().add(taskArn);
    for (JsonNode c : detail.get("containers")) {
      ((ObjectNode) c).put("taskArn", taskArn).put("exitCode", exit);
    }
    for (JsonNode v : detail.get("overrides").get("containerOverrides").get(0).get("environment")) {
      String name = v.get("name").asText();
      if (name.equals(AwsSettings.WORKER_ID)) {
        ((ObjectNode) v).put("value", Long.toString(launch.workerId()));
      } else if (name.equals(AwsSettings.WORKER_TOKEN)) {
        ((ObjectNode) v).put("value", launch.token().toString());
      }
    }
    return new TaskStateChangeFunction(() -> stopHandler).handle(SampleEvents.bytes(event));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> schedule() {
    return SampleEvents.asLambdaEvent(SampleEvents.bytes("schedule-tick.json"), Map.class);
  }

  // ---- reading back

  private Row job(long id) {
    return tdb.jdbc()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  private static List<String> keys(AttemptKey attempt) {
    return NAMES.stream().map(n -> attempt.prefix() + n).toList();
  }

  private static String newTaskArn() {
    return TASK_ARN + UUID.randomUUID().toString().replace("-", "");
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }
}
