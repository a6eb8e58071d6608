package buildqueue.aws.worker;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.testing.MetricsCapture;
import buildqueue.core.BuildQueue;
import buildqueue.core.Capacities;
import buildqueue.core.QueueClock;
import buildqueue.db.Json;
import buildqueue.db.Row;
import buildqueue.platform.Capacity;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.Await;
import buildqueue.testing.ChildWorker;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Procs;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.CommandRunners;
import buildqueue.worker.WorkerProcess;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The real Fargate worker process (a child JVM running {@link FargateWorkerMain}, over JDBC to the
 * test's PostgreSQL) gets SIGTERM while its job's program runs, as ECS's StopTask, a Spot reclaim
 * or a scale-in sends it: the program gets SIGTERM and its grace, bounded by the stop timeout; the
 * job goes back to its lane with its progress and log tail; the worker exits before the stop
 * timeout, and nothing of the job outlives it.
 */
@ExtendWith(PostgresExtension.class)
class WorkerSigtermTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Traps SIGTERM and writes its progress then; resumes from it: an attempt that starts at 42
   * succeeds. Every attempt appends what it was given to $SEEN.
   */
  private static final String TRAPS =
      """
      echo $$ >> "$PIDS"
      echo "attempt $BUILDQUEUE_ATTEMPT from $BUILDQUEUE_PROGRESS" >> "$SEEN"
      if [ "$BUILDQUEUE_PROGRESS" = 42 ]; then echo "resumed from 42"; exit 0; fi
      trap 'echo "SIGTERM: saving progress 42"; echo "{\\"progress\\": 42}" >> "$BUILDQUEUE_CONTROL"; exit 143' TERM
      echo '{"progress": 10}' >> "$BUILDQUEUE_CONTROL"
      echo "working"
      while :; do sleep 0.05; done
      """;

  /** Ignores SIGTERM (and so does the sleep it starts): only SIGKILL ends it. */
  private static final String IGNORES =
      """
      trap '' TERM
      echo $$ >> "$PIDS"
      echo "attempt $BUILDQUEUE_ATTEMPT from $BUILDQUEUE_PROGRESS" >> "$SEEN"
      echo '{"progress": 7}' >> "$BUILDQUEUE_CONTROL"
      echo "working, deaf to SIGTERM"
      while :; do sleep 0.05; done
      """;

  @TempDir Path dir;
  @RegisterExtension final ChildWorker child = new ChildWorker();
  private final ManualPlatform platform = new ManualPlatform();
  private BuildQueue queue;
  private Process worker;

  @BeforeEach
  void queue(TestDatabase tdb) {
    queue = new BuildQueue(tdb.jdbc(), platform, QueueHarness.testConfig(), QueueClock.DATABASE);
  }

  /**
   * A job whose program runs on a real worker process (the first launch) and has reported its first
   * progress.
   */
  private record Running(long jobId, WorkerLaunch first, long program) {}

  private Running runOnAWorker(
      TestDatabase tdb,
      String kind,
      String script,
      String grace,
      Duration stopTimeout,
      int progress)
      throws Exception {
    long jobId = queue.enqueue("alice", kind, new Json("{}"), null).jobId();
    WorkerLaunch first = platform.lastLaunch();
    worker =
        child.start(
            FargateWorkerMain.class,
            "128m",
            env(tdb, first, stopTimeout, kinds(kind, script, grace)));
    awaitProgramRunning(tdb, jobId, progress);
    return new Running(jobId, first, child.firstProgram());
  }

  /**
   * On Spot too: a reclaim's two-minute warning is this SIGTERM, and the stop event then carries
   * ECS's stop code; the interruption counts a reclaim, not a recovery.
   */
  @ParameterizedTest(name = "on {0}")
  @EnumSource(
      value = Capacity.class,
      names = {"ON_DEMAND", "SPOT"})
  void a_program_that_traps_sigterm_saves_its_progress_and_the_next_attempt_resumes_from_it(
      Capacity capacity, TestDatabase tdb) throws Exception {
    queue.useCapacities(new Capacities(Capacity.ON_DEMAND, Map.of("traps", capacity)));
    Duration stopTimeout = Duration.ofSeconds(8);
    Running running = runOnAWorker(tdb, "traps", TRAPS, "10s", stopTimeout, 10);
    long jobId = running.jobId();
    WorkerLaunch first = running.first();
    assertThat(first.capacity()).isEqualTo(capacity);

    Duration took = child.sigterm(stopTimeout.plusSeconds(30), stopTimeout); // as ECS sends it

    assertThat(took)
        .as("from SIGTERM to exit; output:%n%s", child.output())
        .isLessThan(stopTimeout);
    assertThat(worker.exitValue()).as("the exit of a JVM ended by SIGTERM").isEqualTo(143);
    assertThat(Procs.alive(running.program())).as("the program").isFalse();
    assertThat(Procs.inSessionOrGroup(running.program())).as("the program's session").isEmpty();
    Row job = job(tdb, jobId);
    assertThat(job.string("status")).as("back in its lane").isEqualTo("queued");
    assertThat(job.intValue("progress"))
        .as("the progress its program wrote on SIGTERM")
        .isEqualTo(42);
    assertThat(job.get("worker_id")).isNull();
    assertThat(job.intValue("recoveries")).as("it moved forward: the count starts again").isZero();
    assertThat(job.intValue("reclaims"))
        .as("a Spot worker's stop is a reclaim")
        .isEqualTo(capacity == Capacity.SPOT ? 1 : 0);
    assertThat(logTail(tdb, jobId))
        .contains(
            "working",
            "SIGTERM: saving progress 42",
            "the worker is stopping: SIGTERM sent to the job's processes");
    assertThat(lastEvent(tdb, jobId))
        .contains("interrupted: progress 0→42")
        .contains("the worker was told to stop");
    assertThat(workerStatus(tdb, first.workerId()))
        .as("it took no further job")
        .isEqualTo("draining");

    // The ECS STOPPED event of the worker's exit frees the slot; the job was recovered already.
    queue.taskStopped(
        ManualPlatform.taskIdOf(first.workerId()),
        first.workerId(),
        first.token(),
        capacity == Capacity.SPOT
            ? "SpotInterruption: Your Spot Task was interrupted.; container worker exited 143"
            : "exit code 143");
    assertThat(job(tdb, jobId).intValue("recoveries"))
        .as("the stop event counts nothing more")
        .isZero();
    WorkerLaunch second = platform.lastLaunch();
    assertThat(second.workerId()).as("the lane is dispatched again").isNotEqualTo(first.workerId());

    int code =
        FargateWorkerMain.run(
            env(tdb, second, stopTimeout, kinds("traps", TRAPS, "10s"))::get,
            MUST_NOT_HALT,
            CommandRunners.forThisProcess(System.getenv()),
            new MetricsCapture());

    assertThat(code).isZero();
    assertThat(job(tdb, jobId).string("status")).isEqualTo("succeeded");
    assertThat(Files.readAllLines(dir.resolve("seen")))
        .containsExactly("attempt 1 from 0", "attempt 2 from 42");
  }

  @Test
  void a_program_that_ignores_sigterm_is_killed_after_its_grace_and_its_job_is_recovered_once(
      TestDatabase tdb) throws Exception {
    Duration stopTimeout = Duration.ofSeconds(12);
    Duration grace = Duration.ofSeconds(2);
    Running running = runOnAWorker(tdb, "deaf", IGNORES, "2s", stopTimeout, 7);

    Duration took = child.sigterm(stopTimeout.plusSeconds(30), stopTimeout);

    assertThat(took)
        .as("the kind's grace was given; output:%n%s", child.output())
        .isGreaterThanOrEqualTo(grace);
    assertThat(took).as("from SIGTERM to exit").isLessThan(stopTimeout);
    assertThat(Procs.alive(running.program())).isFalse();
    assertThat(Procs.inSessionOrGroup(running.program())).isEmpty();
    Row job = job(tdb, running.jobId());
    assertThat(job.string("status")).isEqualTo("queued");
    assertThat(job.intValue("progress")).isEqualTo(7);
    assertThat(logTail(tdb, running.jobId()))
        .contains("working, deaf to SIGTERM", "SIGKILL after 2s grace");
    assertRecoveredOnce(tdb, running);
  }

  @Test
  void the_grace_is_cut_to_the_stop_timeout(TestDatabase tdb) throws Exception {
    // 10 s: the program gets 5 s, the worker 4 s more to record the interruption before its hook
    // gives up (WorkerStop's reserves). With 4 s it had 1.6 s, too few on a loaded CI machine.
    Duration stopTimeout = Duration.ofSeconds(10);
    Running running = runOnAWorker(tdb, "deaf", IGNORES, "60s", stopTimeout, 7);

    Duration took = child.sigterm(stopTimeout.plusSeconds(30), stopTimeout);

    assertThat(took)
        .as("a 60 s grace within a 10 s stop timeout; output:%n%s", child.output())
        .isLessThan(stopTimeout);
    assertThat(Procs.alive(running.program())).isFalse();
    Row job = job(tdb, running.jobId());
    assertThat(job.string("status"))
        .as("the worker recorded the interruption in time")
        .isEqualTo("queued");
    assertThat(logTail(tdb, running.jobId()))
        .contains("the worker must be gone within its stop timeout");
    assertRecoveredOnce(tdb, running);
  }

  /**
   * The stop event that follows the worker's exit frees its slot and dispatches the lane: one new
   * worker for the job, which was queued once, and no further recovery counted.
   */
  private void assertRecoveredOnce(TestDatabase tdb, Running running) {
    long jobId = running.jobId();
    WorkerLaunch first = running.first();
    int recoveries = job(tdb, jobId).intValue("recoveries");
    assertThat(recoveries).as("it moved forward (0 -> 7): the count starts again").isZero();
    queue.taskStopped(
        ManualPlatform.taskIdOf(first.workerId()),
        first.workerId(),
        first.token(),
        "exit code 143");
    queue.taskStopped(
        ManualPlatform.taskIdOf(first.workerId()),
        first.workerId(),
        first.token(),
        "exit code 143");
    Row job = job(tdb, jobId);
    assertThat(job.intValue("recoveries"))
        .as("the stop event counts nothing more")
        .isEqualTo(recoveries);
    assertThat(job.string("status")).isEqualTo("dispatched");
    assertThat(job.intValue("attempts")).isEqualTo(2);
    assertThat(platform.launches())
        .as("one launch for the attempt that was stopped, one for the next")
        .hasSize(2);
    assertThat(job.longValue("worker_id")).isEqualTo(platform.lastLaunch().workerId());
    assertThat(
            tdb.jdbc()
                .query(
                    "select count(*) as n from build_job_event where job_id = "
                        + jobId
                        + " and type = 'interrupted'")
                .get(0)
                .longValue("n"))
        .as("interrupted once")
        .isEqualTo(1);
  }

  private static final WorkerProcess MUST_NOT_HALT =
      why -> {
        throw new AssertionError("the worker tried to halt: " + why);
      };

  private Path kinds(String name, String script, String grace) throws Exception {
    ObjectNode kind = JSON.createObjectNode();
    kind.putArray("command").add("sh").add("-c").add(script);
    kind.put("timeout", "10m");
    kind.put("cancelGracePeriod", grace);
    kind.putObject("env")
        .put("PIDS", child.pids().toString())
        .put("SEEN", dir.resolve("seen").toString());
    ObjectNode root = JSON.createObjectNode();
    root.putObject("kinds").set(name, kind);
    Path file = dir.resolve("kinds-" + name + ".json");
    Files.writeString(file, JSON.writeValueAsString(root));
    return file;
  }

  private Map<String, String> env(
      TestDatabase tdb, WorkerLaunch launch, Duration stopTimeout, Path kinds) throws Exception {
    Path work = Files.createDirectories(dir.resolve("work"));
    return Map.of(
        AwsSettings.KINDS_FILE,
        kinds.toString(),
        AwsSettings.JDBC_URL,
        tdb.jdbcUrl(),
        AwsSettings.WORKER_ID,
        Long.toString(launch.workerId()),
        AwsSettings.WORKER_TOKEN,
        launch.token().toString(),
        AwsSettings.STOP_TIMEOUT_SECONDS,
        Long.toString(stopTimeout.toSeconds()),
        "BUILDQUEUE_WORK_DIR",
        work.toString());
  }

  /** Until the program runs and its first progress is in the queue, written by a check-in. */
  private void awaitProgramRunning(TestDatabase tdb, long jobId, int progress) {
    Await.until(
        "the job's program to run and report progress " + progress,
        Duration.ofSeconds(60),
        () -> {
          if (!worker.isAlive()) {
            throw new AssertionError("the worker exited early:\n" + child.output());
          }
          Row job = job(tdb, jobId);
          return child.programStarted()
              && job.string("status").equals("running")
              && job.intValue("progress") == progress;
        });
  }

  private static Row job(TestDatabase tdb, long jobId) {
    return tdb.jdbc().query("select * from build_job where id = " + jobId).get(0);
  }

  private static String logTail(TestDatabase tdb, long jobId) {
    List<Row> rows = tdb.jdbc().query("select tail from build_job_log where job_id = " + jobId);
    return rows.isEmpty() ? "" : rows.get(0).string("tail");
  }

  private static String lastEvent(TestDatabase tdb, long jobId) {
    return tdb.jdbc()
        .query(
            "select detail::text as d from build_job_event where job_id = "
                + jobId
                + " order by id desc limit 1")
        .get(0)
        .string("d");
  }

  private static String workerStatus(TestDatabase tdb, long workerId) {
    return tdb.jdbc()
        .query("select status from build_worker where id = " + workerId)
        .get(0)
        .string("status");
  }
}
