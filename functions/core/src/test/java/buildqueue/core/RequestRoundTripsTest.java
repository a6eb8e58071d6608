package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.OutboxTransitions.PendingEvent;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.CheckedDatabase;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestAdapter;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Pins the statements each {@link BuildQueue} request makes at the {@code Database} port when the
 * queue publishes its job events itself (a sender, as in AWS): the claim, the settle and the
 * read-back ride on statements the request makes anyway (issue 24). Over the Data API each
 * statement is an HTTPS call.
 */
@ExtendWith(PostgresExtension.class)
class RequestRoundTripsTest {
  private static final Instant START = Instant.parse("2026-01-05T09:00:00Z");

  /** A receiver that takes every event and remembers them in order. */
  private static final class RecordingSender implements OutboxTransitions.Sender {
    final List<PendingEvent> sent = new ArrayList<>();

    @Override
    public synchronized OutboxTransitions.Sent send(List<PendingEvent> events) {
      sent.addAll(events);
      return new OutboxTransitions.Sent(events.stream().map(PendingEvent::id).toList(), List.of());
    }

    synchronized List<String> types() {
      return sent.stream().map(e -> e.jobId() + " " + e.type()).toList();
    }
  }

  private record Setup(
      CountingDatabase db,
      ManualPlatform platform,
      RecordingSender sender,
      BuildQueue queue,
      QueueClock.Settable clock) {}

  private static Setup setup(TestDatabase tdb, Database wrap) {
    return setup(tdb, wrap, new QueueClock.Settable(START));
  }

  private static Setup setup(TestDatabase tdb, Database port, QueueClock.Settable clock) {
    CountingDatabase db = new CountingDatabase(port);
    ManualPlatform platform = new ManualPlatform();
    RecordingSender sender = new RecordingSender();
    BuildQueue queue =
        new BuildQueue(
            db, platform, QueueConfig.defaults(), clock, BuildQueue.ExitListener.NONE, sender);
    return new Setup(db, platform, sender, queue, clock);
  }

  private static List<Long> unpublished(TestDatabase tdb) {
    return tdb
        .jdbc()
        .query("select id from build_job_event where published_at is null order by id")
        .stream()
        .map(r -> r.longValue("id"))
        .toList();
  }

  /** Makes the job's worker running, as its start would (the worker role's statement). */
  private static void started(TestDatabase tdb, long jobId) {
    tdb.jdbc()
        .update(
            "update build_worker set status = 'running', started_at = launched_at"
                + " where id = (select worker_id from build_job where id = :id)",
            Params.of("id", jobId));
    tdb.jdbc()
        .update(
            "update build_job set status = 'running', started_at = dispatched_at where id = :id",
            Params.of("id", jobId));
  }

  private static String taskOf(TestDatabase tdb, long jobId) {
    Row r =
        tdb.jdbc()
            .query(
                "select w.task_id from build_job j join build_worker w on w.id = j.worker_id"
                    + " where j.id = :id",
                Params.of("id", jobId))
            .get(0);
    return r.string("task_id");
  }

  @Test
  void a_submission_with_a_free_slot_costs_three_statements_and_publishes_what_it_wrote(
      TestDatabase tdb) {
    Setup s =
        setup(
            tdb,
            new CheckedDatabase(
                TestAdapter.selected().open(tdb),
                sql ->
                    System.err.println(
                        "DEBUGSQL "
                            + sql.substring(0, Math.min(120, sql.length())).replace('\n', ' '))));

    BuildQueue.Submitted submitted = s.queue.submit("alice", "noop", new Json("{}"), null, null);

    // enqueue (+ claim), dispatch (+ claim), record the task (+ settle + read-back)
    assertThat(s.db.statements()).isEqualTo(3);
    long job = submitted.enqueued().jobId();
    assertThat(submitted.job().status()).isEqualTo(JobStatus.DISPATCHED);
    assertThat(submitted.job().attempts()).isEqualTo(1);
    assertThat(s.platform.launches()).hasSize(1);
    assertThat(s.sender.types()).containsExactly(job + " enqueued", job + " dispatched");
    assertThat(unpublished(tdb)).isEmpty();
  }

  @Test
  void a_submission_to_a_full_lane_costs_two_statements(TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    s.queue.submit("alice", "noop", new Json("{}"), null, null);
    s.db.reset();

    BuildQueue.Submitted second = s.queue.submit("bob", "noop", new Json("{}"), null, null);

    // enqueue (+ claim; the lane is full, so no dispatch), settle + read-back
    assertThat(s.db.statements()).isEqualTo(2);
    assertThat(second.job().status()).isEqualTo(JobStatus.QUEUED);
    assertThat(second.job().position()).isEqualTo(1);
    assertThat(s.sender.types()).endsWith(second.enqueued().jobId() + " enqueued");
    assertThat(unpublished(tdb)).isEmpty();
  }

  @Test
  void a_repeated_submission_costs_one_statement_and_publishes_nothing(TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    long job = s.queue.submit("alice", "noop", new Json("{}"), "key-1", null).enqueued().jobId();
    int sent = s.sender.sent.size();
    s.db.reset();

    BuildQueue.Submitted again = s.queue.submit("alice", "noop", new Json("{}"), "key-1", null);

    // the enqueue finds the key's job and claims nothing; the read-back
    assertThat(again.enqueued().created()).isFalse();
    assertThat(again.job().id()).isEqualTo(job);
    assertThat(s.db.statements()).isEqualTo(2);
    assertThat(s.sender.sent).hasSize(sent);
  }

  @Test
  void a_stop_that_dispatches_costs_two_statements(TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    long first = s.queue.submit("alice", "noop", new Json("{}"), null, null).enqueued().jobId();
    long second = s.queue.submit("bob", "noop", new Json("{}"), null, null).enqueued().jobId();
    started(tdb, first);
    tdb.jdbc()
        .update(
            "update build_job set status = 'succeeded', finished_at = started_at where id = :id",
            Params.of("id", first));
    s.db.reset();

    assertThat(s.queue.taskStopped(taskOf(tdb, first), null, null, "essential container exited"))
        .isPresent();

    // exit + dispatch of the lane + claim (build_exit_worker_and_dispatch), record the task +
    // settle
    assertThat(s.db.statements()).isEqualTo(2);
    assertThat(s.platform.launches()).hasSize(2);
    // the dispatch's event, then the cost of the job the stopped worker ran (docs/architecture.md
    // §4.8), in one claim
    assertThat(s.sender.types()).endsWith(second + " dispatched", first + " cost");
    assertThat(unpublished(tdb)).isEmpty();
  }

  @Test
  void a_stop_that_dispatches_nothing_costs_two_statements_with_events_and_one_without(
      TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    long job = s.queue.submit("alice", "noop", new Json("{}"), null, null).enqueued().jobId();
    started(tdb, job);
    tdb.jdbc()
        .update(
            "update build_job set cancel_requested = true where id = :id", Params.of("id", job));
    String task = taskOf(tdb, job);
    s.db.reset();

    assertThat(s.queue.taskStopped(task, null, null, "essential container exited")).isPresent();

    // exit (its job ends cancelled) + claim; the settle of the cancelled event
    assertThat(s.db.statements()).isEqualTo(2);
    assertThat(s.platform.launches()).hasSize(1);
    assertThat(s.sender.types()).endsWith(job + " cancelled", job + " cost");
    assertThat(unpublished(tdb)).isEmpty();

    s.db.reset();
    assertThat(s.queue.taskStopped(task, null, null, "a duplicate event")).isEmpty();
    assertThat(s.db.statements()).isEqualTo(1);
  }

  @Test
  void a_stop_of_a_worker_that_never_started_is_the_same_one_call(TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    long job = s.queue.submit("alice", "noop", new Json("{}"), null, null).enqueued().jobId();
    s.db.reset();

    assertThat(s.queue.taskStopped(taskOf(tdb, job), null, null, "CannotPullContainerError"))
        .hasValueSatisfying(e -> assertThat(e.neverStarted()).isTrue());

    // exit before start + claim (the job backs off, so the lane dispatches nothing); settle
    assertThat(s.db.statements()).isEqualTo(2);
    assertThat(s.sender.types()).endsWith(job + " launch-failed", job + " cost");
  }

  @Test
  void a_cancel_costs_two_statements_and_publishes_its_event(TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    s.queue.submit("alice", "noop", new Json("{}"), null, null);
    long queued = s.queue.submit("bob", "noop", new Json("{}"), null, null).enqueued().jobId();
    s.db.reset();

    BuildQueue.CancelAnswer answer = s.queue.cancelAnswering(queued, "bob");

    // the cancel (+ claim), settle + read-back
    assertThat(s.db.statements()).isEqualTo(2);
    assertThat(answer.job())
        .hasValueSatisfying(j -> assertThat(j.status()).isEqualTo(JobStatus.CANCELLED));
    assertThat(s.sender.types()).endsWith(queued + " cancelled");
    assertThat(unpublished(tdb)).isEmpty();

    s.db.reset();
    assertThat(s.queue.cancelAnswering(queued + 100, "bob").job()).isEmpty();
    assertThat(s.db.statements()).as("no such job: the cancel alone").isEqualTo(1);
  }

  @Test
  void a_lane_change_that_moves_a_job_into_a_free_lane_costs_three_statements(TestDatabase tdb) {
    Setup s = setup(tdb, TestAdapter.selected().open(tdb));
    s.queue.submit("alice", "noop", new Json("{}"), null, null);
    long queued = s.queue.submit("bob", "noop", new Json("{}"), null, null).enqueued().jobId();
    s.db.reset();

    JobTransitions.LaneChange change = s.queue.setDedicated("bob", true);

    // the change (+ claim), the dispatch of bob's lane (+ claim), record the task + settle
    assertThat(change.movedCount()).isEqualTo(1);
    assertThat(s.db.statements()).isEqualTo(3);
    assertThat(s.sender.types()).endsWith(queued + " moved", queued + " dispatched");
    assertThat(unpublished(tdb)).isEmpty();

    s.db.reset();
    s.queue.setDedicated("carol", true);
    assertThat(s.db.statements()).as("nothing moved: the change alone").isEqualTo(1);
  }

  @Test
  void a_submission_that_dies_between_its_claim_and_its_settle_leaves_its_rows_to_a_later_claim(
      TestDatabase tdb) {
    AtomicBoolean refuseSettle = new AtomicBoolean(true);
    Database port =
        new CheckedDatabase(
            TestAdapter.selected().open(tdb),
            sql -> {
              if (refuseSettle.get() && sql != null && sql.contains("settle_outcome as (")) {
                throw new DatabaseException("ERROR: connection lost (injected)");
              }
            });
    QueueClock.Settable clock = new QueueClock.Settable(START);
    Setup s = setup(tdb, port, clock);

    assertThatThrownBy(() -> s.queue.submit("alice", "noop", new Json("{}"), null, null))
        .isInstanceOf(DatabaseException.class);

    // Sent, but never marked published: the rows stay pending, claimed.
    List<Long> sentIds = s.sender.sent.stream().map(PendingEvent::id).toList();
    assertThat(sentIds).hasSize(2);
    assertThat(unpublished(tdb)).isEqualTo(sentIds);
    OutboxTransitions outbox = new OutboxTransitions(TestAdapter.selected().open(tdb), clock);
    assertThat(outbox.claimPending(OutboxTransitions.MAX_CLAIM))
        .as("no other publisher takes them while the claim lasts")
        .isEmpty();

    clock.advance(OutboxTransitions.CLAIM);
    List<PendingEvent> later = outbox.claimPending(OutboxTransitions.MAX_CLAIM);
    assertThat(later)
        .as("once the claim runs out, exactly the rows left pending are published again")
        .extracting(PendingEvent::id)
        .isEqualTo(sentIds);
    assertThat(outbox.settle(later.stream().map(PendingEvent::id).toList(), List.of()))
        .isEqualTo(2);
    assertThat(unpublished(tdb)).isEmpty();
    assertThat(clock.now()).isEqualTo(START.plus(Duration.ofSeconds(60)));
  }
}
