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
 * something is due (progress at most every second, the log tail at most every 2 s, else a cancel
 * check every 5 s), on a clock the test moves, with the real worker loop over the database.
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
            .withNanoTime(nanos::get);
    return loop.run(w.workerId(), w.token());
  }

  private static String tail(QueueHarness h) {
    return h.testDb.jdbc().query("select tail from build_job_log").stream()
        .map(r -> r.string("tail"))
        .findFirst()
        .orElse(null);
  }

  @Test
  void a_program_costs_a_statement_only_when_progress_log_or_the_cancel_check_is_due(
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
          statements.add(h.db.statements() - at); // 1: progress waits for its second
          advance(Duration.ofSeconds(1));
          c.checkIn(4);
          statements.add(h.db.statements() - at); // 2: progress is written
          c.checkIn(4);
          advance(Duration.ofMillis(4900));
          c.checkIn(4);
          statements.add(h.db.statements() - at); // 2: nothing new, and no cancel check yet
          advance(Duration.ofMillis(100));
          c.checkIn(4);
          statements.add(h.db.statements() - at); // 3: the cancel check
        });

    assertThat(statements).containsExactly(0L, 1L, 1L, 2L, 2L, 3L);
    assertThat(tails).containsExactly(null, "compiling\n");
    assertThat(h.testDb.jdbc().query("select progress from build_job").get(0).intValue("progress"))
        .isEqualTo(4);
  }

  @Test
  void a_cancel_request_is_seen_at_the_next_cancel_check_even_without_progress(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    List<CheckIn> seen = new ArrayList<>();

    runOne(
        h,
        c -> {
          h.queue.cancel(c.jobId(), "alice");
          seen.add(c.checkIn(null));
          advance(JobContext.CANCEL_CHECK_INTERVAL);
          seen.add(c.checkIn(null));
          seen.add(c.checkIn(null)); // it stays cancelled without asking again
        });

    assertThat(seen)
        .containsExactly(CheckIn.GO_ON, CheckIn.CANCEL_REQUESTED, CheckIn.CANCEL_REQUESTED);
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
