package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.QueueConfig;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The default setup: embedded PostgreSQL whose data lives in the data directory. */
class EmbeddedDatabaseTest {
  @TempDir Path dataDir;

  private LocalSettings settings() {
    return LocalSettings.defaults().withPort(0).withDataDir(dataDir)
        .withTickInterval(Duration.ofMillis(200))
        .withShutdownGrace(Duration.ZERO)
        .withQueue(QueueConfig.defaults().withLivenessInterval(Duration.ofMillis(300)));
  }

  private static Row job(LocalRuntime runtime, long id) {
    return runtime.database().queryOptional("select * from build_job where id = :id", Params.of("id", id)).orElseThrow();
  }

  private static long submit(LocalRuntime runtime, String user, int steps, int stepMillis) {
    ApiClient client = new ApiClient(runtime.baseUri(), runtime.tokens().mint(user, false, Duration.ofMinutes(5)));
    ApiClient.Reply reply = client.post("jobs", TestServer.JSON.createObjectNode().put("kind", "demo")
        .set("payload", TestServer.JSON.createObjectNode().put("steps", steps).put("stepMillis", stepMillis)));
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
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
      Await.until("progress", Duration.ofSeconds(60), () -> job(first, j).longValue("progress") >= 2);
    } finally {
      first.shutdown(); // no grace: the embedded database stops under the running worker
    }
    assertThat(dataDir.resolve("postgres").resolve("PG_VERSION")).exists();

    try (LocalRuntime second = LocalRuntime.start(settings())) {
      long j = job;
      Await.until("job " + j + " to succeed", Duration.ofSeconds(90),
          () -> "succeeded".equals(job(second, j).string("status")));
      Await.until("job " + waiting + " to succeed", Duration.ofSeconds(30),
          () -> "succeeded".equals(job(second, waiting).string("status")));
      Row finished = job(second, job);
      assertThat(finished.longValue("attempts")).isEqualTo(2);
      assertThat(finished.longValue("recoveries")).as("it had made progress").isZero();
      assertThat(finished.longValue("progress")).isEqualTo(40);
    }
    assertThat(Files.exists(dataDir.resolve("workers"))).isTrue();
  }
}
