package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The worker role (V005, docs/architecture.md §6.1) as a worker, or a job that stole its worker's
 * credentials, meets it: no table can be read or written, nothing can be created, and each worker
 * transition changes only the caller's own worker and jobs, and only with its token. Runs on every
 * adapter: on the Data API the statements go with the worker role's secret.
 */
@ExtendWith(PostgresExtension.class)
class WorkerRoleTest {
  /** Every table of the schema, read and written as the worker role: each one must be refused. */
  private static final Map<String, List<String>> TABLE_STATEMENTS = tableStatements();

  private static Map<String, List<String>> tableStatements() {
    Map<String, List<String>> m = new LinkedHashMap<>();
    m.put(
        "build_user",
        List.of(
            "select * from build_user",
            "update build_user set dedicated_worker = true",
            "insert into build_user (user_id) values ('mallory')"));
    m.put(
        "build_worker",
        List.of(
            "select token from build_worker",
            "update build_worker set status = 'exited'",
            "delete from build_worker"));
    m.put(
        "build_job",
        List.of(
            "select payload from build_job",
            "update build_job set status = 'cancelled'",
            "insert into build_job (user_id, kind, lane, created_at) values ('mallory', 'demo', 'shared', now())"));
    m.put(
        "build_job_event", List.of("select * from build_job_event", "delete from build_job_event"));
    m.put("build_job_log", List.of("select * from build_job_log", "delete from build_job_log"));
    m.put(
        "build_job_artifact",
        List.of(
            "select * from build_job_artifact",
            "insert into build_job_artifact values (1, 'x', 1, 'h', 1, 1, now())"));
    m.put(
        "build_webhook_endpoint",
        List.of(
            "select secrets from build_webhook_endpoint",
            "update build_webhook_endpoint set url = 'http://attacker.invalid/'",
            "delete from build_webhook_endpoint"));
    m.put(
        "build_webhook_delivery",
        List.of("select * from build_webhook_delivery", "delete from build_webhook_delivery"));
    m.put(
        "build_artifact_upload",
        List.of("select * from build_artifact_upload", "delete from build_artifact_upload"));
    m.put(
        "build_lane_turn",
        List.of(
            "select * from build_lane_turn",
            "update build_lane_turn set turn = 0 where user_id = 'mallory'",
            "delete from build_lane_turn"));
    m.put(
        "build_job_cost",
        List.of(
            "select * from build_job_cost",
            "update build_job_cost set billed_ms = 0",
            "delete from build_job_cost"));
    m.put(
        "build_tick_arm",
        List.of("select * from build_tick_arm", "update build_tick_arm set armed = false"));
    m.put(
        "build_lane_pause",
        List.of(
            "select * from build_lane_pause",
            "insert into build_lane_pause (lane, paused_at, paused_by) values ('shared', now(), 'mallory')",
            "delete from build_lane_pause"));
    m.put(
        "build_schema_migration",
        List.of("select * from build_schema_migration", "delete from build_schema_migration"));
    return m;
  }

  @Test
  void as_the_worker_role_every_select_insert_update_and_delete_on_every_table_fails(
      TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      h.submit("alice", "demo", "{}");
      Map<String, List<Map<String, Object>>> before = snapshot(h);

      for (List<String> statements : TABLE_STATEMENTS.values()) {
        for (String sql : statements) {
          assertThatThrownBy(() -> run(h.workerDb, sql))
              .as(sql)
              .isInstanceOf(DatabaseException.class)
              .hasMessageContaining("permission denied");
        }
      }

      assertThat(snapshot(h)).isEqualTo(before);
      // The list above covers the whole schema: a new table must be added to it.
      assertThat(
              h
                  .db
                  .query(
                      "select tablename from pg_tables where schemaname = 'public' order by tablename")
                  .stream()
                  .map(r -> r.string("tablename"))
                  .toList())
          .containsExactlyInAnyOrderElementsOf(TABLE_STATEMENTS.keySet());
    }
  }

  @Test
  void as_the_worker_role_nothing_can_be_created_in_the_schema_nor_the_owners_functions_called(
      TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      // An object of its own in the schema could stand in for one a function body names.
      assertThatThrownBy(() -> h.workerDb.update("create table public.mine (x int)"))
          .isInstanceOf(DatabaseException.class)
          .hasMessageContaining("permission denied");
      assertThatThrownBy(
              () ->
                  h.workerDb.update(
                      "create function public.build_lane_of(p bigint) returns text language sql as $$ select 'x' $$"))
          .isInstanceOf(DatabaseException.class)
          .hasMessageContaining("permission denied");
      assertThatThrownBy(() -> h.workerDb.query("select build_worker_role_login('stolen')"))
          .isInstanceOf(DatabaseException.class)
          .hasMessageContaining("permission denied");
    }
  }

  @Test
  void a_transition_with_another_workers_id_or_a_wrong_token_changes_nothing(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      Two two = twoRunningWorkers(h);
      Map<String, List<Map<String, Object>>> before = snapshot(h);
      WorkerTransitions as = h.workers;
      UUID wrong = UUID.randomUUID();

      for (long[] target :
          new long[][] {{two.a.workerId(), two.jobA}, {two.b.workerId(), two.jobB}}) {
        long workerId = target[0];
        long jobId = target[1];
        // Worker a's own token on worker b's id, and a made-up token on either.
        for (UUID token :
            workerId == two.a.workerId() ? List.of(wrong) : List.of(two.a.token(), wrong)) {
          assertThat(as.start(workerId, token)).isEmpty();
          assertThat(
                  as.checkIn(
                      workerId, token, jobId, 9, new WorkerTransitions.LogWrite("forged", 6, null)))
              .isEqualTo(WorkerTransitions.ProgressAck.FENCED_OFF);
          assertThat(as.interrupt(workerId, token, jobId, "forged", null)).isEmpty();
          WorkerTransitions.FollowUps followUps =
              as.transactionally(
                  tx ->
                      as.addFollowUps(
                          tx,
                          workerId,
                          token,
                          jobId,
                          new Json("[{\"kind\": \"demo\", \"payload\": {}}]")));
          assertThat(followUps).isInstanceOf(WorkerTransitions.FollowUps.FencedOff.class);
          assertThat(as.end(workerId, token, jobId, JobStatus.SUCCEEDED, null))
              .isInstanceOf(WorkerTransitions.Ended.FencedOff.class);
          assertThat(as.takeNext(workerId, token))
              .isInstanceOf(WorkerTransitions.Ended.FencedOff.class);
          assertThat(as.drain(workerId, token)).isFalse();
        }
      }
      // Worker a's id and token, but worker b's job.
      assertThat(as.checkIn(two.a.workerId(), two.a.token(), two.jobB, 9, null))
          .isEqualTo(WorkerTransitions.ProgressAck.FENCED_OFF);
      assertThat(as.end(two.a.workerId(), two.a.token(), two.jobB, JobStatus.SUCCEEDED, null))
          .isInstanceOf(WorkerTransitions.Ended.FencedOff.class);
      assertThat(as.interrupt(two.a.workerId(), two.a.token(), two.jobB, "forged", null)).isEmpty();

      assertThat(snapshot(h)).isEqualTo(before);
    }
  }

  @Test
  void with_its_own_token_a_worker_changes_only_its_own_worker_and_job(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      Two two = twoRunningWorkers(h);
      Map<String, List<Map<String, Object>>> before = snapshot(h);

      assertThat(h.workers.checkIn(two.a.workerId(), two.a.token(), two.jobA, 5, null))
          .isEqualTo(WorkerTransitions.ProgressAck.RECORDED);
      assertThat(
              h.workers.end(two.a.workerId(), two.a.token(), two.jobA, JobStatus.SUCCEEDED, null))
          .isInstanceOf(WorkerTransitions.Ended.Drained.class);

      Map<String, List<Map<String, Object>>> after = snapshot(h);
      assertThat(h.job(two.jobA).string("status")).isEqualTo("succeeded");
      assertThat(h.worker(two.a.workerId()).string("status")).isEqualTo("draining");
      assertThat(without(after.get("build_job"), two.jobA))
          .isEqualTo(without(before.get("build_job"), two.jobA));
      assertThat(without(after.get("build_worker"), two.a.workerId()))
          .isEqualTo(without(before.get("build_worker"), two.a.workerId()));
      assertThat(after.get("build_job_event").subList(0, before.get("build_job_event").size()))
          .isEqualTo(before.get("build_job_event"));
      assertThat(
              after
                  .get("build_job_event")
                  .subList(
                      before.get("build_job_event").size(), after.get("build_job_event").size()))
          .allSatisfy(e -> assertThat(((Number) e.get("job_id")).longValue()).isEqualTo(two.jobA));
    }
  }

  /**
   * Alice's job on worker a (shared lane), Bob's on worker b (his dedicated lane), both running.
   */
  private record Two(WorkerLaunch a, long jobA, WorkerLaunch b, long jobB) {}

  private static Two twoRunningWorkers(QueueHarness h) {
    h.queue.setDedicated("bob", true);
    long jobA = h.submit("alice", "demo", "{}");
    WorkerLaunch a = h.manual.lastLaunch();
    long jobB = h.submit("bob", "demo", "{}");
    WorkerLaunch b = h.manual.lastLaunch();
    assertThat(a.workerId()).isNotEqualTo(b.workerId());
    assertThat(h.workers.start(a.workerId(), a.token()).orElseThrow().job().orElseThrow().id())
        .isEqualTo(jobA);
    assertThat(h.workers.start(b.workerId(), b.token()).orElseThrow().job().orElseThrow().id())
        .isEqualTo(jobB);
    return new Two(a, jobA, b, jobB);
  }

  private static Map<String, List<Map<String, Object>>> snapshot(QueueHarness h) {
    Map<String, List<Row>> s = new LinkedHashMap<>();
    s.put("build_user", h.db.query("select * from build_user order by user_id"));
    s.put("build_worker", h.db.query("select * from build_worker order by id"));
    s.put("build_job", h.db.query("select * from build_job order by id"));
    s.put("build_job_event", h.db.query("select * from build_job_event order by id"));
    s.put("build_job_log", h.db.query("select * from build_job_log order by job_id"));
    s.put("build_lane_turn", h.db.query("select * from build_lane_turn order by lane, user_id"));
    Map<String, List<Map<String, Object>>> out = new LinkedHashMap<>();
    s.forEach((table, rows) -> out.put(table, rows.stream().map(Row::asMap).toList()));
    return out;
  }

  private static List<Map<String, Object>> without(List<Map<String, Object>> rows, long id) {
    return rows.stream().filter(r -> ((Number) r.get("id")).longValue() != id).toList();
  }

  private static void run(Database db, String sql) {
    if (sql.startsWith("select")) {
      db.query(sql, Params.none());
    } else {
      db.update(sql, Params.none());
    }
  }
}
