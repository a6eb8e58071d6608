package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.JobContext.CheckIn;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * How often a running program costs a statement: {@link JobContext#checkIn} writes only when
 * something is due (progress and the log tail at most every 2 s, else a heartbeat once a minute),
 * on a clock the test moves, with the real worker loop over the database. A cancel is pushed (the
 * platform stops the worker); these tests use {@code ManualPlatform}, which only records the stop,
 * so they show the heartbeat: the fallback for a stop that was lost.
 */
@ExtendWith(PostgresExtension.class)
class CheckInPacingTest {
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  private void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }

  /** A handler that runs {@code script} in the worker, against a harness, and then succeeds. */
  private interface Script {
    void run(JobContext context) throws Exception;
  }

  private WorkerLoop.Exit runOne(QueueHarness h, Script script) {
    return runOne(h, script, JobContext.HEARTBEAT_INTERVAL);
  }

  private WorkerLoop.Exit runOne(QueueHarness h, Script script, Duration heartbeat) {
    JobHandler scripted =
        new JobHandler() {
          @Override
          public String kind() {
            return "scripted";
          }

          @Override
          public JobOutcome run(JobContext context) throws Exception {
            script.run(context);
            return JobOutcome.succeeded();
          }
        };
    h.submit("alice", "scripted", "{}");
    WorkerLaunch w = h.manual.lastLaunch();
    WorkerLoop loop =
        new WorkerLoop(
                h.workerDb,
                h.config,
                h.clock,
                JobHandlers.of(scripted),
                why -> {
                  throw new AssertionError("killed: " + why);
                },
                WorkerLoop.Listener.NONE)
            .withNanoTime(nanos::get)
            .withHeartbeat(heartbeat);
    return loop.run(w.workerId(), w.token());
  }

  private static String tail(QueueHarness h) {
    return h.testDb.jdbc().query("select tail from build_job_log").stream()
        .map(r -> r.string("tail"))
        .findFirst()
        .orElse(null);
  }

  @Test
  void a_program_costs_a_statement_only_when_progress_log_or_the_heartbeat_is_due(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    List<Long> statements = new ArrayList<>();
    List<String> tails = new ArrayList<>();

    runOne(
        h,
        c -> {
          long at = h.db.statements();
          c.log().line(JobLog.Stream.STDOUT, "compiling");
          assertThat(c.checkIn(null)).isEqualTo(CheckIn.GO_ON);
          advance(Duration.ofMillis(1900));
          c.checkIn(null);
          statements.add(h.db.statements() - at); // 0: the log waits for its 2 s
          tails.add(tail(h));

          advance(Duration.ofMillis(200));
          c.checkIn(null);
          statements.add(h.db.statements() - at); // 1: the log is written
          tails.add(tail(h));

          c.checkIn(4);
          statements.add(h.db.statements() - at); // 1: progress waits for its 2 s
          advance(Duration.ofSeconds(2));
          c.checkIn(4);
          statements.add(h.db.statements() - at); // 2: progress is written
          c.checkIn(4);
          advance(JobContext.HEARTBEAT_INTERVAL.minusMillis(100));
          c.checkIn(4);
          statements.add(h.db.statements() - at); // 2: nothing new, and no heartbeat yet
          advance(Duration.ofMillis(100));
          c.checkIn(4);
          statements.add(h.db.statements() - at); // 3: the heartbeat
        });

    assertThat(statements).containsExactly(0L, 1L, 1L, 2L, 2L, 3L);
    assertThat(tails).containsExactly(null, "compiling\n");
    assertThat(h.testDb.jdbc().query("select progress from build_job").get(0).intValue("progress"))
        .isEqualTo(4);
  }

  @Test
  void a_quiet_program_costs_one_statement_a_minute(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long[] statements = new long[1];

    runOne(
        h,
        c -> {
          long at = h.db.statements();
          for (int i = 0; i < 10 * 60 * 10; i++) { // ten minutes of 100 ms polls
            advance(Duration.ofMillis(100));
            c.checkIn(null);
          }
          statements[0] = h.db.statements() - at;
        });

    assertThat(statements[0]).isEqualTo(10);
  }

  @Test
  void a_cancel_whose_stop_was_lost_is_seen_at_the_next_heartbeat(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Duration heartbeat = Duration.ofSeconds(3);
    List<CheckIn> seen = new ArrayList<>();

    runOne(
        h,
        c -> {
          h.queue.cancel(c.jobId(), "alice");
          seen.add(c.checkIn(null));
          advance(heartbeat.minusMillis(1));
          seen.add(c.checkIn(null));
          advance(Duration.ofMillis(1));
          seen.add(c.checkIn(null));
          seen.add(c.checkIn(null)); // it stays cancelled without asking again
        },
        heartbeat);

    // The manual platform records the stop and sends nothing: the stop is lost.
    assertThat(h.manual.stopRequests()).hasSize(1);
    assertThat(seen)
        .containsExactly(
            CheckIn.GO_ON, CheckIn.GO_ON, CheckIn.CANCEL_REQUESTED, CheckIn.CANCEL_REQUESTED);
    assertThat(h.testDb.jdbc().query("select status from build_job").get(0).string("status"))
        .isEqualTo("cancelled");
  }

  @Test
  void a_stopped_worker_reads_the_cancel_at_its_first_check_in_after_the_stop(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    WorkerStop stop = new WorkerStop(Duration.ofSeconds(30), nanos::get);
    List<CheckIn> seen = new ArrayList<>();
    long[] statements = new long[1];
    JobHandler scripted =
        new JobHandler() {
          @Override
          public String kind() {
            return "scripted";
          }

          @Override
          public JobOutcome run(JobContext c) {
            h.queue.cancel(c.jobId(), "alice");
            long at = h.db.statements();
            stop.request("the platform stops it for the cancel");
            seen.add(c.checkIn(null));
            seen.add(c.checkIn(null));
            statements[0] = h.db.statements() - at;
            // The program exited 0 in its grace: the job still ends cancelled, by its flag.
            return JobOutcome.succeeded();
          }
        };
    h.submit("alice", "scripted", "{}");
    WorkerLaunch w = h.manual.lastLaunch();
    WorkerLoop.Exit exit =
        new WorkerLoop(
                h.workerDb,
                h.config,
                h.clock,
                JobHandlers.of(scripted),
                why -> {
                  throw new AssertionError("killed: " + why);
                },
                WorkerLoop.Listener.NONE)
            .withNanoTime(nanos::get)
            .withStop(stop)
            .run(w.workerId(), w.token());

    assertThat(seen).containsExactly(CheckIn.STOP_REQUESTED, CheckIn.STOP_REQUESTED);
    assertThat(statements[0]).isEqualTo(1);
    assertThat(exit).isEqualTo(WorkerLoop.Exit.STOPPED);
    assertThat(h.testDb.jdbc().query("select status from build_job").get(0).string("status"))
        .isEqualTo("cancelled");
  }

  @Test
  void the_end_saves_output_that_no_check_in_wrote(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    runOne(h, c -> c.log().line(JobLog.Stream.STDERR, "done"));
    assertThat(tail(h)).isEqualTo("done\n");
  }

  @Test
  void a_job_that_prints_nothing_saves_no_log(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    runOne(h, c -> c.checkIn(null));
    assertThat(tail(h)).isNull();
  }
}
