package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Pins the round trips of a job's whole life, counted at the {@code Database} port, so that a
 * regression shows. Over the Data API every statement is an HTTPS call, so this is the cost.
 */
@ExtendWith(PostgresExtension.class)
class StatementCountTest {

  /** Submits one job of alice's and waits for it to succeed and for its worker to be gone. */
  private static void runToSuccess(QueueHarness h, String kind, String payload) {
    long job = h.submit("alice", kind, payload);
    h.awaitStatus(job, "succeeded");
    h.awaitQuiet();
  }

  @Test
  void one_job_on_a_fresh_worker_costs_six_statements(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      runToSuccess(h, "noop", "{}");
      // enqueue, dispatch, record the task, worker start (+ job start), job end (+ drain), and the
      // worker's exit with the dispatch that follows every exit (one call,
      // build_exit_worker_and_dispatch)
      assertThat(h.db.statements()).isEqualTo(6);
      assertThat(h.db.transactions()).isZero();
    }
  }

  @Test
  void a_quiet_program_shorter_than_the_cancel_check_interval_costs_the_same_six(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      runToSuccess(h, "quiet", "{\"millis\": 300}");
      // Its check-ins found nothing due: no progress, no output, no cancel check yet.
      assertThat(h.db.statements()).isEqualTo(6);
    }
  }

  @Test
  void a_job_chained_onto_a_running_worker_costs_two_more(TestDatabase tdb) throws Exception {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long first = h.submitGate("alice");
      h.gates.awaitEntered(first);
      long before = h.db.statements();
      long chained = h.submit("bob", "noop", "{}");
      h.gates.open(first);
      h.awaitStatus(chained, "succeeded");
      h.awaitQuiet();
      // The chained job adds only its enqueue (which sees the lane full and skips the dispatch)
      // and its own end; the first job's end (which takes the chained job) and the worker's exit
      // with the dispatch after it are the first job's anyway.
      long firstJobAfterGate = 2;
      assertThat(h.db.statements() - before - firstJobAfterGate).isEqualTo(2);
    }
  }

  /**
   * A job that publishes artifacts adds one statement: the fenced record of its upload ({@code
   * build_worker_stage_artifacts}, so that a worker killed before its end leaves files the sweep
   * finds); its end is still one statement ({@code build_worker_end_publishing}, the end and the
   * publication together). The uploads themselves are the store's calls, not statements.
   */
  @Test
  void a_job_with_artifacts_costs_one_more_the_record_of_its_upload(
      TestDatabase tdb, @org.junit.jupiter.api.io.TempDir java.nio.file.Path store) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      h.platform.useArtifacts(new buildqueue.artifacts.DirectoryArtifactStore(store));
      long job = h.submit("alice", "artifacts", "{\"files\": 3}");
      h.awaitStatus(job, "succeeded");
      h.awaitQuiet();
      assertThat(h.db.statements()).isEqualTo(7);
      assertThat(h.db.transactions()).isZero();
      assertThat(
              h.testDb
                  .jdbc()
                  .query(
                      "select name from build_job_artifact where job_id = :id",
                      buildqueue.db.Params.of("id", job)))
          .hasSize(3);
    }
  }
}
