package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.QueueConfig;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.Await;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A local server for one test: the real runtime (HTTP on a free port, child-process workers, tick)
 * on the test's own database, with helpers to call it as a user and read its rows.
 */
final class TestServer implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Duration JOB_TIMEOUT = Duration.ofSeconds(60);

  final TestDatabase db;
  final LocalRuntime runtime;

  private TestServer(TestDatabase db, LocalRuntime runtime) {
    this.db = db;
    this.runtime = runtime;
  }

  /** Settings for tests: a free port, a quick tick and liveness check, no shutdown wait. */
  static LocalSettings settings(TestDatabase db, Path dataDir) {
    return LocalSettings.defaults()
        .withPort(0)
        .withDataDir(dataDir)
        .withDatabase(db.jdbcUrl(), null, null)
        .withTickInterval(Duration.ofMillis(200))
        .withShutdownGrace(Duration.ZERO)
        .withQueue(QueueConfig.defaults().withLivenessInterval(Duration.ofMillis(300)))
        // The tests' programs live in root-only temporary directories; HostileJobTest runs them as
        // nobody.
        .withJobUser(System.getProperty("user.name"));
  }

  static TestServer start(TestDatabase db, Path dataDir) {
    return start(db, settings(db, dataDir));
  }

  static TestServer start(TestDatabase db, LocalSettings settings) {
    return new TestServer(db, LocalRuntime.start(settings));
  }

  /** A user's token, as the CLI takes it. */
  String token(String user) {
    return runtime.tokens().mint(user, false, Duration.ofMinutes(10));
  }

  java.net.URI baseUri() {
    return runtime.baseUri();
  }

  ApiClient client(String user, boolean admin) {
    return new ApiClient(
        runtime.baseUri(), runtime.tokens().mint(user, admin, Duration.ofMinutes(10)));
  }

  /** Submits a demo job over HTTP and returns its id. */
  long submitDemo(String user, int steps, int stepMillis) {
    ObjectNode body = JSON.createObjectNode().put("kind", "demo");
    body.putObject("payload").put("steps", steps).put("stepMillis", stepMillis);
    ApiClient.Reply reply = client(user, false).post("jobs", body);
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }

  void setDedicated(String user, boolean dedicated) {
    ApiClient.Reply reply =
        client("operator", true)
            .put("users/" + user, JSON.createObjectNode().put("dedicatedWorker", dedicated));
    assertThat(reply.status()).as(reply.text()).isEqualTo(200);
  }

  /** The job as the API shows it to an admin. */
  JsonNode job(long id) {
    ApiClient.Reply reply = client("operator", true).get("jobs/" + id);
    assertThat(reply.status()).as(reply.text()).isEqualTo(200);
    return reply.json();
  }

  void awaitStatus(long id, String status) {
    Await.until(
        "job " + id + " to be " + status,
        JOB_TIMEOUT,
        () -> status.equals(jobRow(id).string("status")));
  }

  void awaitProgress(long id, int atLeast) {
    Await.until(
        "job " + id + " to reach progress " + atLeast,
        JOB_TIMEOUT,
        () -> jobRow(id).longValue("progress") >= atLeast);
  }

  /** Every worker exited, by evidence the server has seen. */
  void awaitWorkersExited() {
    Await.until("every worker to have exited", JOB_TIMEOUT, () -> liveWorkerRows().isEmpty());
  }

  Row jobRow(long id) {
    return db.jdbc()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  List<Row> workerRows() {
    return db.jdbc().query("select * from build_worker order by id");
  }

  List<Row> liveWorkerRows() {
    return db.jdbc().query("select * from build_worker where status <> 'exited' order by id");
  }

  Row workerOf(long jobId) {
    return db.jdbc()
        .queryOptional(
            "select w.* from build_worker w join build_job j on j.worker_id = w.id where j.id = :id",
            Params.of("id", jobId))
        .orElseThrow();
  }

  List<String> eventTypes(long jobId) {
    return db
        .jdbc()
        .query(
            "select type from build_job_event where job_id = :id order by id",
            Params.of("id", jobId))
        .stream()
        .map(r -> r.string("type"))
        .toList();
  }

  List<Row> events(long jobId) {
    return db.jdbc()
        .query(
            "select type, detail ->> 'message' as message from build_job_event where job_id = :id"
                + " order by id",
            Params.of("id", jobId));
  }

  /** The worker process a task id names, while it runs. */
  static Optional<ProcessHandle> process(String taskId) {
    LocalTaskId id = LocalTaskId.parse(taskId).orElseThrow();
    return ProcessHandle.of(id.pid()).filter(ProcessHandle::isAlive);
  }

  /** Shuts down and kills any worker it left running, so no test leaks processes into the next. */
  @Override
  public void close() {
    List<LocalTaskId> left = runtime.platform().liveWorkers();
    runtime.shutdown();
    left.forEach(id -> ProcessHandle.of(id.pid()).ifPresent(ProcessHandle::destroyForcibly));
  }
}
