package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.db.Json;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.GateHandler;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * docs/architecture.md §4.7: a submission with a supersede key replaces the same user's unfinished
 * jobs with that key, and a user may have at most their quota of queued jobs; both inside the
 * enqueue statement. Runs on every database adapter (the aws module runs this package on the Data
 * API).
 */
@ExtendWith(PostgresExtension.class)
class SupersedeAndQuotaTest {

  private static JobTransitions.Enqueued submit(QueueHarness h, String user, String supersedeKey) {
    return h.queue.enqueue(user, "noop", new Json("{}"), null, supersedeKey);
  }

  private static Map<String, Long> rowCounts(TestDatabase tdb) {
    return Map.of(
        "build_job", count(tdb, "select count(*) as n from build_job"),
        "build_job_event", count(tdb, "select count(*) as n from build_job_event"),
        "build_lane_turn", count(tdb, "select count(*) as n from build_lane_turn"),
        "build_user", count(tdb, "select count(*) as n from build_user"));
  }

  private static long count(TestDatabase tdb, String sql) {
    return tdb.jdbc().query(sql).get(0).longValue("n");
  }

  @Test
  void ten_rapid_submissions_with_one_key_leave_one_build_to_run_besides_the_one_that_had_started(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    List<Long> ids = new ArrayList<>();
    ids.add(submit(h, "alice", "article-7").jobId());
    WorkerLaunch first = h.manual.lastLaunch();
    assertThat(
            h.workers.start(first.workerId(), first.token()).orElseThrow().job().orElseThrow().id())
        .isEqualTo(ids.get(0));
    for (int i = 2; i <= 10; i++) {
      ids.add(submit(h, "alice", "article-7").jobId());
    }

    // The one that had started is asked to stop; the eight between were cancelled while queued,
    // each by the job after it; only the last is left to run.
    assertThat(h.job(ids.get(0)).string("status")).isEqualTo("running");
    assertThat(h.job(ids.get(0)).bool("cancel_requested")).isTrue();
    assertThat(h.events(ids.get(0)).get(h.events(ids.get(0)).size() - 1).string("message"))
        .startsWith("superseded by job " + ids.get(1) + ": cancel requested");
    for (int i = 1; i < 9; i++) {
      assertThat(h.status(ids.get(i))).isEqualTo("cancelled");
      assertThat(h.job(ids.get(i)).longValue("superseded_by")).isEqualTo(ids.get(i + 1));
      assertThat(h.events(ids.get(i)))
          .extracting(r -> r.string("message"))
          .contains("superseded by job " + ids.get(i + 1));
    }
    assertThat(h.status(ids.get(9))).isEqualTo("queued");
    // Its worker is stopped once, by the submission that superseded it, in no extra statement.
    assertThat(h.manual.stopRequests()).containsExactly(ManualPlatform.taskIdOf(first.workerId()));

    // The stopped worker reads the cancel at its check-in and ends the job; its exit dispatches
    // the last one.
    assertThat(h.workers.checkIn(first.workerId(), first.token(), ids.get(0), null, null))
        .isEqualTo(WorkerTransitions.ProgressAck.CANCEL_REQUESTED);
    h.workers.end(first.workerId(), first.token(), ids.get(0), JobStatus.CANCELLED, null);
    h.queue.taskStopped(
        ManualPlatform.taskIdOf(first.workerId()), first.workerId(), first.token(), "exited");
    WorkerLaunch second = h.manual.lastLaunch();
    assertThat(second.workerId()).isNotEqualTo(first.workerId());
    assertThat(
            h.workers
                .start(second.workerId(), second.token())
                .orElseThrow()
                .job()
                .orElseThrow()
                .id())
        .isEqualTo(ids.get(9));
    assertThat(h.manual.launches()).hasSize(2);
  }

  @Test
  void ten_rapid_submissions_on_live_workers_run_the_last_and_the_one_that_had_started(
      TestDatabase tdb) throws InterruptedException {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      List<Long> ids = new ArrayList<>();
      ids.add(
          h.queue.enqueue("alice", GateHandler.KIND, new Json("{}"), null, "article-7").jobId());
      h.gates.awaitEntered(ids.get(0)); // the first build runs and holds the one shared slot
      for (int i = 2; i <= 10; i++) {
        ids.add(
            h.queue.enqueue("alice", GateHandler.KIND, new Json("{}"), null, "article-7").jobId());
      }
      h.gates.open(ids.get(0));
      h.gates.awaitEntered(ids.get(9));
      h.gates.open(ids.get(9));
      h.awaitStatus(ids.get(9), "succeeded");
      h.awaitWorkersExited();
      h.awaitQuiet();

      assertThat(
              tdb.jdbc().query("select id from build_job where started_at is not null order by id"))
          .extracting(r -> r.longValue("id"))
          .containsExactly(ids.get(0), ids.get(9));
      assertThat(h.job(ids.get(0)).bool("cancel_requested")).isTrue();
      for (int i = 1; i < 9; i++) {
        assertThat(h.status(ids.get(i))).isEqualTo("cancelled");
        assertThat(h.events(ids.get(i)))
            .extracting(r -> r.string("message"))
            .contains("superseded by job " + ids.get(i + 1));
      }
    }
  }

  @Test
  void a_supersede_key_replaces_only_its_users_jobs_with_that_key(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(1));
    long running = submit(h, "alice", null).jobId(); // holds the one slot, so the rest stay queued
    long otherKey = submit(h, "alice", "article-8").jobId();
    long bobs = submit(h, "bob", "article-7").jobId();
    long noKey = submit(h, "alice", null).jobId();
    long old = submit(h, "alice", "article-7").jobId();

    JobTransitions.Enqueued replacing = submit(h, "alice", "article-7");

    assertThat(replacing.superseded()).containsExactly(old);
    assertThat(replacing.supersededCount()).isEqualTo(1);
    assertThat(replacing.cancelRequested()).isEmpty();
    assertThat(List.of(running, otherKey, bobs, noKey))
        .allSatisfy(id -> assertThat(h.status(id)).isNotEqualTo("cancelled"));
    assertThat(h.status(old)).isEqualTo("cancelled");
  }

  @Test
  void a_repeated_idempotency_key_supersedes_nothing_again(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice", null); // holds the slot
    long old = submit(h, "alice", "article-7").jobId();
    JobTransitions.Enqueued first =
        h.queue.enqueue("alice", "noop", new Json("{}"), "save-2", "article-7");
    long newer = submit(h, "alice", "article-7").jobId();

    JobTransitions.Enqueued again =
        h.queue.enqueue("alice", "noop", new Json("{}"), "save-2", "article-7");

    assertThat(first.superseded()).containsExactly(old);
    assertThat(again.created()).isFalse();
    assertThat(again.jobId()).isEqualTo(first.jobId());
    assertThat(again.superseded()).isEmpty();
    assertThat(h.status(newer)).isEqualTo("queued");
  }

  @Test
  void the_1001st_queued_job_is_refused_and_nothing_is_written(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice", null); // dispatched: it holds the slot and is not queued
    Rows.job().user("alice").lane("shared").insert(tdb.jdbc(), QueueConfig.DEFAULT_MAX_QUEUED_JOBS);
    Map<String, Long> before = rowCounts(tdb);

    assertThatThrownBy(() -> submit(h, "alice", null))
        .isInstanceOfSatisfying(
            QueueFullException.class,
            e -> {
              assertThat(e.queued()).isEqualTo(1000);
              assertThat(e.limit()).isEqualTo(1000);
              assertThat(e.moreThanCounted()).isFalse();
            });
    assertThatThrownBy(() -> h.queue.enqueue("alice", "noop", new Json("{}"), "k-1", null))
        .isInstanceOf(QueueFullException.class);
    assertThat(rowCounts(tdb)).isEqualTo(before);

    // Another user is not held by alice's quota.
    assertThat(submit(h, "bob", null).created()).isTrue();
  }

  @Test
  void a_job_that_supersedes_a_queued_one_fits_a_full_quota(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withMaxQueuedJobs(3));
    submit(h, "alice", null); // dispatched, not queued
    long old = submit(h, "alice", "article-7").jobId();
    submit(h, "alice", null);
    submit(h, "alice", null);
    assertThatThrownBy(() -> submit(h, "alice", null)).isInstanceOf(QueueFullException.class);

    JobTransitions.Enqueued replacing = submit(h, "alice", "article-7");

    assertThat(replacing.superseded()).containsExactly(old);
    assertThat(
            count(
                tdb,
                "select count(*) as n from build_job where user_id = 'alice' and status = 'queued'"))
        .isEqualTo(3);
  }

  @Test
  void a_users_own_quota_replaces_the_default_until_it_is_reset(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    submit(h, "alice", null); // dispatched
    JobTransitions.LaneChange set =
        h.queue.updateUser(
            "alice",
            new JobTransitions.UserChange(Optional.empty(), Optional.of(OptionalInt.of(2))));
    assertThat(set.maxQueuedJobs()).isEqualTo(2);
    assertThat(set.ownMaxQueuedJobs()).isTrue();
    assertThat(set.dedicatedWorker()).isFalse();
    submit(h, "alice", null);
    submit(h, "alice", null);
    assertThatThrownBy(() -> submit(h, "alice", null))
        .isInstanceOfSatisfying(QueueFullException.class, e -> assertThat(e.limit()).isEqualTo(2));

    JobTransitions.LaneChange reset =
        h.queue.updateUser(
            "alice",
            new JobTransitions.UserChange(Optional.empty(), Optional.of(OptionalInt.empty())));

    assertThat(reset.maxQueuedJobs()).isEqualTo(QueueConfig.DEFAULT_MAX_QUEUED_JOBS);
    assertThat(reset.ownMaxQueuedJobs()).isFalse();
    assertThat(submit(h, "alice", null).created()).isTrue();
  }
}
