package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.testing.InProcessPlatform.Evidence;
import buildqueue.testing.InProcessPlatform.LaunchPlan;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.WorkerLoop;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The worker loop and the demo kind, with real in-process workers. */
@ExtendWith(PostgresExtension.class)
class WorkerLoopTest {

  private static long demo(QueueHarness h, String user, String payload) {
    return h.queue.enqueue(user, "demo", new Json(payload), null).jobId();
  }

  @Test
  void a_demo_job_reports_progress_after_each_step_and_succeeds(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job = demo(h, "alice", "{\"steps\": 3, \"stepMillis\": 1}");
      h.awaitStatus(job, "succeeded");
      h.awaitWorkersExited();
      assertThat(h.job(job).intValue("progress")).isEqualTo(3);
      assertThat(h.worker(h.job(job).longValue("worker_id")).string("exit_reason"))
          .isEqualTo("exited: drained");
    }
  }

  @Test
  void fail_at_step_ends_the_job_failed_with_a_message(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job = demo(h, "alice", "{\"steps\": 3, \"stepMillis\": 1, \"failAtStep\": 2}");
      h.awaitStatus(job, "failed");
      assertThat(h.job(job).string("error")).isEqualTo("demo job failed on purpose at step 2 of 3");
      assertThat(h.job(job).intValue("progress")).isEqualTo(1);
    }
  }

  @Test
  void a_crash_after_progress_recovers_and_resumes_from_the_last_progress(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job =
          demo(
              h,
              "alice",
              "{\"steps\": 4, \"stepMillis\": 1, \"crashAtStep\": 3, \"crashAttempts\": 1}");
      h.awaitStatus(job, "succeeded");
      assertThat(h.job(job).intValue("attempts")).isEqualTo(2);
      assertThat(h.job(job).intValue("recoveries")).isZero();
      assertThat(h.events(job))
          .extracting(r -> r.string("message"))
          .contains(
              "interrupted: progress 0→2, recoveries 0, stop reason killed: job "
                  + job
                  + " asked its worker to crash");
    }
  }

  @Test
  void a_crash_before_any_progress_fails_after_four_interruptions(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job = demo(h, "alice", "{\"steps\": 2, \"stepMillis\": 1, \"crashAtStep\": 1}");
      h.awaitStatus(job, "failed");
      assertThat(h.job(job).string("error")).isEqualTo(ExitTransitions.REPEATED_EXIT_ERROR);
      assertThat(h.job(job).intValue("attempts")).isEqualTo(4);
    }
  }

  @Test
  void a_worker_chains_queued_jobs_of_its_lane_in_order(TestDatabase tdb) throws Exception {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long first = h.submitGate("u1");
      h.gates.awaitEntered(first);
      long b = h.submit("u2", "noop", "{}");
      long c = h.submit("u3", "noop", "{}");
      h.gates.open(first);
      h.awaitStatus(c, "succeeded");
      h.awaitWorkersExited();
      assertThat(h.noopRuns).containsExactly(b, c);
      assertThat(h.workers()).hasSize(1);
    }
  }

  @Test
  void a_worker_whose_job_is_reassigned_stops_at_its_next_write(TestDatabase tdb) throws Exception {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      h.platform.plan(LaunchPlan.normal().evidence(Evidence.WITHHOLD));
      long job = h.submit("alice", "gate", "{\"reportAfterGate\": 5}");
      h.gates.awaitEntered(job);
      long oldWorker = h.job(job).longValue("worker_id");
      // Evidence arrives (wrongly) while the worker still runs: the job moves to a new worker.
      h.queue.taskStopped(
          null, oldWorker, null, "a stop event for a task that is in fact still finishing");
      h.gates.open(job); // the new worker runs it and reports 5; the old one is fenced off
      h.awaitStatus(job, "succeeded");
      h.awaitQuiet();
      assertThat(h.job(job).longValue("worker_id")).isNotEqualTo(oldWorker);
      assertThat(h.platform.check(List.of("inproc-1")).get("inproc-1").toString())
          .contains("exited: fenced_off");
    }
  }

  @Test
  void a_cancelled_running_job_ends_cancelled_at_its_next_progress_report(TestDatabase tdb)
      throws Exception {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job = h.submit("alice", "gate", "{\"reportAfterGate\": 1}");
      h.gates.awaitEntered(job);
      h.queue.cancel(job, "alice");
      h.gates.open(job);
      h.awaitStatus(job, "cancelled");
      assertThat(h.eventTypes(job)).containsSubsequence("cancel-requested", "cancelled");
    }
  }

  @Test
  void follow_ups_from_a_handler_run_after_its_success(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job =
          h.submit("alice", "gate", "{\"followUps\": [{\"kind\": \"noop\", \"payload\": {}}]}");
      h.gates.open(job);
      h.awaitStatus(job, "succeeded");
      long followUp =
          tdb.jdbc().query("select max(id) as id from build_job").get(0).longValue("id");
      h.awaitStatus(followUp, "succeeded");
      assertThat(h.job(followUp).string("user_id")).isEqualTo("alice");
    }
  }

  @Test
  void follow_ups_of_a_failed_job_are_dropped(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job =
          h.submit(
              "alice",
              "gate",
              "{\"fail\": true, \"followUps\": [{\"kind\": \"noop\", \"payload\": {}}]}");
      h.gates.open(job);
      h.awaitStatus(job, "failed");
      assertThat(tdb.jdbc().query("select id from build_job")).hasSize(1);
    }
  }

  @Test
  void a_job_of_a_kind_the_worker_does_not_know_fails_with_a_clear_message(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long job = h.submit("alice", "mystery", "{}");
      h.awaitStatus(job, "failed");
      assertThat(h.job(job).string("error")).contains("no handler for job kind \"mystery\"");
    }
  }

  @Test
  void stop_evidence_delivered_twice_is_handled_once(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      // As the harness hands evidence to the queue, recording what each delivery did.
      List<String> deliveries = Collections.synchronizedList(new ArrayList<>());
      h.platform.onStopped(
          (taskId, workerId, token, reason) ->
              deliveries.add(
                  taskId
                      + (h.queue.taskStopped(taskId, workerId, token, reason).isPresent()
                          ? " exited"
                          : " changed nothing")));
      // A crash, so the evidence is what ends the worker and sends its job back to the queue.
      h.platform.plan(
          LaunchPlan.normal().crashAt(WorkerLoop.Point.AFTER_START).evidence(Evidence.DUPLICATE));
      long job = h.submit("alice", "noop", "{}");
      h.awaitStatus(job, "succeeded");
      h.awaitQuiet();
      assertThat(deliveries)
          .containsExactlyInAnyOrder(
              "inproc-1 exited", "inproc-1 changed nothing", "inproc-2 exited");
      assertThat(h.eventTypes(job)).containsOnlyOnce("interrupted");
      assertThat(h.job(job).intValue("recoveries")).isEqualTo(1);
      assertThat(h.workers())
          .hasSize(2)
          .allSatisfy(w -> assertThat(w.string("status")).isEqualTo("exited"));
    }
  }
}
