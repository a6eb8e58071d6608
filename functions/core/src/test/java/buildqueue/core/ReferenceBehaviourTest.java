package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.core.WorkerTransitions.ProgressAck;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.UniqueViolationException;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.Await;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * One test per behaviour kept from the reference implementation (docs/architecture.md §1), with the
 * test playing each worker by hand (a {@link buildqueue.testing.ManualPlatform}), so every step
 * happens exactly when it says.
 */
@ExtendWith(PostgresExtension.class)
class ReferenceBehaviourTest {

  private static long submit(QueueHarness h, String user) {
    return h.queue.enqueue(user, "noop", new Json("{}"), null).jobId();
  }

  /** Plays the worker of the most recent launch: start, and return its launch. */
  private static WorkerLaunch startLastWorker(QueueHarness h) {
    WorkerLaunch w = h.manual.lastLaunch();
    assertThat(h.workers.start(w.workerId(), w.token())).isPresent();
    return w;
  }

  private static void exit(QueueHarness h, WorkerLaunch w) {
    assertThat(
            h.queue.taskStopped(
                ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited"))
        .isPresent();
  }

  @Test
  void idempotent_enqueue_returns_the_same_job_for_the_same_user_and_key(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    JobTransitions.Enqueued first = h.queue.enqueue("alice", "noop", new Json("{}"), "build-42");
    JobTransitions.Enqueued again =
        h.queue.enqueue("alice", "noop", new Json("{\"other\": 1}"), "build-42");
    JobTransitions.Enqueued otherUser = h.queue.enqueue("bob", "noop", new Json("{}"), "build-42");

    assertThat(first.created()).isTrue();
    assertThat(again.created()).isFalse();
    assertThat(again.jobId()).isEqualTo(first.jobId());
    assertThat(otherUser.jobId()).isNotEqualTo(first.jobId());
    assertThat(tdb.jdbc().query("select id from build_job where user_id = 'alice'")).hasSize(1);
    assertThat(h.manual.launches()).hasSize(1); // the repeat dispatched nothing
  }

  @Test
  void jobs_of_a_lane_are_dispatched_in_fifo_order(TestDatabase tdb) {
    QueueHarness h =
        QueueHarness.manual(tdb, QueueHarness.testConfig().withChainWindow(Duration.ZERO));
    List<Long> ids = List.of(submit(h, "u1"), submit(h, "u2"), submit(h, "u3"), submit(h, "u1"));
    for (long expected : ids) {
      WorkerLaunch w = startLastWorker(h);
      assertThat(h.job(expected).longValue("worker_id")).isEqualTo(w.workerId());
      long job = h.job(expected).longValue("id");
      assertThat(h.workers.end(w.workerId(), w.token(), job, JobStatus.SUCCEEDED, null))
          .isInstanceOf(Ended.Drained.class);
      exit(h, w); // the exit dispatches the next job of the lane
    }
    assertThat(ids).allSatisfy(id -> assertThat(h.status(id)).isEqualTo("succeeded"));
  }

  @Test
  void shared_and_dedicated_lanes_run_side_by_side(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.queue.setDedicated("bob", true);
    long alice = submit(h, "alice");
    long bob = submit(h, "bob");
    long carol = submit(h, "carol");

    assertThat(h.job(alice).string("lane")).isEqualTo("shared");
    assertThat(h.job(bob).string("lane")).isEqualTo("user:bob");
    assertThat(h.liveWorkers())
        .extracting(r -> r.string("slot"))
        .containsExactly("shared#1", "user:bob#1");
    assertThat(h.status(alice)).isEqualTo("dispatched");
    assertThat(h.status(bob)).isEqualTo("dispatched");
    assertThat(h.status(carol)).isEqualTo("queued"); // behind alice in the shared lane
  }

  @Test
  void a_unique_violation_on_the_slot_means_another_dispatcher_won(TestDatabase tdb)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    h.queue.setDedicated("dora", true);
    try (Connection other = tdb.dataSource().getConnection()) {
      other.setAutoCommit(false);
      // The other dispatcher's insert stays uncommitted on its own connection: raw JDBC, as every
      // statement of the row factory commits on its own.
      try (PreparedStatement ps =
          other.prepareStatement(
              "insert into build_worker (lane, slot, token, expires_at, launched_at) "
                  + "values ('user:dora', 'user:dora#1', gen_random_uuid(), now() + interval '1 hour', now())")) {
        ps.executeUpdate();
      }
      long job = Rows.job().user("dora").ownLane().insert(tdb.jdbc());
      // Our dispatch blocks on the other dispatcher's uncommitted slot, then loses to it.
      CompletableFuture<Object> ours =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return new DispatchTransitions(h.db, h.config, h.clock).dispatch("user:dora");
                } catch (UniqueViolationException e) {
                  return e;
                }
              });
      // Our statement waits on the other dispatcher's row lock before that one commits.
      Await.until(
          "our dispatch to wait on the other's lock",
          () ->
              tdb.jdbc()
                      .query("select count(*) as n from pg_locks where not granted")
                      .get(0)
                      .longValue("n")
                  > 0);
      other.commit();
      assertThat(ours.get(30, TimeUnit.SECONDS)).isInstanceOf(UniqueViolationException.class);
      assertThat(h.status(job)).isEqualTo("queued");
      // The queue's dispatch treats it as "nothing to do", not as an error.
      assertThat(h.queue.dispatchLane("user:dora")).isEmpty();
    }
  }

  @Test
  void definite_launch_failure_frees_the_slot_and_fails_the_job_with_a_clear_message(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(
        new LaunchOutcome.NotStarted("task definition worker:9 not found", false));
    long job = submit(h, "alice");

    assertThat(h.status(job)).isEqualTo("failed");
    assertThat(h.job(job).string("error"))
        .isEqualTo(
            "Could not start a build worker: task definition worker:9 not found. "
                + "Check the worker configuration and retry.");
    assertThat(h.liveWorkers()).isEmpty();
    long next = submit(h, "bob");
    assertThat(h.status(next)).isEqualTo("dispatched"); // the slot was free at once
  }

  @Test
  void capacity_launch_failure_requeues_the_job_with_backoff_then_fails_after_the_limit(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    LaunchOutcome noCapacity =
        new LaunchOutcome.NotStarted("RESOURCE:FARGATE capacity unavailable", true);
    h.manual.nextOutcomes(noCapacity);
    long job = submit(h, "alice");
    assertThat(h.status(job)).isEqualTo("queued");
    assertThat(h.job(job).instant("not_before")).isEqualTo(h.clock.now().plusSeconds(10));
    assertThat(h.liveWorkers()).isEmpty();

    h.queue.tick();
    assertThat(h.manual.launches()).hasSize(1); // still backing off

    for (int failure = 2; failure <= h.config.maxLaunchFailures(); failure++) {
      h.manual.nextOutcomes(noCapacity);
      h.clock.advance(Duration.ofMinutes(10));
      h.queue.tick();
      assertThat(h.manual.launches()).hasSize(failure);
    }
    assertThat(h.status(job)).isEqualTo("failed");
    assertThat(h.job(job).string("error"))
        .isEqualTo(
            "Could not start a build worker after 5 attempts: RESOURCE:FARGATE capacity unavailable. Retry later.");
  }

  @Test
  void unknown_launch_outcome_keeps_the_slot_until_evidence_or_lease_expiry(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(
        new LaunchOutcome.Unknown("read timed out"), new LaunchOutcome.Unknown("read timed out"));
    long job = submit(h, "alice");
    long waiting = submit(h, "bob");

    assertThat(h.liveWorkers()).hasSize(1);
    assertThat(h.liveWorkers().get(0).string("task_id")).isNull();
    h.clock.advance(
        Duration.ofSeconds(31)); // past the launch grace: the tick retries, still unknown
    h.queue.tick();
    assertThat(h.manual.launches()).hasSize(2);
    assertThat(h.manual.launches().get(1).token()).isEqualTo(h.manual.launches().get(0).token());
    assertThat(h.status(waiting)).isEqualTo("queued");

    h.clock.advance(h.config.lease()); // no task id: nothing can be checked, the lease decides
    h.queue.tick();
    assertThat(h.worker(h.manual.launches().get(0).workerId()).string("status"))
        .isEqualTo("exited");
    // The worker never started, so its job never ran: a launch failure, retried at the head after
    // the backoff, not an interruption.
    assertThat(h.status(job)).isEqualTo("queued");
    assertThat(h.job(job).intValue("recoveries")).isZero();
    assertThat(h.job(job).intValue("launch_failures")).isEqualTo(1);
    h.clock.advance(h.config.launchBackoff());
    h.queue.tick();
    assertThat(h.status(job)).isEqualTo("dispatched");
    assertThat(h.status(waiting)).isEqualTo("queued");
  }

  @Test
  void unknown_launch_outcome_is_resolved_by_a_relaunch_with_the_same_token(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(new LaunchOutcome.Unknown("HTTP 503"));
    long job = submit(h, "alice");
    h.clock.advance(Duration.ofSeconds(31));

    h.queue.tick();

    WorkerLaunch w = h.manual.launches().get(0);
    assertThat(h.manual.launches()).hasSize(2);
    assertThat(h.worker(w.workerId()).string("task_id"))
        .isEqualTo(ManualPlatform.taskIdOf(w.workerId()));
    assertThat(h.status(job)).isEqualTo("dispatched");
  }

  @Test
  void a_worker_that_started_despite_an_unknown_launch_gets_its_task_id_from_the_relaunch(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(new LaunchOutcome.Unknown("HTTP 500"));
    submit(h, "alice");
    WorkerLaunch w = startLastWorker(h);
    h.clock.advance(Duration.ofSeconds(31));

    h.queue.tick();

    assertThat(h.worker(w.workerId()).string("status")).isEqualTo("running");
    assertThat(h.worker(w.workerId()).string("task_id"))
        .isEqualTo(ManualPlatform.taskIdOf(w.workerId()));
  }

  @Test
  void a_worker_started_after_its_lease_runs_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    var launchedAt = h.clock.now();
    long job = submit(h, "alice");
    WorkerLaunch w = h.manual.lastLaunch();

    h.clock.set(launchedAt.plus(h.config.lease()));
    assertThat(h.workers.start(w.workerId(), w.token())).isEmpty();
    // Starting inside the deadline margin is just as late: there is no time left to run safely.
    h.clock.set(launchedAt.plus(h.config.lease()).minus(h.config.deadlineMargin()));
    assertThat(h.workers.start(w.workerId(), w.token())).isEmpty();

    assertThat(h.status(job)).isEqualTo("dispatched");
    assertThat(h.worker(w.workerId()).string("status")).isEqualTo("launching");
    assertThat(h.eventTypes(job)).doesNotContain("started");
  }

  @Test
  void chaining_keeps_the_slot_and_the_lease_and_stops_after_the_window(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long a = submit(h, "u1");
    long b = submit(h, "u2");
    long c = submit(h, "u3");
    WorkerLaunch w = startLastWorker(h);
    var expiresAt = h.worker(w.workerId()).instant("expires_at");

    Ended afterA = h.workers.end(w.workerId(), w.token(), a, JobStatus.SUCCEEDED, null);
    assertThat(afterA).isInstanceOf(Ended.Chained.class);
    assertThat(((Ended.Chained) afterA).next().id()).isEqualTo(b);
    assertThat(h.job(b).longValue("worker_id")).isEqualTo(w.workerId());
    assertThat(h.status(b)).isEqualTo("running");

    h.clock.advance(h.config.chainWindow().plusSeconds(1));
    Ended afterB = h.workers.end(w.workerId(), w.token(), b, JobStatus.SUCCEEDED, null);
    assertThat(afterB).isInstanceOf(Ended.Drained.class);
    assertThat(h.status(c)).isEqualTo("queued");
    assertThat(h.worker(w.workerId()).string("status")).isEqualTo("draining");
    assertThat(h.worker(w.workerId()).instant("expires_at")).isEqualTo(expiresAt);
    assertThat(h.manual.launches()).hasSize(1);
  }

  @Test
  void the_slot_stays_held_after_the_last_job_until_exit_evidence(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long a = submit(h, "u1");
    WorkerLaunch w = startLastWorker(h);
    h.workers.end(w.workerId(), w.token(), a, JobStatus.SUCCEEDED, null);
    long b = submit(h, "u2");

    assertThat(h.worker(w.workerId()).string("status")).isEqualTo("draining");
    h.queue.tick(); // the platform says the task still runs: no evidence, no new worker
    assertThat(h.status(b)).isEqualTo("queued");
    assertThat(h.manual.launches()).hasSize(1);

    exit(h, w);
    assertThat(h.status(b)).isEqualTo("dispatched");
    assertThat(h.manual.launches()).hasSize(2);
  }

  @Test
  void worker_exit_requeues_an_interrupted_job_at_the_head_of_its_lane(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long a = submit(h, "u1");
    long b = submit(h, "u2");
    WorkerLaunch w = startLastWorker(h);

    exit(h, w); // the worker died mid-job

    assertThat(h.job(a).longValue("worker_id")).isNotEqualTo(w.workerId());
    assertThat(h.status(a)).isEqualTo("dispatched"); // first again, before b
    assertThat(h.job(a).intValue("attempts")).isEqualTo(2);
    assertThat(h.status(b)).isEqualTo("queued");
  }

  @Test
  void progress_resets_the_recovery_count(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");

    WorkerLaunch w1 = startLastWorker(h);
    exit(h, w1);
    assertThat(h.job(job).intValue("recoveries")).isEqualTo(1);
    WorkerLaunch w2 = startLastWorker(h);
    exit(h, w2);
    assertThat(h.job(job).intValue("recoveries")).isEqualTo(2);

    WorkerLaunch w3 = startLastWorker(h);
    assertThat(h.workers.progress(w3.workerId(), w3.token(), job, 1))
        .isEqualTo(ProgressAck.RECORDED);
    exit(h, w3);
    assertThat(h.job(job).intValue("recoveries")).isZero();
    assertThat(h.status(job)).isEqualTo("dispatched");
  }

  @Test
  void the_fourth_interruption_without_progress_fails_the_job_with_the_reference_message(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    for (int interruption = 1; interruption <= 3; interruption++) {
      exit(h, startLastWorker(h));
      assertThat(h.status(job)).as("after interruption " + interruption).isEqualTo("dispatched");
    }
    exit(h, startLastWorker(h));

    assertThat(h.status(job)).isEqualTo("failed");
    assertThat(h.job(job).intValue("recoveries")).isEqualTo(4);
    assertThat(h.job(job).string("error"))
        .isEqualTo("Build worker repeatedly exited without progress. Check worker logs and retry.");
    assertThat(h.liveWorkers()).isEmpty();
  }

  @Test
  void liveness_checks_are_rate_limited_per_worker(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice");
    TickTransitions tick = new TickTransitions(h.db, h.config, h.clock);

    assertThat(tick.claimDueChecks(100)).hasSize(1);
    assertThat(tick.claimDueChecks(100)).isEmpty();
    h.clock.advance(Duration.ofSeconds(4));
    assertThat(tick.claimDueChecks(100)).isEmpty();
    h.clock.advance(Duration.ofSeconds(1));
    assertThat(tick.claimDueChecks(100)).hasSize(1);
  }

  @Test
  void liveness_checks_are_never_duplicated_by_concurrent_callers(TestDatabase tdb)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(40));
    for (int i = 0; i < 40; i++) {
      submit(h, "user" + i);
    }
    TickTransitions tick = new TickTransitions(h.db, h.config, h.clock);
    int rounds = 20;
    for (int round = 0; round < rounds; round++) {
      List<CompletableFuture<List<TickTransitions.DueCheck>>> callers = new java.util.ArrayList<>();
      for (int t = 0; t < 8; t++) {
        callers.add(CompletableFuture.supplyAsync(() -> tick.claimDueChecks(100)));
      }
      List<Long> claimed = new java.util.ArrayList<>();
      for (var c : callers) {
        c.get(30, TimeUnit.SECONDS).forEach(d -> claimed.add(d.workerId()));
      }
      assertThat(claimed).as("round " + round).hasSize(40).doesNotHaveDuplicates();
      h.clock.advance(h.config.livenessInterval());
    }
  }

  @Test
  void lease_reclaim_skips_workers_that_can_be_checked(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(3));
    h.manual.nextOutcomes(
        new LaunchOutcome.Started("checkable-1"),
        new LaunchOutcome.Started("elsewhere-2"),
        new LaunchOutcome.Unknown("timeout"));
    long onCheckable = submit(h, "u1");
    long onUncheckable = submit(h, "u2");
    long onUnknown = submit(h, "u3");
    h.manual.setCheckable(id -> id.startsWith("checkable"));
    h.manual.nextOutcomes(
        new LaunchOutcome.Unknown("timeout")); // the tick's relaunch learns nothing either

    h.clock.advance(h.config.lease());
    h.queue.tick();

    assertThat(h.job(onCheckable).string("status")).isEqualTo("dispatched");
    assertThat(h.worker(h.job(onCheckable).longValue("worker_id")).string("status"))
        .isEqualTo("launching");
    assertThat(h.manual.stopRequests())
        .containsExactly("checkable-1"); // outlived its lease: asked to stop
    // Neither worker ever started (this test plays no worker): launch failures, not interruptions.
    assertThat(h.job(onUncheckable).intValue("launch_failures")).isEqualTo(1);
    assertThat(h.job(onUnknown).intValue("launch_failures")).isEqualTo(1);
    assertThat(h.workers())
        .filteredOn(w -> "exited".equals(w.string("status")))
        .extracting(w -> w.string("exit_reason"))
        .containsOnly("not started: lease expired with no way to check the worker");
  }

  @Test
  void housekeeping_never_deletes_a_live_workers_identity(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(2));
    long done = submit(h, "u1");
    long live = submit(h, "u2");
    WorkerLaunch first = h.manual.launches().get(0);
    h.workers.start(first.workerId(), first.token());
    h.workers.end(first.workerId(), first.token(), done, JobStatus.SUCCEEDED, null);
    exit(h, first);
    Rows.events().published().updateAll(tdb.jdbc());
    // A live worker far older than the retention: its lease is long gone, but it can be checked.
    h.clock.advance(h.config.retention().plusDays(1));

    TickTransitions.Housekept housekept =
        new TickTransitions(h.db, h.config, h.clock).housekeep(1000);

    assertThat(housekept.workers()).isEqualTo(1);
    assertThat(housekept.jobs()).isEqualTo(1);
    assertThat(h.workers())
        .extracting(w -> w.longValue("id"))
        .containsExactly(h.manual.launches().get(1).workerId());
    assertThat(h.status(live)).isEqualTo("dispatched");
  }

  @Test
  void housekeeping_keeps_finished_jobs_whose_history_is_not_yet_published(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "u1");
    h.queue.cancel(job, "u1");
    h.clock.advance(h.config.retention().plusDays(1));

    assertThat(new TickTransitions(h.db, h.config, h.clock).housekeep(1000).jobs()).isZero();
    assertThat(h.status(job)).isIn("cancelled", "dispatched");
  }

  @Test
  void cancelling_a_queued_job_cancels_it_at_once(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice");
    long queued = submit(h, "bob");

    assertThat(h.queue.cancel(queued, "bob")).isInstanceOf(JobTransitions.Cancelled.Now.class);
    assertThat(h.status(queued)).isEqualTo("cancelled");
    assertThat(h.queue.cancel(queued, "bob"))
        .isEqualTo(new JobTransitions.Cancelled.Unchanged(queued, JobStatus.CANCELLED));
    assertThat(h.queue.cancel(queued, "mallory"))
        .isInstanceOf(JobTransitions.Cancelled.NotFound.class);
  }

  @Test
  void cancelling_a_running_job_stops_its_worker_and_sets_the_flag_its_check_in_reads(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch w = startLastWorker(h);

    assertThat(h.queue.cancel(job, "alice")).isInstanceOf(JobTransitions.Cancelled.Requested.class);
    assertThat(h.manual.stopRequests()).containsExactly(ManualPlatform.taskIdOf(w.workerId()));
    assertThat(h.status(job)).isEqualTo("running");
    assertThat(h.workers.progress(w.workerId(), w.token(), job, 1))
        .isEqualTo(ProgressAck.CANCEL_REQUESTED);
    h.workers.end(w.workerId(), w.token(), job, JobStatus.CANCELLED, null);
    assertThat(h.status(job)).isEqualTo("cancelled");
  }

  @Test
  void cancelling_a_job_whose_worker_has_not_started_stops_the_task(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch w = h.manual.lastLaunch();

    h.queue.cancel(job, null); // an admin
    assertThat(h.manual.stopRequests()).containsExactly(ManualPlatform.taskIdOf(w.workerId()));
    exit(h, w);
    assertThat(h.status(job)).isEqualTo("cancelled");
  }

  @Test
  void changing_a_users_flag_moves_their_queued_jobs_to_the_new_lane(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long alice = submit(h, "alice");
    long bob1 = submit(h, "bob");
    long bob2 = submit(h, "bob");

    JobTransitions.LaneChange change = h.queue.setDedicated("bob", true);

    assertThat(change.movedJobs()).containsExactly(bob1, bob2);
    assertThat(h.job(bob1).string("lane")).isEqualTo("user:bob");
    assertThat(h.status(bob1)).isEqualTo("dispatched"); // bob's own slot was free
    assertThat(h.status(bob2)).isEqualTo("queued");
    assertThat(h.status(alice)).isEqualTo("dispatched");
    assertThat(h.queue.setDedicated("bob", false).movedJobs()).containsExactly(bob2);
    assertThat(h.job(bob2).string("lane")).isEqualTo("shared");
  }

  @Test
  void follow_up_jobs_are_committed_together_with_success(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch w = startLastWorker(h);
    Json followUps =
        new Json("[{\"kind\": \"noop\", \"payload\": {\"n\": 1}}, {\"kind\": \"noop\"}]");

    Ended ended =
        h.workers.transactionally(
            tx -> {
              assertThat(h.workers.addFollowUps(tx, w.workerId(), w.token(), job, followUps))
                  .isInstanceOf(WorkerTransitions.FollowUps.Added.class);
              return h.workers.end(
                  tx, w.workerId(), w.token(), job, JobStatus.SUCCEEDED, null, null);
            });

    // The first follow-up was chained onto the same worker in the same statement.
    assertThat(ended).isInstanceOf(Ended.Chained.class);
    assertThat(
            tdb.jdbc()
                .query(
                    "select user_id, payload from build_job where id <> :id order by id",
                    Params.of("id", job)))
        .extracting(r -> r.string("user_id") + " " + r.json("payload"))
        .containsExactly("alice {\"n\": 1}", "alice {}");
  }

  @Test
  void follow_up_jobs_of_a_fenced_off_worker_are_not_committed(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch w = startLastWorker(h);
    UUID wrongToken = UUID.randomUUID();

    WorkerTransitions.FollowUps added =
        h.workers.transactionally(
            tx ->
                h.workers.addFollowUps(
                    tx, w.workerId(), wrongToken, job, new Json("[{\"kind\": \"noop\"}]")));

    assertThat(added).isInstanceOf(WorkerTransitions.FollowUps.FencedOff.class);
    assertThat(tdb.jdbc().query("select id from build_job")).hasSize(1);
  }

  @Test
  void a_fenced_off_worker_learns_it_from_zero_rows_and_changes_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch w = startLastWorker(h);
    exit(h, w); // e.g. the stop evidence of a task that is in fact still finishing

    assertThat(h.workers.progress(w.workerId(), w.token(), job, 5))
        .isEqualTo(ProgressAck.FENCED_OFF);
    assertThat(h.workers.end(w.workerId(), w.token(), job, JobStatus.SUCCEEDED, null))
        .isInstanceOf(Ended.FencedOff.class);
    assertThat(h.job(job).intValue("progress")).isZero();
    assertThat(h.status(job)).isEqualTo("dispatched"); // on its next worker
  }

  @Test
  void a_stop_event_without_a_worker_id_or_task_id_is_refused(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    assertThatThrownBy(() -> h.queue.taskStopped(null, null, null, "?"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void a_stopped_task_seen_by_the_liveness_check_frees_its_slot(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch w = startLastWorker(h);
    h.manual.setState(
        ManualPlatform.taskIdOf(w.workerId()),
        new TaskState.Stopped("Essential container in task exited"));

    BuildQueue.TickReport report = h.queue.tick();

    assertThat(report.checked()).isEqualTo(1);
    assertThat(report.exited()).isEqualTo(1);
    assertThat(h.worker(w.workerId()).string("exit_reason"))
        .isEqualTo("Essential container in task exited");
    assertThat(h.status(job)).isEqualTo("dispatched"); // recovered onto a new worker
  }
}
