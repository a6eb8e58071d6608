package buildqueue.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.JobStatus;
import buildqueue.core.WorkerStatus;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The row factory's defaults satisfy the schema, and it writes what a test sets and nothing else.
 */
@ExtendWith(PostgresExtension.class)
class RowsTest {
  private static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");

  @Test
  void a_job_with_nothing_set_is_a_queued_noop_of_alices_in_the_shared_lane(TestDatabase tdb) {
    long id = Rows.job().insert(tdb.jdbc());

    Row job = job(tdb.jdbc(), id);
    assertThat(job.string("user_id")).isEqualTo("alice");
    assertThat(job.string("kind")).isEqualTo("noop");
    assertThat(job.string("lane")).isEqualTo("shared");
    assertThat(job.string("status")).isEqualTo("queued");
    assertThat(job.string("payload")).as("the schema's {}").isNull();
    assertThat(job.instant("created_at")).isNotNull();
    assertThat(job.instant("finished_at")).isNull();
  }

  @Test
  void a_worker_with_nothing_set_is_launching_in_the_first_shared_slot_with_an_hours_lease(
      TestDatabase tdb) {
    long id = Rows.worker().insert(tdb.jdbc());

    Row w =
        tdb.jdbc()
            .query(
                """
        select slot, status, token, extract(epoch from expires_at - launched_at)::bigint as lease_seconds
        from build_worker where id = :id""",
                Params.of("id", id))
            .get(0);
    assertThat(w.string("slot")).isEqualTo("shared#1");
    assertThat(w.string("status")).isEqualTo("launching");
    assertThat(w.get("token")).isNotNull();
    assertThat(w.longValue("lease_seconds")).isEqualTo(3600);
  }

  @Test
  void a_running_job_on_a_running_worker_keeps_every_value_set(TestDatabase tdb) {
    UUID token = UUID.randomUUID();
    long worker =
        Rows.worker()
            .lane("user:bob")
            .status(WorkerStatus.RUNNING)
            .token(token)
            .task("task-1")
            .expiresAt(T0.plusSeconds(3900))
            .launchedAt(T0)
            .startedAt(T0)
            .checkedAt(T0)
            .insert(tdb.jdbc());
    long job =
        Rows.job()
            .user("bob")
            .ownLane()
            .payload("{\"a\": [1]}")
            .status(JobStatus.RUNNING)
            .worker(worker)
            .attempts(1)
            .createdAt(T0)
            .dispatchedAt(T0)
            .startedAt(T0)
            .insert(tdb.jdbc());

    Row w =
        tdb.jdbc()
            .query("select * from build_worker where id = :id", Params.of("id", worker))
            .get(0);
    assertThat(w.string("slot")).isEqualTo("user:bob#1");
    assertThat(w.get("token")).isEqualTo(token);
    assertThat(w.string("status")).isEqualTo("running");
    assertThat(w.string("task_id")).isEqualTo("task-1");
    assertThat(w.instant("expires_at")).isEqualTo(T0.plusSeconds(3900));
    assertThat(w.instant("checked_at")).isEqualTo(T0);
    Row j = job(tdb.jdbc(), job);
    assertThat(j.string("lane")).isEqualTo("user:bob");
    assertThat(j.get("worker_id")).isEqualTo(worker);
    assertThat(j.longValue("attempts")).isEqualTo(1);
    assertThat(j.get("payload").toString()).contains("\"a\": [1]");
    assertThat(j.instant("started_at")).isEqualTo(T0);
  }

  @Test
  void finished_jobs_and_exited_workers_get_what_the_schemas_checks_want(TestDatabase tdb) {
    long failed = Rows.job().status(JobStatus.FAILED).insert(tdb.jdbc());
    long cancelled = Rows.job().status(JobStatus.CANCELLED).insert(tdb.jdbc());
    long exited = Rows.worker().status(WorkerStatus.EXITED).insert(tdb.jdbc());

    assertThat(job(tdb.jdbc(), failed).string("error")).isEqualTo(Rows.JobRow.DEFAULT_ERROR);
    assertThat(job(tdb.jdbc(), cancelled).instant("finished_at")).isNotNull();
    assertThat(
            tdb.jdbc()
                .query("select exited_at from build_worker where id = :id", Params.of("id", exited))
                .get(0)
                .instant("exited_at"))
        .isNotNull();
    assertThatThrownBy(() -> Rows.job().status(JobStatus.RUNNING).insert(tdb.jdbc()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("worker(id)");
  }

  @Test
  void many_rows_are_one_statement_and_their_ids_come_back_in_their_order(TestDatabase tdb) {
    CountingDatabase db = new CountingDatabase(tdb.jdbc());
    List<Long> same = Rows.job().user("ann").insert(db, 300);
    List<Long> distinct =
        Rows.insertIds(
            db,
            IntStream.rangeClosed(1, 200)
                .mapToObj(i -> Rows.job().user("u" + i).ownLane())
                .toList());
    Rows.insert(db, List.of(Rows.user("cat").dedicated(true), Rows.user("dan").maxQueuedJobs(5)));

    assertThat(db.statements()).isEqualTo(3);
    assertThat(same).hasSize(300).isSorted();
    assertThat(distinct).hasSize(200).isSorted();
    assertThat(job(tdb.jdbc(), distinct.get(41)).string("lane")).isEqualTo("user:u42");
    assertThat(
            tdb.jdbc()
                .query(
                    "select user_id, dedicated_worker, max_queued_jobs from build_user order by user_id"))
        .extracting(
            r ->
                r.string("user_id")
                    + " "
                    + r.get("dedicated_worker")
                    + " "
                    + r.get("max_queued_jobs"))
        .containsExactly("cat true null", "dan false 5");
  }

  @Test
  void an_update_sets_only_what_was_set_and_what_the_checks_then_need(TestDatabase tdb) {
    List<Long> ids = Rows.job().kind("demo").insert(tdb.jdbc(), 3);
    long event = Rows.event(ids.get(0)).message("hello").insert(tdb.jdbc());

    assertThat(Rows.job().status(JobStatus.CANCELLED).update(tdb.jdbc(), ids.get(1))).isEqualTo(1);
    assertThat(Rows.events().published().updateAll(tdb.jdbc())).isEqualTo(1);

    assertThat(ids.stream().map(id -> job(tdb.jdbc(), id).string("status")))
        .containsExactly("queued", "cancelled", "queued");
    Row cancelled = job(tdb.jdbc(), ids.get(1));
    assertThat(cancelled.string("kind")).isEqualTo("demo");
    assertThat(cancelled.instant("finished_at")).isNotNull();
    Row e =
        tdb.jdbc()
            .query("select * from build_job_event where id = :id", Params.of("id", event))
            .get(0);
    assertThat(e.string("type")).isEqualTo("noted");
    assertThat(e.get("detail").toString()).contains("hello");
    assertThat(e.instant("published_at")).isNotNull();
  }

  private static Row job(Database db, long id) {
    return db.query(
            "select id, user_id, kind, lane, status, worker_id, attempts, error, created_at, started_at,"
                + " finished_at, case when payload = '{}' then null else payload end as payload from build_job where id = :id",
            Params.of("id", id))
        .get(0);
  }
}
