package buildqueue.aws.worker;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.testing.MetricsCapture;
import buildqueue.core.BuildQueue;
import buildqueue.db.Json;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.CommandRunners;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.WorkerProcess;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

@ExtendWith(PostgresExtension.class)
class FargateWorkerMainTest {
  private static final String KINDS =
      "{\"kinds\": {\"render\": {\"command\": [\"node\", \"r.js\"], \"timeout\": \"15m\"}}}";

  @TempDir static Path dir;

  private static final WorkerProcess MUST_NOT_HALT =
      why -> {
        throw new AssertionError("the worker tried to halt: " + why);
      };

  /** A job dispatched to a worker whose launch the platform only recorded, as RunTask would. */
  private static WorkerLaunch dispatched(
      TestDatabase tdb, ManualPlatform platform, String payload) {
    return dispatched(tdb, platform, "demo", payload);
  }

  private static WorkerLaunch dispatched(
      TestDatabase tdb, ManualPlatform platform, String kind, String payload) {
    BuildQueue queue =
        new BuildQueue(
            tdb.jdbc(), platform, QueueHarness.testConfig(), buildqueue.core.QueueClock.DATABASE);
    queue.enqueue("alice", kind, new Json(payload), null);
    return platform.lastLaunch();
  }

  private static Map<String, String> env(TestDatabase tdb, WorkerLaunch launch) throws Exception {
    Path kinds = dir.resolve("kinds.json");
    if (!Files.exists(kinds)) {
      Files.writeString(kinds, KINDS);
    }
    Map<String, String> env = new HashMap<>();
    env.put(AwsSettings.KINDS_FILE, kinds.toString());
    env.put(AwsSettings.JDBC_URL, tdb.jdbcUrl());
    env.put(AwsSettings.WORKER_ID, Long.toString(launch.workerId()));
    env.put(AwsSettings.WORKER_TOKEN, launch.token().toString());
    return env;
  }

  private static String jobStatus(TestDatabase tdb) throws Exception {
    return tdb.jdbc().query("select status from build_job").get(0).string("status");
  }

  @Test
  void the_worker_runs_its_job_drains_and_exits_zero(TestDatabase tdb) throws Exception {
    WorkerLaunch launch =
        dispatched(tdb, new ManualPlatform(), "{\"steps\": 2, \"stepMillis\": 1}");
    MetricsCapture metrics = new MetricsCapture();

    int code =
        FargateWorkerMain.run(
            env(tdb, launch)::get,
            MUST_NOT_HALT,
            CommandRunners.forThisProcess(System.getenv()),
            metrics);

    assertThat(code).isZero();
    assertThat(jobStatus(tdb)).isEqualTo("succeeded");
    assertThat(tdb.jdbc().query("select status from build_worker").get(0).string("status"))
        .isEqualTo("draining");
    JsonNode line = metrics.last("worker");
    assertThat(line.get("exit").asText()).isEqualTo("DRAINED");
    assertThat(line.get("workerId").asLong()).isEqualTo(launch.workerId());
    assertThat(line.get("WorkerRunSeconds").asDouble()).isPositive();
  }

  @Test
  void a_worker_with_the_wrong_token_runs_nothing_and_exits_zero(TestDatabase tdb)
      throws Exception {
    WorkerLaunch launch = dispatched(tdb, new ManualPlatform(), "{\"steps\": 1}");
    Map<String, String> env = env(tdb, launch);
    env.put(AwsSettings.WORKER_TOKEN, UUID.randomUUID().toString());

    int code =
        FargateWorkerMain.run(
            env::get,
            MUST_NOT_HALT,
            CommandRunners.forThisProcess(System.getenv()),
            new MetricsCapture());

    assertThat(code).isZero();
    assertThat(jobStatus(tdb)).isEqualTo("dispatched");
  }

  @Test
  void an_unreachable_database_is_a_fault_and_exits_non_zero(TestDatabase tdb) throws Exception {
    WorkerLaunch launch = dispatched(tdb, new ManualPlatform(), "{\"steps\": 1}");
    Map<String, String> env = env(tdb, launch);
    env.put(AwsSettings.JDBC_URL, "jdbc:postgresql://127.0.0.1:1/nowhere?connectTimeout=2");

    int code =
        FargateWorkerMain.run(
            env::get,
            MUST_NOT_HALT,
            CommandRunners.forThisProcess(System.getenv()),
            new MetricsCapture());

    assertThat(code).isEqualTo(FargateWorkerMain.FAULT);
  }

  @Test
  void missing_settings_exit_with_their_own_code(TestDatabase tdb) throws Exception {
    WorkerLaunch launch = dispatched(tdb, new ManualPlatform(), "{\"steps\": 1}");
    Map<String, String> env = env(tdb, launch);
    env.remove(AwsSettings.WORKER_TOKEN);

    int code =
        FargateWorkerMain.run(
            env::get,
            MUST_NOT_HALT,
            CommandRunners.forThisProcess(System.getenv()),
            new MetricsCapture());

    assertThat(code).isEqualTo(FargateWorkerMain.BAD_SETTINGS);
    assertThat(jobStatus(tdb)).isEqualTo("dispatched");
  }

  @Test
  void the_worker_runs_a_kind_of_its_catalogue_through_its_command_runner(TestDatabase tdb)
      throws Exception {
    WorkerLaunch launch = dispatched(tdb, new ManualPlatform(), "render", "{\"title\": \"T\"}");
    java.util.List<String> ran = new java.util.concurrent.CopyOnWriteArrayList<>();

    int code =
        FargateWorkerMain.run(
            env(tdb, launch)::get,
            MUST_NOT_HALT,
            (kind, context) -> {
              ran.add(
                  kind.name() + " " + String.join(" ", kind.command()) + " " + context.payload());
              return JobOutcome.succeeded();
            },
            new MetricsCapture());

    assertThat(code).isZero();
    assertThat(ran).containsExactly("render node r.js {\"title\":\"T\"}");
    assertThat(jobStatus(tdb)).isEqualTo("succeeded");
  }

  @Test
  void a_worker_image_without_its_catalogue_refuses_to_start_and_runs_nothing(TestDatabase tdb)
      throws Exception {
    WorkerLaunch launch = dispatched(tdb, new ManualPlatform(), "{\"steps\": 1}");
    Map<String, String> env = env(tdb, launch);
    env.put(AwsSettings.KINDS_FILE, dir.resolve("not-copied-into-the-image.json").toString());

    int code =
        FargateWorkerMain.run(
            env::get,
            MUST_NOT_HALT,
            CommandRunners.forThisProcess(System.getenv()),
            new MetricsCapture());

    assertThat(code).isEqualTo(FargateWorkerMain.BAD_SETTINGS);
    assertThat(jobStatus(tdb)).isEqualTo("dispatched");
    assertThat(tdb.jdbc().query("select status from build_worker").get(0).string("status"))
        .isEqualTo("launching");
  }
}
