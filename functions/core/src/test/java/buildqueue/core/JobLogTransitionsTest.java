package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.core.WorkerTransitions.LogWrite;
import buildqueue.core.WorkerTransitions.ProgressAck;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The worker statements a running program needs: the check-in (progress, log tail and the cancel
 * check in one fenced statement), the end that saves the final tail, and the interruption a program
 * asks for with a retry exit code. The test plays the worker.
 */
@ExtendWith(PostgresExtension.class)
class JobLogTransitionsTest {

  /** A started worker with its running job. */
  private record Running(WorkerLaunch worker, long job) {}

  private static Running start(QueueHarness h, String user) {
    long job = h.submit(user, "noop", "{}");
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token()).orElseThrow();
    return new Running(w, job);
  }

  private static Optional<Row> log(QueueHarness h, long job) {
    return h.testDb
        .jdbc()
        .queryOptional("select * from build_job_log where job_id = :id", Params.of("id", job));
  }

  @Test
  void a_check_in_saves_progress_and_the_log_tail_in_one_statement(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    long before = h.db.statements();

    ProgressAck ack =
        h.workers.checkIn(
            r.worker().workerId(),
            r.worker().token(),
            r.job(),
            3,
            new LogWrite("compiling\nlinking\n", 18, "/var/log/job-1.log"));

    assertThat(ack).isEqualTo(ProgressAck.RECORDED);
    assertThat(h.db.statements() - before).isEqualTo(1);
    assertThat(h.job(r.job()).intValue("progress")).isEqualTo(3);
    Row log = log(h, r.job()).orElseThrow();
    assertThat(log.string("tail")).isEqualTo("compiling\nlinking\n");
    assertThat(log.longValue("total_bytes")).isEqualTo(18);
    assertThat(log.string("location")).isEqualTo("/var/log/job-1.log");
  }

  @Test
  void a_check_in_without_news_is_only_the_cancel_check_and_keeps_progress_and_log(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    h.workers.checkIn(
        r.worker().workerId(), r.worker().token(), r.job(), 2, new LogWrite("a\n", 2, "here"));

    assertThat(h.workers.checkIn(r.worker().workerId(), r.worker().token(), r.job(), null, null))
        .isEqualTo(ProgressAck.RECORDED);
    h.queue.cancel(r.job(), "alice");
    assertThat(h.workers.checkIn(r.worker().workerId(), r.worker().token(), r.job(), null, null))
        .isEqualTo(ProgressAck.CANCEL_REQUESTED);

    assertThat(h.job(r.job()).intValue("progress")).isEqualTo(2);
    assertThat(log(h, r.job()).orElseThrow().string("tail")).isEqualTo("a\n");
  }

  @Test
  void a_later_tail_replaces_the_earlier_and_keeps_the_location_once_given(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    h.workers.checkIn(
        r.worker().workerId(),
        r.worker().token(),
        r.job(),
        null,
        new LogWrite("one\n", 4, "stream-7"));

    h.workers.checkIn(
        r.worker().workerId(), r.worker().token(), r.job(), null, new LogWrite("two\n", 8, null));

    Row log = log(h, r.job()).orElseThrow();
    assertThat(log.string("tail")).isEqualTo("two\n");
    assertThat(log.longValue("total_bytes")).isEqualTo(8);
    assertThat(log.string("location")).isEqualTo("stream-7");
  }

  @Test
  void a_check_in_with_a_wrong_token_or_another_workers_id_changes_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(2));
    Running mine = start(h, "alice");
    Running other = start(h, "bob");

    assertThat(
            h.workers.checkIn(
                mine.worker().workerId(),
                UUID.randomUUID(),
                mine.job(),
                9,
                new LogWrite("x\n", 2, null)))
        .isEqualTo(ProgressAck.FENCED_OFF);
    assertThat(
            h.workers.checkIn(
                other.worker().workerId(),
                other.worker().token(),
                mine.job(),
                9,
                new LogWrite("x\n", 2, null)))
        .isEqualTo(ProgressAck.FENCED_OFF);

    assertThat(h.job(mine.job()).intValue("progress")).isZero();
    assertThat(log(h, mine.job())).isEmpty();
  }

  @Test
  void the_end_saves_the_final_tail_with_the_job_in_the_same_statement(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    long before = h.db.statements();

    Ended ended =
        h.workers.end(
            r.worker().workerId(),
            r.worker().token(),
            r.job(),
            JobStatus.FAILED,
            "exit 3",
            new LogWrite("boom\n", 5, null));

    assertThat(ended).isInstanceOf(Ended.Drained.class);
    assertThat(h.db.statements() - before).isEqualTo(1);
    assertThat(h.status(r.job())).isEqualTo("failed");
    assertThat(log(h, r.job()).orElseThrow().string("tail")).isEqualTo("boom\n");
  }

  @Test
  void the_end_records_the_progress_a_program_reached_after_its_last_check_in(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");

    h.workers.end(
        r.worker().workerId(), r.worker().token(), r.job(), JobStatus.SUCCEEDED, null, 6, null);

    assertThat(h.job(r.job()).intValue("progress")).isEqualTo(6);
  }

  @Test
  void an_interruption_with_the_progress_it_reached_counts_as_progress(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");

    h.workers.interrupt(r.worker().workerId(), r.worker().token(), r.job(), "retry", 2, null);

    assertThat(h.job(r.job()).intValue("progress")).isEqualTo(2);
    assertThat(h.job(r.job()).intValue("recoveries"))
        .isZero(); // it moved forward: the count starts over
  }

  @Test
  void a_fenced_off_end_saves_no_tail(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");

    Ended ended =
        h.workers.end(
            r.worker().workerId(),
            UUID.randomUUID(),
            r.job(),
            JobStatus.SUCCEEDED,
            null,
            new LogWrite("forged\n", 7, null));

    assertThat(ended).isInstanceOf(Ended.FencedOff.class);
    assertThat(log(h, r.job())).isEmpty();
  }

  @Test
  void an_interrupted_job_goes_back_to_the_head_and_its_worker_takes_it_before_later_jobs(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    long later = h.submit("bob", "noop", "{}");

    Optional<JobStatus> now =
        h.workers.interrupt(
            r.worker().workerId(),
            r.worker().token(),
            r.job(),
            "exit code 75, a retry code",
            new LogWrite("flaky network\n", 14, null));
    Ended next = h.workers.takeNext(r.worker().workerId(), r.worker().token());

    assertThat(now).contains(JobStatus.QUEUED);
    assertThat(next)
        .isInstanceOfSatisfying(
            Ended.Chained.class,
            c -> {
              assertThat(c.next().id()).isEqualTo(r.job());
              assertThat(c.next().attempt()).isEqualTo(2);
            });
    assertThat(h.status(later)).isEqualTo("queued");
    assertThat(h.job(r.job()).intValue("recoveries")).isEqualTo(1);
    assertThat(h.events(r.job()))
        .extracting(e -> e.string("message"))
        .contains(
            "interrupted: progress 0→0, recoveries 1, stop reason exit code 75, a retry code");
    assertThat(log(h, r.job()).orElseThrow().string("tail")).isEqualTo("flaky network\n");
  }

  @Test
  void the_fourth_interruption_without_progress_fails_the_job_and_progress_resets_the_count(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    long worker = r.worker().workerId();
    UUID token = r.worker().token();
    // One interruption after progress, then four without: the count restarted at the progress.
    h.workers.progress(worker, token, r.job(), 1);
    assertThat(h.workers.interrupt(worker, token, r.job(), "retry", null))
        .contains(JobStatus.QUEUED);
    assertThat(h.job(r.job()).intValue("recoveries")).isZero();
    for (int i = 1; i <= ExitTransitions.MAX_RECOVERIES; i++) {
      assertThat(h.workers.takeNext(worker, token)).isInstanceOf(Ended.Chained.class);
      assertThat(h.workers.interrupt(worker, token, r.job(), "retry", null))
          .as("interruption " + i)
          .contains(JobStatus.QUEUED);
    }
    assertThat(h.workers.takeNext(worker, token)).isInstanceOf(Ended.Chained.class);

    assertThat(h.workers.interrupt(worker, token, r.job(), "retry", null))
        .contains(JobStatus.FAILED);

    assertThat(h.job(r.job()).string("error")).isEqualTo(ExitTransitions.REPEATED_EXIT_ERROR);
    assertThat(h.job(r.job()).intValue("recoveries")).isEqualTo(ExitTransitions.MAX_RECOVERIES + 1);
  }

  @Test
  void an_interruption_of_a_job_whose_cancel_was_requested_ends_it_cancelled(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    h.queue.cancel(r.job(), "alice");

    assertThat(
            h.workers.interrupt(r.worker().workerId(), r.worker().token(), r.job(), "retry", null))
        .contains(JobStatus.CANCELLED);

    assertThat(h.job(r.job()).instant("finished_at")).isNotNull();
    assertThat(h.worker(r.worker().workerId()).string("status")).isEqualTo("running");
  }

  @Test
  void an_interruption_by_a_stale_worker_changes_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");

    assertThat(
            h.workers.interrupt(r.worker().workerId(), UUID.randomUUID(), r.job(), "retry", null))
        .isEmpty();

    assertThat(h.status(r.job())).isEqualTo("running");
    assertThat(h.job(r.job()).intValue("recoveries")).isZero();
  }
}
