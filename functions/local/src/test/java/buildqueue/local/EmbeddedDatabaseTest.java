package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.QueueConfig;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The default setup: embedded PostgreSQL whose data lives in the data directory. */
class EmbeddedDatabaseTest {
  @TempDir Path dataDir;

  private LocalSettings settings() {
    return LocalSettings.defaults()
        .withPort(0)
        .withDataDir(dataDir)
        .withTickInterval(Duration.ofMillis(200))
        .withShutdownGrace(Duration.ZERO)
        .withQueue(QueueConfig.defaults().withLivenessInterval(Duration.ofMillis(300)));
  }

  private static Row job(LocalRuntime runtime, long id) {
    return runtime
        .database()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  private static long submit(LocalRuntime runtime, String user, int steps, int stepMillis) {
    ApiClient client =
        new ApiClient(runtime.baseUri(), runtime.tokens().mint(user, false, Duration.ofMinutes(5)));
    ApiClient.Reply reply =
        client.post(
            "jobs",
            TestServer.JSON
                .createObjectNode()
                .put("kind", "demo")
                .set(
                    "payload",
                    TestServer.JSON
                        .createObjectNode()
                        .put("steps", steps)
                        .put("stepMillis", stepMillis)));
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }

  @Test
  void the_embedded_database_asks_every_role_for_its_password_and_the_server_keeps_them_owner_only()
      throws Exception {
    try (LocalRuntime runtime = LocalRuntime.start(settings())) {
      long id = submit(runtime, "ann", 1, 1);
      Await.until(
          "job " + id + " to succeed on a worker logged in as the worker role",
          Duration.ofSeconds(60),
          () -> "succeeded".equals(job(runtime, id).string("status")));

      Path file = dataDir.resolve(DatabasePasswords.FILE);
      assertThat(Files.getPosixFilePermissions(file))
          .isEqualTo(PosixFilePermissions.fromString("rw-------"));
      DatabasePasswords passwords = DatabasePasswords.loadOrCreate(dataDir);
      String url = "jdbc:postgresql://localhost:" + postgresPort() + "/postgres";
      for (String user : List.of("postgres", "buildqueue_worker")) {
        assertThatThrownBy(() -> connect(url, user, null))
            .as(user + " without a password")
            .isInstanceOf(SQLException.class);
        assertThatThrownBy(() -> connect(url, user, "guessed"))
            .as(user + " with a wrong password")
            .isInstanceOf(SQLException.class)
            .hasMessageContaining("password authentication failed");
      }
      try (Connection worker = connect(url, "buildqueue_worker", passwords.worker());
          Statement st = worker.createStatement()) {
        assertThatThrownBy(() -> st.executeQuery("select * from build_job"))
            .hasMessageContaining("permission denied");
      }
      try (Connection superuser = connect(url, "postgres", passwords.superuser())) {
        assertThat(superuser.isValid(5)).isTrue();
      }
    }
  }

  private int postgresPort() throws java.io.IOException {
    return Integer.parseInt(
        Files.readAllLines(dataDir.resolve("postgres").resolve("postmaster.pid")).get(3).strip());
  }

  private static Connection connect(String url, String user, String password) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user);
    if (password != null) {
      props.setProperty("password", password);
    }
    return DriverManager.getConnection(url, props);
  }

  @Test
  void a_worker_cut_off_by_a_restart_has_its_job_finished_by_the_next_server_with_its_progress() {
    long job;
    long waiting;
    LocalRuntime first = LocalRuntime.start(settings());
    try {
      job = submit(first, "bob", 40, 100);
      waiting = submit(first, "cy", 2, 10);
      long j = job;
      Await.until(
          "progress", Duration.ofSeconds(60), () -> job(first, j).longValue("progress") >= 2);
    } finally {
      first.shutdown(); // no grace: the embedded database stops under the running worker
    }
    assertThat(dataDir.resolve("postgres").resolve("PG_VERSION")).exists();

    try (LocalRuntime second = LocalRuntime.start(settings())) {
      long j = job;
      Await.until(
          "job " + j + " to succeed",
          Duration.ofSeconds(90),
          () -> "succeeded".equals(job(second, j).string("status")));
      Await.until(
          "job " + waiting + " to succeed",
          Duration.ofSeconds(30),
          () -> "succeeded".equals(job(second, waiting).string("status")));
      Row finished = job(second, job);
      assertThat(finished.longValue("attempts")).isEqualTo(2);
      assertThat(finished.longValue("recoveries")).as("it had made progress").isZero();
      assertThat(finished.longValue("progress")).isEqualTo(40);
    }
    assertThat(Files.exists(dataDir.resolve("workers"))).isTrue();
  }
}
