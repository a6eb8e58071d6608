package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.Caller;
import buildqueue.api.CheckedApi;
import buildqueue.api.HttpApi;
import buildqueue.core.JobQueries;
import buildqueue.core.JobStatus;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.Json;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Who may do what: users are kept apart, admin routes are for admins, only health (and the static
 * page) answers without a caller, and neither a worker without the right token nor a stop event for
 * a task we never launched can change anything. "Changes nothing" is checked on every row the queue
 * keeps, not just on counts.
 */
@ExtendWith(PostgresExtension.class)
class IsolationTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Caller ALICE = Caller.user("alice");
  private static final Caller BOB = Caller.user("bob");
  private static final Caller ADMIN = Caller.admin("root");

  private static final String STATE =
      """
      select coalesce((select string_agg(concat_ws(':', id, user_id, lane, status, worker_id, progress, checkpoint,
                recoveries, attempts, cancel_requested, error), ',' order by id) from build_job), '')
          || '|' || coalesce((select string_agg(concat_ws(':', id, slot, status, task_id, expires_at, exit_reason),
                ',' order by id) from build_worker), '')
          || '|' || coalesce((select string_agg(concat_ws(':', user_id, dedicated_worker), ',' order by user_id)
                from build_user), '')
          || '|' || (select count(*) from build_job_event) as state""";

  private static String state(QueueHarness h) {
    return h.testDb.jdbc().query(STATE).get(0).string("state");
  }

  private static JsonNode json(ApiResponse r) {
    try {
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  private static CheckedApi api(QueueHarness h) {
    return new CheckedApi(
        new HttpApi(h.queue, new JobQueries(h.db, h.config, h.clock), h.handlers));
  }

  private static long submit(CheckedApi api, Caller caller) {
    ApiResponse r = api.handle(ApiRequest.json("POST", "/jobs", "{\"kind\": \"noop\"}", caller));
    assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
    return json(r).get("id").asLong();
  }

  @Test
  void a_user_can_neither_see_list_nor_cancel_another_users_job(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    CheckedApi api = api(h);
    long alices = submit(api, ALICE);
    long bobs = submit(api, BOB);
    String before = state(h);

    assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + alices, BOB)).status()).isEqualTo(404);
    assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + alices + "/events", BOB)).status())
        .isEqualTo(404);
    assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + alices + "/log", BOB)).status())
        .isEqualTo(404);
    assertThat(api.handle(ApiRequest.of("POST", "/jobs/" + alices + "/cancel", BOB)).status())
        .isEqualTo(404);
    assertThat(api.handle(ApiRequest.of("GET", "/jobs?userId=alice", BOB)).status()).isEqualTo(403);
    JsonNode listed = json(api.handle(ApiRequest.of("GET", "/jobs?limit=200", BOB))).get("jobs");
    assertThat(listed).extracting(j -> j.get("id").asLong()).containsExactly(bobs);
    // Not found, never forbidden: an id says nothing about whether another user's job exists.
    assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + alices, BOB)).bodyText())
        .isEqualTo(
            api.handle(ApiRequest.of("GET", "/jobs/999999", BOB))
                .bodyText()
                .replace("999999", "" + alices));
    assertThat(state(h)).isEqualTo(before);

    assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + alices, ALICE)).status()).isEqualTo(200);
    assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + alices, ADMIN)).status()).isEqualTo(200);
  }

  @Test
  void non_admins_get_403_on_every_admin_route_and_change_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    CheckedApi api = api(h);
    submit(api, ALICE);
    String before = state(h);

    List<ApiRequest> adminOnly =
        List.of(
            ApiRequest.of("GET", "/lanes", ALICE),
            ApiRequest.of("GET", "/lanes?queuedLimit=5", ALICE),
            ApiRequest.json("PUT", "/users/alice", "{\"dedicatedWorker\": true}", ALICE),
            ApiRequest.json("PUT", "/users/bob", "{\"dedicatedWorker\": false}", ALICE));
    for (ApiRequest r : adminOnly) {
      ApiResponse response = api.handle(r);
      assertThat(response.status()).as(r.toString()).isEqualTo(403);
      assertThat(response.header("Content-Type")).contains("application/problem+json");
    }
    assertThat(state(h)).isEqualTo(before);
    assertThat(api.handle(ApiRequest.of("GET", "/lanes", ADMIN)).status()).isEqualTo(200);
  }

  @Test
  void no_route_but_health_and_the_static_page_answers_without_a_caller(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    CheckedApi api = api(h);
    long job = submit(api, ALICE);
    String before = state(h);

    List<ApiRequest> protectedRoutes =
        List.of(
            ApiRequest.json("POST", "/jobs", "{\"kind\": \"noop\"}", null),
            ApiRequest.of("GET", "/jobs", null),
            ApiRequest.of("GET", "/jobs/" + job, null),
            ApiRequest.of("GET", "/jobs/" + job + "/events", null),
            ApiRequest.of("GET", "/jobs/" + job + "/log", null),
            ApiRequest.of("POST", "/jobs/" + job + "/cancel", null),
            ApiRequest.of("GET", "/lanes", null),
            ApiRequest.json("PUT", "/users/alice", "{\"dedicatedWorker\": true}", null));
    for (ApiRequest r : protectedRoutes) {
      ApiResponse response = api.handle(r);
      assertThat(response.status()).as(r.toString()).isEqualTo(401);
      assertThat(response.header("WWW-Authenticate")).as(r.toString()).isPresent();
    }
    assertThat(state(h)).isEqualTo(before);

    assertThat(api.handle(ApiRequest.of("GET", "/health", null)).status()).isEqualTo(200);
    ApiResponse page = api.handle(ApiRequest.of("GET", "/", null));
    assertThat(page.status()).isEqualTo(200);
    assertThat(page.bodyText()).doesNotContain("alice");
  }

  @Test
  void a_worker_with_a_wrong_or_old_token_changes_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    WorkerTransitions w = h.workers;
    long job = h.queue.enqueue("alice", "noop", new Json("{}"), null).jobId();
    WorkerLaunch first = h.manual.lastLaunch();
    assertThat(w.start(first.workerId(), first.token())).isPresent();
    assertThat(w.progress(first.workerId(), first.token(), job, 1))
        .isEqualTo(WorkerTransitions.ProgressAck.RECORDED);
    // The first worker dies; its job goes to a second worker, which starts: the first token is old.
    h.queue.taskStopped(
        ManualPlatform.taskIdOf(first.workerId()), first.workerId(), first.token(), "crashed");
    WorkerLaunch second = h.manual.lastLaunch();
    assertThat(second.workerId()).isNotEqualTo(first.workerId());
    assertThat(w.start(second.workerId(), second.token())).isPresent();
    String before = state(h);

    UUID wrong = UUID.randomUUID();
    for (WorkerLaunch as :
        List.of(
            new WorkerLaunch(second.workerId(), wrong, second.lane(), second.slot()),
            new WorkerLaunch(first.workerId(), first.token(), first.lane(), first.slot()),
            new WorkerLaunch(first.workerId(), second.token(), first.lane(), first.slot()),
            new WorkerLaunch(second.workerId(), first.token(), second.lane(), second.slot()))) {
      assertThat(w.start(as.workerId(), as.token())).isEmpty();
      assertThat(w.progress(as.workerId(), as.token(), job, 7))
          .isEqualTo(WorkerTransitions.ProgressAck.FENCED_OFF);
      assertThat(w.end(as.workerId(), as.token(), job, JobStatus.SUCCEEDED, null))
          .isInstanceOf(WorkerTransitions.Ended.FencedOff.class);
      assertThat(w.end(as.workerId(), as.token(), job, JobStatus.FAILED, "forged"))
          .isInstanceOf(WorkerTransitions.Ended.FencedOff.class);
      assertThat(w.drain(as.workerId(), as.token())).isFalse();
      WorkerTransitions.FollowUps followUps =
          w.transactionally(
              tx ->
                  w.addFollowUps(
                      tx,
                      as.workerId(),
                      as.token(),
                      job,
                      new Json("[{\"kind\": \"noop\", \"payload\": {}}]")));
      assertThat(followUps).isInstanceOf(WorkerTransitions.FollowUps.FencedOff.class);
      assertThat(h.queue.taskStopped(null, as.workerId(), wrong, "forged exit")).isEmpty();
    }
    assertThat(state(h)).isEqualTo(before);
  }

  @Test
  void task_state_events_for_tasks_we_never_launched_change_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig().withSharedSlots(2));
    h.manual.nextOutcomes(new LaunchOutcome.Unknown("timed out"));
    h.queue.enqueue("alice", "noop", new Json("{}"), null);
    WorkerLaunch unrecorded = h.manual.lastLaunch();
    h.queue.enqueue("bob", "noop", new Json("{}"), null);
    WorkerLaunch recorded = h.manual.lastLaunch();
    String before = state(h);

    assertThat(
            h.queue.taskStopped("arn:aws:ecs:eu-west-1:1:task/never-ours", null, null, "STOPPED"))
        .isEmpty();
    assertThat(h.queue.taskStopped("never-ours", recorded.workerId(), null, "STOPPED")).isEmpty();
    assertThat(h.queue.taskStopped("never-ours", recorded.workerId(), UUID.randomUUID(), "STOPPED"))
        .isEmpty();
    assertThat(
            h.queue.taskStopped(
                ManualPlatform.taskIdOf(recorded.workerId()),
                recorded.workerId(),
                UUID.randomUUID(),
                "STOPPED with another task's token"))
        .isEmpty();
    assertThat(
            h.queue.taskStopped("never-ours", unrecorded.workerId(), UUID.randomUUID(), "STOPPED"))
        .isEmpty();
    assertThat(state(h)).isEqualTo(before);
  }

  /**
   * Found by the fault simulation: a stop event naming a task we never launched, carrying one of
   * our worker ids but no token, freed the slot of a worker whose launch outcome was not yet
   * recorded, while its real task could still be starting.
   */
  @Test
  void a_stop_event_without_a_token_cannot_free_a_worker_whose_task_is_not_yet_recorded(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    h.manual.nextOutcomes(new LaunchOutcome.Unknown("timed out"));
    h.queue.enqueue("alice", "noop", new Json("{}"), null);
    WorkerLaunch unrecorded = h.manual.lastLaunch();
    String before = state(h);

    assertThat(h.queue.taskStopped("never-ours", unrecorded.workerId(), null, "STOPPED")).isEmpty();
    assertThat(state(h)).isEqualTo(before);

    // The real task's event, which carries the worker's token, still counts before the id is known.
    assertThat(
            h.queue.taskStopped("task-ours", unrecorded.workerId(), unrecorded.token(), "STOPPED"))
        .isPresent();
    // That event ended the worker: it is no longer among the live ones.
    assertThat(h.liveWorkers())
        .allSatisfy(row -> assertThat(row.longValue("id")).isNotEqualTo(unrecorded.workerId()));
  }
}
