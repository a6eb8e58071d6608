package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.QueueConfig;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.Await;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A hostile job on the local server, with its embedded PostgreSQL asking every role for a password:
 * it finds its worker's environment through /proc and uses the worker's database login and token
 * on everything it can think of. It can change its own job, and nothing else: every table is
 * refused to the worker role, the superuser will not take the worker's password, and another
 * worker's job is fenced off. (The server's own data directory is the local mode's limit: see the
 * README.)
 */
class HostileJobTest {
  @TempDir Path dataDir;
  @TempDir Path programs;

  @Test
  void a_job_with_every_credential_its_worker_has_can_change_its_own_job_and_nothing_else() throws Exception {
    String java = ProcessHandle.current().info().command().orElseThrow();
    String catalogue = """
        {"kinds": {"hostile": {"command": ["%s", "-cp", "%s", "buildqueue.local.HostileJob"], "timeout": "2m"}}}
        """.formatted(java, System.getProperty("java.class.path"));
    Path kinds = Files.writeString(programs.resolve("kinds.json"), catalogue);
    LocalSettings settings = LocalSettings.defaults().withPort(0).withDataDir(dataDir)
        .withTickInterval(Duration.ofMillis(200)).withShutdownGrace(Duration.ZERO)
        .withQueue(QueueConfig.defaults().withLivenessInterval(Duration.ofMillis(300)))
        .withKindsFile(kinds);
    try (LocalRuntime runtime = LocalRuntime.start(settings)) {
      // The victim: Bob's long job on his own worker.
      ApiClient admin = new ApiClient(runtime.baseUri(), runtime.tokens().mint("admin", true, Duration.ofMinutes(5)));
      assertThat(admin.put("users/bob", TestServer.JSON.createObjectNode().put("dedicatedWorker", true)).status())
          .isBetween(200, 204);
      long victim = submit(runtime, "bob", "demo", TestServer.JSON.createObjectNode().put("steps", 600).put("stepMillis", 100));
      Await.until("bob's job to run", Duration.ofSeconds(60), () -> "running".equals(job(runtime, victim).string("status")));
      long victimWorker = job(runtime, victim).longValue("worker_id");
      int victimProgress = job(runtime, victim).intValue("progress");

      long hostile = submit(runtime, "mallory", "hostile",
          TestServer.JSON.createObjectNode().put("victimWorker", victimWorker).put("victimJob", victim));
      Await.until("the hostile job to end", Duration.ofSeconds(90),
          () -> job(runtime, hostile).string("status").matches("succeeded|failed"));

      Map<String, String> results = results(runtime, hostile);
      assertThat(results).containsEntry("own-env-has-token", "absent")
          .containsEntry("own-env-has-database-password", "absent")
          .containsEntry("worker-env-through-proc", "ok")
          .containsEntry("worker-database-user", "buildqueue_worker")
          .containsEntry("superuser-with-the-workers-password", "denied")
          .containsEntry("superuser-without-a-password", "denied")
          .containsEntry("read-jobs", "denied")
          .containsEntry("read-workers", "denied")
          .containsEntry("change-jobs", "denied")
          .containsEntry("own-token-on-another-workers-id", "fenced")
          .containsEntry("own-worker-on-another-workers-job", "fenced")
          .containsEntry("own-worker-own-job", "ok");
      Row after = job(runtime, victim);
      assertThat(after.intValue("progress")).as("bob's progress moves only by his own worker").isNotEqualTo(99)
          .isGreaterThanOrEqualTo(victimProgress);
      assertThat(after.string("status")).isEqualTo("running");
      assertThat(after.longValue("worker_id")).isEqualTo(victimWorker);
    }
  }

  private static Map<String, String> results(LocalRuntime runtime, long job) {
    Map<String, String> out = new LinkedHashMap<>();
    Row log = runtime.database().queryOptional("select tail from build_job_log where job_id = :id", Params.of("id", job))
        .orElseThrow();
    for (String line : log.string("tail").split("\n")) {
      int at = line.indexOf("RESULT ");
      if (at >= 0) {
        String[] kv = line.substring(at + "RESULT ".length()).strip().split("=", 2);
        out.put(kv[0], kv[1]);
      }
    }
    return out;
  }

  private static Row job(LocalRuntime runtime, long id) {
    return runtime.database().queryOptional("select * from build_job where id = :id", Params.of("id", id)).orElseThrow();
  }

  private static long submit(LocalRuntime runtime, String user, String kind, ObjectNode payload) {
    ApiClient client = new ApiClient(runtime.baseUri(), runtime.tokens().mint(user, false, Duration.ofMinutes(5)));
    ApiClient.Reply reply = client.post("jobs", TestServer.JSON.createObjectNode().put("kind", kind).set("payload", payload));
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }
}
