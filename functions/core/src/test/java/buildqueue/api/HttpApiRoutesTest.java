package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every route of the HTTP API (docs/architecture.md §8) doing its job. */
class HttpApiRoutesTest extends ApiTest {
  @Test
  void submitting_a_job_answers_201_with_the_job_and_its_location() {
    ApiResponse r =
        f.post(
            "/jobs", "{\"kind\": \"demo\", \"payload\": {\"steps\": 2, \"stepMillis\": 1}}", ALICE);

    assertThat(r.status()).isEqualTo(201);
    assertThat(r.header("Content-Type")).hasValue("application/json");
    JsonNode job = json(r);
    assertThat(r.header("Location")).hasValue("/jobs/" + job.get("id").asLong());
    assertThat(job.get("userId").asText()).isEqualTo("alice");
    assertThat(job.get("kind").asText()).isEqualTo("demo");
    assertThat(job.get("payload").get("steps").asInt()).isEqualTo(2);
    assertThat(job.get("lane").asText()).isEqualTo("shared");
    assertThat(job.get("attempts").isInt()).isTrue();
    assertThat(job.get("cancelRequested").asBoolean()).isFalse();
    assertThat(Instant.parse(job.get("createdAt").asText())).isEqualTo(f.h.clock.now());
    f.h.awaitStatus(job.get("id").asLong(), "succeeded");
  }

  @Test
  void the_job_json_has_exactly_the_fields_of_the_design() {
    long id = f.submit(ALICE, "noop", "{}");
    f.h.awaitStatus(id, "succeeded");

    JsonNode job = json(f.get("/jobs/" + id, ALICE));

    List<String> fields = new ArrayList<>();
    job.fieldNames().forEachRemaining(fields::add);
    assertThat(fields)
        .containsExactly(
            "id",
            "userId",
            "kind",
            "payload",
            "status",
            "lane",
            "position",
            "progress",
            "attempts",
            "recoveries",
            "cancelRequested",
            "error",
            "workerId",
            "createdAt",
            "dispatchedAt",
            "startedAt",
            "finishedAt",
            "log",
            "supersedeKey",
            "supersededBy",
            "priority",
            "retryOf",
            "retriedBy",
            "waitingFor",
            "cost");
    assertThat(job.get("status").asText()).isEqualTo("succeeded");
    assertThat(job.get("position").isNull()).isTrue();
    assertThat(job.get("waitingFor").isNull()).isTrue();
    assertThat(job.get("log").isNull()).isTrue(); // it printed nothing
    assertThat(job.get("finishedAt").asText())
        .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z");
    assertThat(job.get("workerId").isIntegralNumber()).isTrue();
  }

  @Test
  void a_repeated_idempotency_key_answers_200_with_the_existing_job() {
    String body =
        "{\"kind\": \"noop\", \"payload\": {\"n\": 1.50}, \"idempotencyKey\": \"build-7\"}";
    ApiResponse first = f.post("/jobs", body, ALICE);
    ApiResponse again = f.post("/jobs", body.replace("1.50", "1.5"), ALICE);

    assertThat(first.status()).isEqualTo(201);
    assertThat(again.status()).isEqualTo(200);
    assertThat(json(again).get("id")).isEqualTo(json(first).get("id"));
    assertThat(again.header("Location")).isEqualTo(first.header("Location"));
    assertThat(f.rowCounts().get("build_job")).isEqualTo(1);
  }

  @Test
  void the_same_idempotency_key_from_another_user_is_another_job() {
    String body = "{\"kind\": \"noop\", \"idempotencyKey\": \"k\"}";
    long a = json(f.post("/jobs", body, ALICE)).get("id").asLong();
    ApiResponse b = f.post("/jobs", body, BOB);

    assertThat(b.status()).isEqualTo(201);
    assertThat(json(b).get("id").asLong()).isNotEqualTo(a);
  }

  @Test
  void getting_a_job_answers_its_owner_and_an_admin() {
    long id = f.submit(ALICE, "noop", "{}");

    assertThat(f.get("/jobs/" + id, ALICE).status()).isEqualTo(200);
    ApiResponse asAdmin = f.get("/jobs/" + id, ADMIN);
    assertThat(asAdmin.status()).isEqualTo(200);
    assertThat(json(asAdmin).get("userId").asText()).isEqualTo("alice");
  }

  @Test
  void events_are_the_jobs_history_oldest_first() {
    long id = f.submit(ALICE, "demo", "{\"steps\": 1, \"stepMillis\": 1}");
    f.h.awaitStatus(id, "succeeded");
    f.h.awaitWorkersExited(); // its worker's exit bills it: the cost event (§4.8)

    ApiResponse r = f.get("/jobs/" + id + "/events", ALICE);

    assertThat(r.status()).isEqualTo(200);
    JsonNode body = json(r);
    assertThat(body.get("jobId").asLong()).isEqualTo(id);
    List<String> types = new ArrayList<>();
    body.get("events").forEach(e -> types.add(e.get("type").asText()));
    assertThat(types).containsExactly("enqueued", "dispatched", "started", "succeeded", "cost");
    JsonNode enqueued = body.get("events").get(0);
    assertThat(enqueued.get("message").asText()).isEqualTo("enqueued in lane shared");
    assertThat(enqueued.get("detail").get("lane").asText()).isEqualTo("shared");
    assertThat(Instant.parse(enqueued.get("at").asText())).isEqualTo(f.h.clock.now());
    assertThat(json(f.get("/jobs/" + id + "/events", ADMIN)).get("events").size()).isEqualTo(5);
  }

  @Test
  void listing_jobs_shows_the_callers_own_newest_first() {
    long a1 = f.submit(ALICE, "noop", "{}");
    f.submit(BOB, "noop", "{}");
    long a2 = f.submit(ALICE, "noop", "{}");

    JsonNode jobs = json(f.get("/jobs", ALICE)).get("jobs");

    assertThat(ids(jobs)).containsExactly(a2, a1);
  }

  @Test
  void listing_jobs_filters_by_status_and_limits() throws Exception {
    long done = f.submit(ALICE, "noop", "{}");
    f.h.awaitStatus(done, "succeeded");
    long held = f.submitHeldGate(ALICE, 0);
    long queued1 = f.submit(ALICE, "noop", "{}");
    long queued2 = f.submit(ALICE, "noop", "{}");

    assertThat(ids(json(f.get("/jobs?status=queued", ALICE)).get("jobs")))
        .containsExactly(queued2, queued1);
    assertThat(ids(json(f.get("/jobs?status=queued,running", ALICE)).get("jobs")))
        .containsExactly(queued2, queued1, held);
    assertThat(ids(json(f.get("/jobs?status=queued&status=succeeded", ALICE)).get("jobs")))
        .containsExactly(queued2, queued1, done);
    assertThat(ids(json(f.get("/jobs?limit=1", ALICE)).get("jobs"))).containsExactly(queued2);
    assertThat(ids(json(f.get("/jobs?status=&limit=", ALICE)).get("jobs")))
        .containsExactly(queued2, queued1, held, done);
    assertThat(ids(json(f.get("/jobs?status=queued,", ALICE)).get("jobs")))
        .containsExactly(queued2, queued1);
    JsonNode listed = json(f.get("/jobs?status=queued", ALICE)).get("jobs");
    assertThat(listed.get(0).get("position").asInt()).isEqualTo(2);
    assertThat(listed.get(0).get("waitingFor").get("jobsAhead").asInt()).isEqualTo(1);
  }

  @Test
  void an_admin_lists_every_users_jobs_or_one_users() {
    long a = f.submit(ALICE, "noop", "{}");
    long b = f.submit(BOB, "noop", "{}");

    assertThat(ids(json(f.get("/jobs", ADMIN)).get("jobs"))).containsExactly(b, a);
    assertThat(ids(json(f.get("/jobs?userId=bob", ADMIN)).get("jobs"))).containsExactly(b);
    assertThat(ids(json(f.get("/jobs?userId=alice", ALICE)).get("jobs"))).containsExactly(a);
  }

  @Test
  void the_default_list_limit_is_50() {
    for (int i = 0; i < 55; i++) {
      f.h.submit("alice", "noop", "{}");
    }
    assertThat(json(f.get("/jobs", ALICE)).get("jobs").size()).isEqualTo(50);
    assertThat(json(f.get("/jobs?limit=200", ALICE)).get("jobs").size()).isEqualTo(55);
  }

  @Test
  void cancelling_a_queued_job_cancels_it_at_once() throws Exception {
    f.submitHeldGate(BOB, 0);
    long id = f.submit(ALICE, "noop", "{}");

    ApiResponse r = f.post("/jobs/" + id + "/cancel", "", ALICE);

    assertThat(r.status()).isEqualTo(200);
    assertThat(json(r).get("status").asText()).isEqualTo("cancelled");
    assertThat(json(r).get("cancelRequested").asBoolean()).isTrue();
    assertThat(f.h.status(id)).isEqualTo("cancelled");
  }

  @Test
  void cancelling_a_running_job_requests_it_and_a_repeat_answers_the_same() throws Exception {
    long id = f.submitHeldGate(ALICE, 1);

    ApiResponse r = f.api.handle(ApiRequest.of("POST", "/jobs/" + id + "/cancel", ALICE));
    ApiResponse again = f.api.handle(ApiRequest.of("POST", "/jobs/" + id + "/cancel", ADMIN));

    assertThat(r.status()).isEqualTo(200);
    assertThat(json(r).get("status").asText()).isEqualTo("running");
    assertThat(json(r).get("cancelRequested").asBoolean()).isTrue();
    assertThat(again.status()).isEqualTo(200);
    assertThat(json(again).get("cancelRequested").asBoolean()).isTrue();
  }

  @Test
  void an_admin_cancels_anyones_job() throws Exception {
    f.submitHeldGate(BOB, 0);
    long id = f.submit(ALICE, "noop", "{}");

    ApiResponse r = f.api.handle(ApiRequest.of("POST", "/jobs/" + id + "/cancel", ADMIN));

    assertThat(r.status()).isEqualTo(200);
    assertThat(f.h.status(id)).isEqualTo("cancelled");
  }

  @Test
  void lanes_show_slots_workers_and_the_queue_in_order() throws Exception {
    long running = f.submitHeldGate(ALICE, 3);
    long q1 = f.submit(BOB, "noop", "{}");
    long q2 = f.submit(ALICE, "noop", "{}");

    ApiResponse r = f.get("/lanes", ADMIN);

    assertThat(r.status()).isEqualTo(200);
    JsonNode lanes = json(r).get("lanes");
    assertThat(lanes.size()).isEqualTo(1);
    JsonNode shared = lanes.get(0);
    assertThat(shared.get("lane").asText()).isEqualTo("shared");
    assertThat(shared.get("capacity").asInt()).isEqualTo(1);
    assertThat(shared.get("queued").asInt()).isEqualTo(2);
    JsonNode slot = shared.get("slots").get(0);
    assertThat(slot.get("slot").asText()).isEqualTo("shared#1");
    JsonNode worker = slot.get("worker");
    assertThat(worker.get("status").asText()).isEqualTo("running");
    assertThat(worker.get("taskId").asText()).startsWith("inproc-");
    assertThat(worker.get("leaseLeftSeconds").asLong()).isEqualTo(f.h.config.lease().toSeconds());
    assertThat(worker.get("job").get("id").asLong()).isEqualTo(running);
    assertThat(worker.get("job").get("userId").asText()).isEqualTo("alice");
    assertThat(worker.get("job").get("progress").asInt()).isEqualTo(3);
    JsonNode queued = shared.get("queuedJobs");
    assertThat(ids(queued)).containsExactly(q1, q2);
    assertThat(queued.get(0).get("userId").asText()).isEqualTo("bob");
    assertThat(queued.get(0).get("position").asInt()).isEqualTo(1);
    assertThat(queued.get(1).get("position").asInt()).isEqualTo(2);
    assertThat(
            json(f.get("/lanes?queuedLimit=1", ADMIN)).get("lanes").get(0).get("queuedJobs").size())
        .isEqualTo(1);
  }

  @Test
  void lanes_list_a_dedicated_users_lane_even_when_idle() {
    f.put("/users/carol", "{\"dedicatedWorker\": true}", ADMIN);

    JsonNode lanes = json(f.get("/lanes", ADMIN)).get("lanes");

    assertThat(lanes.findValuesAsText("lane")).containsExactly("shared", "user:carol");
    JsonNode carol = lanes.get(1);
    assertThat(carol.get("slots").get(0).get("slot").asText()).isEqualTo("user:carol#1");
    assertThat(carol.get("slots").get(0).get("worker").isNull()).isTrue();
  }

  @Test
  void a_demo_jobs_steps_give_the_lanes_progress_bar_its_end() throws Exception {
    // a demo job slow enough to be seen running: 200 steps of 50 ms
    long id = f.submit(ALICE, "demo", "{\"steps\": 200, \"stepMillis\": 50}");
    f.h.awaitStatus(id, "running");

    JsonNode job =
        json(f.get("/lanes", ADMIN))
            .get("lanes")
            .get(0)
            .get("slots")
            .get(0)
            .get("worker")
            .get("job");

    assertThat(job.get("steps").asInt()).isEqualTo(200);
    f.post("/jobs/" + id + "/cancel", "", ALICE);
    f.h.awaitStatus(id, "cancelled");
  }

  @Test
  void giving_a_user_a_dedicated_worker_moves_their_queued_jobs() throws Exception {
    f.submitHeldGate(BOB, 0);
    long queued = f.submit(ALICE, "gate", "{}");

    ApiResponse r = f.put("/users/alice", "{\"dedicatedWorker\": true}", ADMIN);

    assertThat(r.status()).isEqualTo(200);
    JsonNode body = json(r);
    assertThat(body.get("userId").asText()).isEqualTo("alice");
    assertThat(body.get("dedicatedWorker").asBoolean()).isTrue();
    assertThat(body.get("lane").asText()).isEqualTo("user:alice");
    assertThat(ids(body.get("movedJobs"))).containsExactly(queued);
    f.h.gates.awaitEntered(queued);
    assertThat(json(f.get("/jobs/" + queued, ALICE)).get("lane").asText()).isEqualTo("user:alice");

    ApiResponse back = f.put("/users/alice", "{\"dedicatedWorker\": false}", ADMIN);
    assertThat(json(back).get("lane").asText()).isEqualTo("shared");
    assertThat(json(back).get("movedJobs").size()).isZero();
  }

  @Test
  void a_user_id_in_the_path_is_percent_decoded() {
    ApiResponse r = f.put("/users/team%2Fa%20b", "{\"dedicatedWorker\": true}", ADMIN);

    assertThat(r.status()).isEqualTo(200);
    assertThat(json(r).get("userId").asText()).isEqualTo("team/a b");
    assertThat(json(r).get("lane").asText()).isEqualTo("user:team/a b");
  }

  @Test
  void health_is_up_without_a_token() {
    ApiResponse r = f.get("/health", null);

    assertThat(r.status()).isEqualTo(200);
    assertThat(json(r).get("status").asText()).isEqualTo("up");
  }

  @Test
  void the_dashboard_page_is_served_without_a_token() {
    ApiResponse r = f.get("/", null);

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("Content-Type")).hasValue("text/html; charset=utf-8");
    assertThat(r.bodyText()).contains("<title>buildqueue</title>");
  }

  private static List<Long> ids(JsonNode array) {
    List<Long> ids = new ArrayList<>();
    array.forEach(n -> ids.add(n.isObject() ? n.get("id").asLong() : n.asLong()));
    return ids;
  }
}
