package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.BuildQueue;
import buildqueue.core.QueueClock;
import buildqueue.db.Json;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.Await;
import buildqueue.testing.ChildWorker;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Procs;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import buildqueue.worker.exec.ProcessRunner;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local runtime's worker process ({@link WorkerMain}, as {@code LocalProcessPlatform} starts
 * it, logged in as the worker role) gets SIGTERM, as the platform's {@code stop} sends it: the same
 * stop path as the Fargate worker's (the aws module's {@code WorkerSigtermTest}).
 */
@ExtendWith(PostgresExtension.class)
class WorkerMainSigtermTest {
  private static final String TRAPS =
      """
      echo $$ >> "$PIDS"
      trap 'echo "{\\"progress\\": 42}" >> "$BUILDQUEUE_CONTROL"; exit 143' TERM
      echo '{"progress": 10}' >> "$BUILDQUEUE_CONTROL"
      while :; do sleep 0.05; done
      """;

  @TempDir Path dir;
  @RegisterExtension final ChildWorker child = new ChildWorker();

  @Test
  void a_local_worker_sent_sigterm_interrupts_its_job_with_its_progress_and_exits_in_time(
      TestDatabase tdb) throws Exception {
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue =
        new BuildQueue(tdb.jdbc(), platform, QueueHarness.testConfig(), QueueClock.DATABASE);
    long jobId = queue.enqueue("alice", "traps", new Json("{}"), null).jobId();
    WorkerLaunch launch = platform.lastLaunch();
    Duration stopTimeout = Duration.ofSeconds(6);
    Process worker = start(tdb, launch, stopTimeout);
    Await.until(
        "the program to run and its progress to be checked in",
        Duration.ofSeconds(60),
        () -> {
          assertThat(worker.isAlive()).as("the worker; output:%n%s", child.output()).isTrue();
          return child.programStarted() && job(tdb, jobId).intValue("progress") == 10;
        });
    long program = child.firstProgram();

    Duration took = child.sigterm(Duration.ofSeconds(60), stopTimeout);

    assertThat(took).as("SIGTERM to exit; output:%n%s", child.output()).isLessThan(stopTimeout);
    assertThat(Procs.alive(program)).isFalse();
    Row job = job(tdb, jobId);
    assertThat(job.string("status")).isEqualTo("queued");
    assertThat(job.intValue("progress")).isEqualTo(42);
    assertThat(
            tdb.jdbc()
                .query("select status from build_worker where id = " + launch.workerId())
                .get(0)
                .string("status"))
        .isEqualTo("draining");
  }

  private Process start(TestDatabase tdb, WorkerLaunch launch, Duration stopTimeout)
      throws Exception {
    ObjectNode kind = new ObjectMapper().createObjectNode();
    kind.putArray("command").add("sh").add("-c").add(TRAPS);
    kind.put("timeout", "10m");
    kind.putObject("env").put("PIDS", child.pids().toString());
    ObjectNode root = new ObjectMapper().createObjectNode();
    root.putObject("kinds").set("traps", kind);
    Path kinds = Files.writeString(dir.resolve("kinds.json"), root.toString());
    String url = tdb.jdbcUrl();
    return child.start(
        WorkerMain.class,
        "64m",
        Map.of(
            WorkerEnvironment.WORKER_ID, Long.toString(launch.workerId()),
            WorkerEnvironment.WORKER_TOKEN, launch.token().toString(),
            WorkerEnvironment.DATABASE_URL,
                url.contains("?") ? url.substring(0, url.indexOf('?')) : url,
            WorkerEnvironment.DATABASE_USER, TestDatabases.WORKER_ROLE,
            WorkerEnvironment.DATABASE_PASSWORD, TestDatabases.WORKER_PASSWORD,
            WorkerEnvironment.KINDS_FILE, kinds.toString(),
            WorkerEnvironment.STOP_TIMEOUT_SECONDS, Long.toString(stopTimeout.toSeconds()),
            ProcessRunner.WORK_DIR, Files.createDirectories(dir.resolve("work")).toString()));
  }

  private static Row job(TestDatabase tdb, long id) {
    return tdb.jdbc().query("select * from build_job where id = " + id).get(0);
  }
}
