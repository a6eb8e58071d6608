package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Params;
import buildqueue.testing.ArtifactPublisher;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Artifacts through the whole local runtime, with real worker processes and a real program: it
 * writes three files under {@code $BUILDQUEUE_ARTIFACTS}; they are listed and downloaded
 * byte-identical; a worker SIGKILLed between its upload and its end publishes nothing, and the
 * retried attempt's files are the job's; a job past a limit fails naming it.
 */
@ExtendWith(PostgresExtension.class)
class ArtifactsEndToEndTest {
  /** Three files, one in a subdirectory, one binary; their content names the attempt. */
  private static final String PROGRAM =
      """
      #!/bin/sh
      set -eu
      echo "attempt $BUILDQUEUE_ATTEMPT" > "$BUILDQUEUE_ARTIFACTS/report.txt"
      mkdir -p "$BUILDQUEUE_ARTIFACTS/dist"
      printf 'app of attempt %s\\n' "$BUILDQUEUE_ATTEMPT" > "$BUILDQUEUE_ARTIFACTS/dist/app.tar.gz"
      head -c 70000 /dev/urandom > "$BUILDQUEUE_ARTIFACTS/random.bin"
      echo "wrote the artifacts"
      """;

  @TempDir Path dataDir;
  @TempDir Path programs;
  @TempDir Path downloads;
  private TestServer server;
  private TestDatabase db;

  @BeforeEach
  void start(TestDatabase db) throws Exception {
    this.db = db;
    Path sh = Files.writeString(programs.resolve("artifacts.sh"), PROGRAM);
    Path consumer =
        Files.writeString(
            programs.resolve("consumer.sh"),
            "#!/bin/sh\nset -eu\ncp \"$BUILDQUEUE_PARENT_ARTIFACTS/report.txt\""
                + " \"$BUILDQUEUE_ARTIFACTS/copied.txt\"\n");
    String catalogue =
        """
        {"kinds": {
          "three-files": {"command": ["sh", "%1$s"], "timeout": "1m"},
          "two-at-most": {"command": ["sh", "%1$s"], "timeout": "1m", "artifacts": {"maxFiles": 2}},
          "consumer": {"command": ["sh", "%2$s"], "timeout": "1m"}
        }}
        """
            .formatted(sh, consumer);
    Path kinds = Files.writeString(programs.resolve("kinds.json"), catalogue);
    server = TestServer.start(db, TestServer.settings(db, dataDir).withKindsFile(kinds));
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private long submit(String kind) {
    return submit("ada", kind, TestServer.JSON.createObjectNode());
  }

  private long submit(String user, String kind, ObjectNode payload) {
    ObjectNode body = TestServer.JSON.createObjectNode().put("kind", kind);
    body.set("payload", payload);
    ApiClient.Reply reply = server.client(user, false).post("jobs", body);
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }

  private JsonNode artifacts(long job) {
    ApiClient.Reply reply = server.client("ada", false).get("jobs/" + job + "/artifacts");
    assertThat(reply.status()).as(reply.text()).isEqualTo(200);
    return reply.json().path("artifacts");
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }

  private Path store() {
    return dataDir.resolve("artifacts");
  }

  @Test
  void a_program_writes_three_files_which_are_listed_and_downloaded_byte_identical()
      throws Exception {
    long job = submit("three-files");
    server.awaitStatus(job, "succeeded");

    JsonNode listed = artifacts(job);
    assertThat(listed)
        .extracting(a -> a.path("name").asText())
        .containsExactly("dist/app.tar.gz", "random.bin", "report.txt");
    long worker = server.jobRow(job).longValue("worker_id");
    Path attempt = store().resolve("jobs/" + job + "/attempt-1-worker-" + worker);
    for (JsonNode a : listed) {
      byte[] stored = Files.readAllBytes(attempt.resolve(a.path("name").asText()));
      Path out = downloads.resolve(a.path("name").asText().replace('/', '_'));
      assertThat(server.client("ada", false).download(a.path("url").asText().substring(1), out))
          .isNull();
      assertThat(Files.readAllBytes(out)).isEqualTo(stored);
      assertThat(sha256(Files.readAllBytes(out))).isEqualTo(a.path("sha256").asText());
      assertThat(a.path("bytes").asLong()).isEqualTo(stored.length);
    }
    assertThat(Files.readString(attempt.resolve("report.txt"))).isEqualTo("attempt 1\n");
    // Another user sees neither the list nor a file.
    assertThat(server.client("eve", false).get("jobs/" + job + "/artifacts").status())
        .isEqualTo(404);
    assertThat(
            server
                .client("eve", false)
                .download("jobs/" + job + "/artifacts/report.txt", downloads.resolve("x"))
                .status())
        .isEqualTo(404);
    // The CLI, as a user types it.
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Main main =
        new Main(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            System.err,
            Map.of("BUILDQUEUE_API_TOKEN", server.token("ada")));
    Path cliOut = downloads.resolve("from-cli.txt");
    assertThat(
            main.run(
                "artifacts",
                Long.toString(job),
                "--api-url",
                server.baseUri().toString(),
                "--get",
                "report.txt",
                "--out",
                cliOut.toString()))
        .isZero();
    assertThat(Files.readString(cliOut)).isEqualTo("attempt 1\n");
  }

  /**
   * The worker's end is held at the artifact table (an exclusive lock the test takes before the job
   * runs: the end blocks there after ending the job, uncommitted); the worker is SIGKILLed there,
   * and its session is terminated so the statement never commits (PostgreSQL would not notice the
   * closed socket before answering). That is a worker killed between its upload and its end.
   */
  @Test
  void a_worker_killed_between_upload_and_end_publishes_nothing_and_the_retry_publishes_its_own()
      throws Exception {
    long job;
    String task;
    try (Connection lock = db.dataSource().getConnection()) {
      lock.setAutoCommit(false);
      try (Statement s = lock.createStatement()) {
        s.execute("lock table build_job_artifact in exclusive mode");
      }
      job = submit("three-files");
      Await.until(
          "the worker's end to wait at the artifact table",
          TestServer.JOB_TIMEOUT,
          () -> !endsWaiting().isEmpty());
      task = server.workerOf(job).string("task_id");
      long firstWorker = server.jobRow(job).longValue("worker_id");
      assertThat(
              store().resolve("jobs/" + job + "/attempt-1-worker-" + firstWorker + "/report.txt"))
          .exists();
      TestServer.process(task).orElseThrow().destroyForcibly(); // SIGKILL
      for (long pid : endsWaiting()) {
        db.jdbc().query("select pg_terminate_backend(:pid::integer)", Params.of("pid", pid));
      }
      lock.rollback();
    }

    server.awaitStatus(job, "succeeded");

    assertThat(server.jobRow(job).intValue("attempts")).isEqualTo(2);
    long second = server.jobRow(job).longValue("worker_id");
    JsonNode listed = artifacts(job);
    assertThat(listed).hasSize(3);
    Path out = downloads.resolve("report.txt");
    server.client("ada", false).download("jobs/" + job + "/artifacts/report.txt", out);
    assertThat(Files.readString(out)).isEqualTo("attempt 2\n");
    assertThat(ArtifactPublisher.of(db.jdbc(), job))
        .containsExactly(new ArtifactPublisher(2, second));
    // The killed attempt's files are removed by the sweep once its worker's exit is recorded.
    Await.until(
        "the killed attempt's files to be removed",
        TestServer.JOB_TIMEOUT,
        () -> attemptsStored(job).equals(List.of("attempt-2-worker-" + second)));
    assertThat(
            db.jdbc()
                .query(
                    "select * from build_artifact_upload where job_id = :id", Params.of("id", job)))
        .isEmpty();
  }

  @Test
  void a_follow_up_naming_its_parents_artifacts_gets_them_and_another_users_job_does_not()
      throws Exception {
    long parent = submit("three-files");
    server.awaitStatus(parent, "succeeded");

    long child =
        submit("ada", "consumer", TestServer.JSON.createObjectNode().put("artifactsOf", parent));
    long stranger =
        submit("eve", "consumer", TestServer.JSON.createObjectNode().put("artifactsOf", parent));
    server.awaitStatus(child, "succeeded");
    server.awaitStatus(stranger, "failed");

    Path out = downloads.resolve("copied.txt");
    assertThat(server.client("ada", false).download("jobs/" + child + "/artifacts/copied.txt", out))
        .isNull();
    assertThat(Files.readString(out)).isEqualTo("attempt 1\n");
    assertThat(server.jobRow(stranger).string("error"))
        .contains("artifactsOf names job " + parent)
        .contains("not a succeeded job of this user's with artifacts");
  }

  private List<String> attemptsStored(long job) {
    try (var dirs = Files.list(store().resolve("jobs/" + job))) {
      return dirs.map(p -> p.getFileName().toString()).sorted().toList();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private List<Long> endsWaiting() {
    return db
        .jdbc()
        .query(
            "select pid from pg_stat_activity where wait_event_type = 'Lock'"
                + " and query like '%build_worker_end_publishing%'")
        .stream()
        .map(r -> r.longValue("pid"))
        .toList();
  }

  @Test
  void a_job_past_its_kinds_limit_fails_naming_it_and_stores_nothing() throws Exception {
    long job = submit("two-at-most");

    server.awaitStatus(job, "failed");

    assertThat(server.jobRow(job).string("error"))
        .contains("3 files")
        .contains("the limit (maxFiles) is 2")
        .contains("Nothing was published");
    assertThat(artifacts(job)).isEmpty();
    assertThat(store().resolve("jobs/" + job)).doesNotExist();
  }
}
