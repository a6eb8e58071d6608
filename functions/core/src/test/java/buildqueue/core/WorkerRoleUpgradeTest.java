package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Database;
import buildqueue.db.Migrator;
import buildqueue.db.Params;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestAdapter;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The upgrade path to the worker role (V005): a database the last release made, with a job already
 * dispatched to a worker, is migrated, and that worker then runs its job as the worker role. On
 * every adapter: the Data API is how a deploy migrates.
 */
class WorkerRoleUpgradeTest {
  @Test
  void
      a_database_of_the_last_release_migrates_to_the_worker_role_and_its_dispatched_job_runs_as_that_role() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      TestAdapter adapter = TestAdapter.selected();
      int before = Migrator.MIGRATIONS.indexOf("V005__worker_role.sql");
      Migrator.firstOf(adapter.open(db), before).migrate();
      try (QueueHarness h = QueueHarness.manualOn(db, adapter.open(db), adapter.openAsWorker(db))) {
        // A job the last release dispatched, as its dispatch left the rows (this build's dispatch
        // calls functions that later migrations define).
        Database old = adapter.open(db);
        UUID token = UUID.randomUUID();
        Params at = Params.of("now", h.clock.now(), "token", token);
        long workerId =
            old.query(
                    """
            insert into build_worker (lane, slot, token, status, expires_at, launched_at)
            select 'shared', 'shared#1', :token::uuid, 'launching', t.now + interval '1 hour', t.now
            from (select coalesce(:now::timestamptz, now()) as now) t
            returning id""",
                    at)
                .get(0)
                .longValue("id");
        long job =
            old.query(
                    """
            insert into build_job (user_id, kind, payload, lane, status, worker_id, attempts, created_at, dispatched_at)
            select 'alice', 'demo', '{}', 'shared', 'dispatched', :workerId, 1, t.now, t.now
            from (select coalesce(:now::timestamptz, now()) as now) t
            returning id""",
                    Params.of("now", h.clock.now(), "workerId", workerId))
                .get(0)
                .longValue("id");
        WorkerLaunch launch = new WorkerLaunch(workerId, token, "shared", "shared#1");

        assertThat(new Migrator(adapter.open(db)).migrate()).contains("V005__worker_role.sql");

        assertThat(h.workers.start(launch.workerId(), launch.token()).orElseThrow().job())
            .isPresent();
        assertThat(h.workers.end(launch.workerId(), launch.token(), job, JobStatus.SUCCEEDED, null))
            .isInstanceOf(WorkerTransitions.Ended.Drained.class);
        assertThat(h.status(job)).isEqualTo("succeeded");
      }
    }
  }
}
