package buildqueue.worker.exec;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.MonotonicClock;
import buildqueue.db.Row;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Procs;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.WorkerLoop;
import buildqueue.worker.WorkerProcess;
import buildqueue.worker.WorkerStop;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runner under the real worker loop on real PostgreSQL: what a program reports reaches the
 * job's row, its follow-ups, its log tail; a cancel and a retry code end the job as the queue says.
 * (The kind catalogue's handler is a stand-in here: a kind {@code shell} that runs a script.)
 */
@ExtendWith(PostgresExtension.class)
class ProcessRunnerQueueTest {
  private static final WorkerProcess MUST_NOT_HALT =
      why -> {
        throw new AssertionError("the worker tried to halt: " + why);
      };

  @TempDir Path tmp;

  private JobHandler shell(String script, Set<Integer> retryCodes) throws Exception {
    Path file = Files.writeString(tmp.resolve("job.sh"), script);
    CommandKind kind =
        new CommandKind(
            "shell",
            List.of("sh", file.toString()),
            Duration.ofMinutes(5),
            PayloadSchema.ANY_OBJECT,
            retryCodes,
            Map.of("PIDS", tmp.resolve("pids").toString()),
            Duration.ofSeconds(10));
    ProcessRunner runner =
        new ProcessRunner(
            tmp.resolve("work"),
            System.getenv(),
            SetsidLauncher.find(System.getenv()),
            MonotonicClock.SYSTEM,
            ProcessRunner.Limits.defaults());
    return new JobHandler() {
      @Override
      public String kind() {
        return "shell";
      }

      @Override
      public JobOutcome run(JobContext context) throws Exception {
        return runner.run(kind, context);
      }
    };
  }

  private static CompletableFuture<WorkerLoop.Exit> work(QueueHarness h, JobHandler handler) {
    return work(h, handler, WorkerStop.none(), null);
  }

  /** {@code heartbeat} null: the default. */
  private static CompletableFuture<WorkerLoop.Exit> work(
      QueueHarness h, JobHandler handler, WorkerStop stop, Duration heartbeat) {
    WorkerLaunch launch = h.manual.lastLaunch();
    WorkerLoop plain =
        new WorkerLoop(
                h.workerDb,
                h.config,
                h.clock,
                JobHandlers.builtIn().with(handler),
                MUST_NOT_HALT,
                WorkerLoop.Listener.NONE)
            .withStop(stop);
    WorkerLoop loop = heartbeat == null ? plain : plain.withHeartbeat(heartbeat);
    return CompletableFuture.supplyAsync(() -> loop.run(launch.workerId(), launch.token()));
  }

  private static Row log(QueueHarness h, long job) {
    return h.testDb
        .jdbc()
        .query("select tail, total_bytes from build_job_log where job_id = " + job)
        .get(0);
  }

  @Test
  void a_program_succeeds_with_its_progress_follow_up_and_log_tail(TestDatabase tdb)
      throws Exception {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      long job = h.submit("ada", "shell", "{\"pages\": 3}");
      JobHandler handler =
          shell(
              "echo \"payload: $(cat \"$BUILDQUEUE_PAYLOAD\")\"\n"
                  + "echo '{\"progress\": 3}' >> \"$BUILDQUEUE_CONTROL\"\nsleep 1.5\n"
                  + "echo '{\"followUp\": {\"kind\": \"demo\", \"payload\": {\"steps\": 1}}}' >> \"$BUILDQUEUE_CONTROL\"\n"
                  + "echo 'warning: page 2 is empty' >&2\n",
              Set.of());

      assertThat(work(h, handler).get(60, TimeUnit.SECONDS)).isEqualTo(WorkerLoop.Exit.DRAINED);

      assertThat(h.status(job)).isEqualTo("succeeded");
      assertThat(h.job(job).intValue("progress")).isEqualTo(3);
      assertThat(
              h.testDb
                  .jdbc()
                  .query("select kind, payload::text as p from build_job where id <> " + job))
          .singleElement()
          .satisfies(
              r ->
                  assertThat(r.string("kind") + " " + r.string("p"))
                      .isEqualTo("demo {\"steps\": 1}"));
      assertThat(log(h, job).string("tail"))
          .contains(
              "[buildqueue] started: sh ",
              "payload: {\"pages\":3}",
              "warning: page 2 is empty",
              "[buildqueue] exited with code 0");
    }
  }

  @Test
  void a_cancel_stops_the_worker_and_its_program_that_never_reports_and_the_job_ends_cancelled(
      TestDatabase tdb) throws Exception {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      long job = h.submit("ada", "shell", "{}");
      WorkerStop stop = new WorkerStop(Duration.ofSeconds(30));
      // The platform's stop reaches the worker as SIGTERM does: its WorkerStop is requested.
      h.manual.onStop((taskId, reason) -> stop.request(reason));
      CompletableFuture<WorkerLoop.Exit> worker =
          work(h, shell("echo $$ > \"$PIDS\"\nsleep 1000\n", Set.of()), stop, null);
      Await.until("the program to run", () -> Procs.pidsIn(tmp.resolve("pids")).size() == 1);
      long pid = Procs.pidsIn(tmp.resolve("pids")).get(0);

      h.queue.cancel(job, "ada");

      assertThat(worker.get(60, TimeUnit.SECONDS)).isEqualTo(WorkerLoop.Exit.STOPPED);
      assertThat(h.status(job)).isEqualTo("cancelled");
      // History says cancelled, not interrupted and requeued.
      assertThat(h.eventTypes(job)).endsWith("cancelled").doesNotContain("interrupted");
      assertThat(Procs.inSessionOrGroup(pid)).isEmpty();
      assertThat(log(h, job).string("tail"))
          .contains("[buildqueue] the worker is stopping: SIGTERM sent to the job's processes")
          .doesNotContain("SIGKILL");
    }
  }

  @Test
  void a_cancel_whose_stop_is_lost_reaches_the_program_at_the_workers_heartbeat(TestDatabase tdb)
      throws Exception {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      long job = h.submit("ada", "shell", "{}");
      // The manual platform signals nothing: the heartbeat (test-sized here) reads the flag.
      CompletableFuture<WorkerLoop.Exit> worker =
          work(
              h,
              shell("echo $$ > \"$PIDS\"\nsleep 1000\n", Set.of()),
              WorkerStop.none(),
              Duration.ofSeconds(1));
      Await.until("the program to run", () -> Procs.pidsIn(tmp.resolve("pids")).size() == 1);
      long pid = Procs.pidsIn(tmp.resolve("pids")).get(0);

      h.queue.cancel(job, "ada");

      assertThat(worker.get(60, TimeUnit.SECONDS)).isEqualTo(WorkerLoop.Exit.DRAINED);
      assertThat(h.manual.stopRequests()).hasSize(1);
      assertThat(h.status(job)).isEqualTo("cancelled");
      assertThat(Procs.inSessionOrGroup(pid)).isEmpty();
      assertThat(log(h, job).string("tail"))
          .contains("[buildqueue] cancel requested: SIGTERM sent to the job's processes")
          .doesNotContain("SIGKILL");
    }
  }

  @Test
  void a_retry_exit_code_requeues_the_job_and_its_next_attempt_resumes_from_its_progress(
      TestDatabase tdb) throws Exception {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      long job = h.submit("ada", "shell", "{}");
      JobHandler handler =
          shell(
              "if [ \"$BUILDQUEUE_ATTEMPT\" = 1 ]; then\n"
                  + "  echo '{\"progress\": 2}' >> \"$BUILDQUEUE_CONTROL\"; exit 75\nfi\n"
                  + "echo \"attempt $BUILDQUEUE_ATTEMPT resumes from $BUILDQUEUE_PROGRESS\"\n",
              Set.of(75));

      assertThat(work(h, handler).get(60, TimeUnit.SECONDS)).isEqualTo(WorkerLoop.Exit.DRAINED);

      assertThat(h.status(job)).isEqualTo("succeeded");
      assertThat(h.job(job).intValue("attempts")).isEqualTo(2);
      assertThat(h.job(job).intValue("recoveries")).isZero();
      assertThat(log(h, job).string("tail")).contains("attempt 2 resumes from 2");
    }
  }
}
