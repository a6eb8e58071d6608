package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Migrator;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestAdapter;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import org.junit.jupiter.api.Test;

/**
 * The upgrade path to the worker role (V005): a database the last release made, with a job already
 * dispatched to a worker, is migrated, and that worker then runs its job as the worker role. On
 * every adapter: the Data API is how a deploy migrates.
 */
class WorkerRoleUpgradeTest {
  @Test
  void a_database_of_the_last_release_migrates_to_the_worker_role_and_its_dispatched_job_runs_as_that_role() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      TestAdapter adapter = TestAdapter.selected();
      int before = Migrator.MIGRATIONS.indexOf("V005__worker_role.sql");
      Migrator.firstOf(adapter.open(db), before).migrate();
      try (QueueHarness h = QueueHarness.manualOn(db, adapter.open(db), adapter.openAsWorker(db))) {
        long job = h.submit("alice", "demo", "{}");
        WorkerLaunch launch = h.manual.lastLaunch();

        assertThat(new Migrator(adapter.open(db)).migrate()).contains("V005__worker_role.sql");

        assertThat(h.workers.start(launch.workerId(), launch.token()).orElseThrow().job()).isPresent();
        assertThat(h.workers.end(launch.workerId(), launch.token(), job, JobStatus.SUCCEEDED, null))
            .isInstanceOf(WorkerTransitions.Ended.Drained.class);
        assertThat(h.status(job)).isEqualTo("succeeded");
      }
    }
  }
}
