package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.core.WorkerTransitions.ProgressAck;
import buildqueue.db.Json;
import buildqueue.db.UniqueViolationException;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.InProcessPlatform.LaunchPlan;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.WorkerLoop;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** One test per invariant of docs/architecture.md §5. */
@ExtendWith(PostgresExtension.class)
class InvariantTest {

  private static long submit(QueueHarness h, String user) {
    return h.queue.enqueue(user, "noop", new Json("{}"), null).jobId();
  }

  @Test
  void invariant_1_the_database_refuses_a_second_live_worker_in_a_slot(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice");
    Rows.WorkerRow second =
        Rows.worker().lane("shared").slot("shared#1"); // a new token at each insert

    assertThatThrownBy(() -> second.insert(h.db)).isInstanceOf(UniqueViolationException.class);
    // Exited workers do not count: the slot's history may hold many.
    Rows.worker().status(WorkerStatus.EXITED).updateAll(tdb.jdbc());
    long inserted = second.insert(h.db);
    assertThat(h.liveWorkers())
        .extracting(w -> w.longValue("id") + " " + w.string("slot"))
        .containsExactly(inserted + " shared#1");
  }

  @Test
  void invariant_2_only_the_jobs_worker_with_its_token_can_change_the_job(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(2));
    long job = submit(h, "alice");
    submit(h, "bob");
    WorkerLaunch owner = h.manual.launches().get(0);
    WorkerLaunch other = h.manual.launches().get(1);
    h.workers.start(owner.workerId(), owner.token());
    h.workers.start(other.workerId(), other.token());

    assertThat(h.workers.progress(owner.workerId(), UUID.randomUUID(), job, 7))
        .isEqualTo(ProgressAck.FENCED_OFF);
    assertThat(h.workers.progress(other.workerId(), other.token(), job, 7))
        .isEqualTo(ProgressAck.FENCED_OFF);
    assertThat(h.workers.end(other.workerId(), other.token(), job, JobStatus.FAILED, "x"))
        .isInstanceOf(Ended.FencedOff.class);
    assertThat(h.workers.end(owner.workerId(), UUID.randomUUID(), job, JobStatus.FAILED, "x"))
        .isInstanceOf(Ended.FencedOff.class);
    assertThat(h.job(job).intValue("progress")).isZero();
    assertThat(h.status(job)).isEqualTo("running");

    assertThat(h.workers.progress(owner.workerId(), owner.token(), job, 7))
        .isEqualTo(ProgressAck.RECORDED);
    assertThat(h.job(job).intValue("progress")).isEqualTo(7);
  }

  @Test
  void invariant_3_a_slot_is_freed_only_on_evidence_or_lease_expiry_of_an_uncheckable_worker(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice");
    WorkerLaunch w = h.manual.lastLaunch();
    String task = ManualPlatform.taskIdOf(w.workerId());

    h.manual.setState(task, new TaskState.Running());
    h.clock.advance(h.config.lease());
    h.queue.tick();
    assertThat(h.worker(w.workerId()).string("status"))
        .as("running past its lease")
        .isEqualTo("launching");

    h.manual.setState(task, new TaskState.Missing());
    h.clock.advance(Duration.ofMinutes(-30)); // back inside the lease: MISSING is not evidence yet
    h.clock.advance(h.config.livenessInterval());
    h.queue.tick();
    assertThat(h.worker(w.workerId()).string("status"))
        .as("missing inside its lease")
        .isEqualTo("launching");

    h.clock.advance(Duration.ofMinutes(31));
    h.queue.tick();
    assertThat(h.worker(w.workerId()).string("status"))
        .as("missing after its lease")
        .isEqualTo("exited");
  }

  @Test
  void invariant_4_a_worker_never_runs_past_its_lease(TestDatabase tdb) {
    // A 2 s lifetime: the worker's hard deadline (lease minus margin) kills it mid-job.
    QueueConfig shortLease =
        QueueHarness.testConfig()
            .withLease(Duration.ofMillis(1500), Duration.ofMillis(1000), Duration.ofMillis(1000));
    try (QueueHarness h = QueueHarness.open(tdb, shortLease)) {
      h.platform.plan(
          LaunchPlan.normal().evidence(buildqueue.testing.InProcessPlatform.Evidence.WITHHOLD));
      long job =
          h.queue
              .enqueue("alice", "demo", new Json("{\"steps\": 1000, \"stepMillis\": 10}"), null)
              .jobId();
      long workerId = h.job(job).longValue("worker_id");

      h.awaitQuiet();

      assertThat(h.job(job).intValue("progress")).isBetween(1, 999);
      assertThat(h.platform.check(List.of("inproc-1")).get("inproc-1"))
          .isEqualTo(
              new TaskState.Stopped(
                  "killed: worker " + workerId + " reached its hard deadline before the lease"));
      // Once its exit is seen the job moves on, and nothing of the dead worker can write again.
      h.platform.deliverWithheld();
      assertThat(h.job(job).longValue("worker_id")).isNotEqualTo(workerId);
      var token = h.worker(workerId).uuid("token");
      assertThat(h.workers.progress(workerId, token, job, 999))
          .isEqualTo(WorkerTransitions.ProgressAck.FENCED_OFF);
    }
  }

  @Test
  void invariant_5_no_job_is_lost_whatever_point_its_worker_crashes_at(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      List<Long> jobs = new ArrayList<>();
      for (WorkerLoop.Point point : WorkerLoop.Point.values()) {
        h.platform.plan(LaunchPlan.normal().crashAt(point));
        jobs.add(
            h.queue
                .enqueue(
                    "user-" + point, "demo", new Json("{\"steps\": 2, \"stepMillis\": 1}"), null)
                .jobId());
        h.awaitQuiet();
      }
      // A worker that crashed before its start never ran its job: that job waits out a launch
      // backoff before its next worker.
      h.clock.advance(h.config.launchBackoff());
      h.queue.tick();
      h.awaitQuiet();
      for (long job : jobs) {
        assertThat(h.status(job)).as("job " + job).isEqualTo("succeeded");
      }
      assertThat(h.liveWorkers()).isEmpty();
    }
  }

  @Test
  void
      invariant_6_an_interrupted_job_is_retried_at_the_head_and_fails_only_after_four_without_progress(
          TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long head = submit(h, "alice");
    long behind = submit(h, "bob");
    for (int i = 1; i <= 5; i++) {
      WorkerLaunch w = h.manual.lastLaunch();
      assertThat(h.job(head).longValue("worker_id"))
          .as("interruption " + i)
          .isEqualTo(w.workerId());
      h.workers.start(w.workerId(), w.token());
      if (i == 2) {
        h.workers.progress(w.workerId(), w.token(), head, 1); // progress: the count starts again
      }
      h.queue.taskStopped(null, w.workerId(), w.token(), "crash " + i);
    }
    // Interruption 2 made progress, so 3, 4 and 5 are the first three without: still retried.
    assertThat(h.status(head)).isEqualTo("dispatched");
    assertThat(h.job(head).intValue("recoveries")).isEqualTo(3);
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token());
    h.queue.taskStopped(null, w.workerId(), w.token(), "crash 6");
    assertThat(h.status(head)).isEqualTo("failed");
    assertThat(h.job(head).intValue("recoveries")).isEqualTo(4);
    assertThat(h.status(behind)).isEqualTo("dispatched");
  }

  @Test
  void invariant_7_a_definite_launch_failure_frees_the_slot_at_once_and_an_unknown_one_holds_it(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(
        new LaunchOutcome.NotStarted("AccessDeniedException", false),
        new LaunchOutcome.Unknown("timeout"));
    submit(h, "alice");
    assertThat(h.liveWorkers()).isEmpty();

    long second = submit(h, "bob");
    assertThat(h.liveWorkers()).hasSize(1);
    long third = submit(h, "carol");
    h.queue.tick();
    assertThat(h.status(third)).isEqualTo("queued");
    assertThat(h.status(second)).isEqualTo("dispatched");

    h.queue.taskStopped(null, h.manual.lastLaunch().workerId(), null, "evidence after all");
    assertThat(h.liveWorkers()).isEmpty(); // evidence frees the slot
    assertThat(h.status(second))
        .isEqualTo("queued"); // it never ran: a launch failure, with backoff
    h.clock.advance(h.config.launchBackoff());
    h.queue.tick();
    assertThat(h.liveWorkers()).hasSize(1);
    assertThat(h.status(second)).isEqualTo("dispatched"); // back at the head, on a new worker
  }

  @Test
  void invariant_8_enqueue_is_idempotent_per_user_and_key_under_concurrency(TestDatabase tdb)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    for (int round = 0; round < 10; round++) {
      String key = "key-" + round;
      List<CompletableFuture<JobTransitions.Enqueued>> calls = new ArrayList<>();
      for (int t = 0; t < 12; t++) {
        calls.add(
            CompletableFuture.supplyAsync(
                () -> h.queue.enqueue("alice", "noop", new Json("{}"), key)));
      }
      List<Long> ids = new ArrayList<>();
      int created = 0;
      for (var c : calls) {
        JobTransitions.Enqueued e = c.get(30, TimeUnit.SECONDS);
        ids.add(e.jobId());
        created += e.created() ? 1 : 0;
      }
      assertThat(ids).as("round " + round).containsOnly(ids.get(0));
      assertThat(created).isEqualTo(1);
    }
    assertThat(tdb.jdbc().query("select id from build_job")).hasSize(10);
  }

  @Test
  void invariant_9_duplicated_late_or_reordered_stop_events_change_nothing_after_the_first(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = submit(h, "alice");
    WorkerLaunch first = h.manual.lastLaunch();
    h.workers.start(first.workerId(), first.token());
    String task = ManualPlatform.taskIdOf(first.workerId());

    assertThat(h.queue.taskStopped(task, first.workerId(), first.token(), "stopped")).isPresent();
    WorkerLaunch second = h.manual.lastLaunch();
    var jobAfterFirst = h.job(job).asMap();
    var secondWorker = h.worker(second.workerId()).asMap();

    assertThat(h.queue.taskStopped(task, first.workerId(), first.token(), "stopped (duplicate)"))
        .isEmpty();
    assertThat(h.queue.taskStopped(task, null, null, "stopped (late, by task only)")).isEmpty();
    assertThat(h.queue.taskStopped("task-of-someone-else", second.workerId(), null, "wrong task"))
        .isEmpty();
    assertThat(h.queue.taskStopped(null, second.workerId(), UUID.randomUUID(), "forged token"))
        .isEmpty();

    assertThat(h.job(job).asMap()).isEqualTo(jobAfterFirst);
    assertThat(h.worker(second.workerId()).asMap()).isEqualTo(secondWorker);
    assertThat(h.eventTypes(job)).containsOnlyOnce("interrupted");
  }

  /**
   * §5.10: the first attempt stages its artifacts and is fenced off before its end (its worker's
   * exit recorded); its late publishing end writes nothing. The retry, on a new worker, publishes
   * its own: every row is of attempt 2.
   */
  @Test
  void invariant_10_a_jobs_artifacts_are_exactly_those_of_its_succeeding_attempt(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = h.submit("alice", "noop", "{}");
    WorkerLaunch first = h.manual.lastLaunch();
    h.workers.start(first.workerId(), first.token()).orElseThrow();
    assertThat(h.workers.stageArtifacts(first.workerId(), first.token(), job)).hasValue(1);
    h.queue.taskStopped(null, first.workerId(), first.token(), "exited");
    Json one = new Json("[{\"name\": \"out.txt\", \"bytes\": 1, \"sha256\": \"aa\"}]");

    assertThat(h.workers.endPublishing(first.workerId(), first.token(), job, one, null, null))
        .isInstanceOf(Ended.FencedOff.class);
    assertThat(artifactRows(h, job)).isEmpty();

    WorkerLaunch second = h.manual.lastLaunch();
    assertThat(second.workerId()).isNotEqualTo(first.workerId());
    h.workers.start(second.workerId(), second.token()).orElseThrow();
    assertThat(h.workers.stageArtifacts(second.workerId(), second.token(), job)).hasValue(2);
    Json two = new Json("[{\"name\": \"out.txt\", \"bytes\": 2, \"sha256\": \"bb\"}]");
    assertThat(h.workers.endPublishing(second.workerId(), second.token(), job, two, null, null))
        .isNotInstanceOf(Ended.FencedOff.class);

    assertThat(h.status(job)).isEqualTo("succeeded");
    assertThat(artifactRows(h, job))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.intValue("attempt")).isEqualTo(2);
              assertThat(r.longValue("worker_id")).isEqualTo(second.workerId());
              assertThat(r.string("sha256")).isEqualTo("bb");
            });
  }

  private static List<buildqueue.db.Row> artifactRows(QueueHarness h, long job) {
    return h.testDb
        .jdbc()
        .query(
            "select * from build_job_artifact where job_id = :id",
            buildqueue.db.Params.of("id", job));
  }
}
