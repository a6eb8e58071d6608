package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.assertProblem;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * docs/architecture.md §4.7 over HTTP: a priority on submit and by PATCH while queued, an admin's
 * run next, and pausing and resuming a lane (a waiting job says its lane is paused, and promises no
 * start). Workers are only recorded (manual), so a job stays where the request left it; every
 * answer is held to openapi.json.
 */
@ExtendWith(PostgresExtension.class)
class PriorityAndPauseApiTest {

  private static ApiResponse patch(ApiFixture f, long id, String body, Caller caller) {
    return f.api.handle(ApiRequest.json("PATCH", "/jobs/" + id, body, caller));
  }

  private static long queued(ApiFixture f, Caller caller, String priority) {
    ApiResponse r =
        f.post(
            "/jobs",
            "{\"kind\": \"noop\""
                + (priority == null ? "" : ", \"priority\": \"" + priority + "\"")
                + "}",
            caller);
    assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
    return json(r).get("id").asLong();
  }

  @Test
  void a_priority_is_given_on_submit_and_changed_while_queued_by_its_owner(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      long running = queued(f, ALICE, null); // takes the one shared slot
      long low = queued(f, ALICE, "low");
      long normal = queued(f, ALICE, null);

      assertThat(json(f.get("/jobs/" + low, ALICE)).get("priority").asText()).isEqualTo("low");
      assertThat(json(f.get("/jobs/" + normal, ALICE)).get("priority").asText())
          .isEqualTo("normal");
      assertThat(json(f.get("/jobs/" + low, ALICE)).get("position").asInt()).isEqualTo(2);

      ApiResponse raised = patch(f, low, "{\"priority\": \"high\"}", ALICE);
      assertThat(raised.status()).as(raised.bodyText()).isEqualTo(200);
      assertThat(json(raised).get("priority").asText()).isEqualTo("high");
      assertThat(json(raised).get("position").asInt()).isEqualTo(1);
      assertThat(json(f.get("/jobs/" + normal, ALICE)).get("position").asInt()).isEqualTo(2);

      assertProblem(patch(f, low, "{\"priority\": \"low\"}", BOB), 404, "/jobs/" + low);
      assertThat(patch(f, low, "{\"priority\": \"normal\"}", ADMIN).status()).isEqualTo(200);
      JsonNode started =
          assertProblem(
              patch(f, running, "{\"priority\": \"high\"}", ALICE), 409, "/jobs/" + running);
      assertThat(started.get("detail").asText()).contains("dispatched, not queued");
    }
  }

  @Test
  void a_bad_priority_is_400_and_changes_nothing(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      queued(f, ALICE, null);
      long job = queued(f, ALICE, "high");
      Map<String, Long> before = f.rowCounts();
      for (String bad :
          new String[] {"\"urgent\"", "\"HIGH\"", "1", "true", "[]", "{}", "\"next\""}) {
        JsonNode p =
            assertProblem(
                f.post("/jobs", "{\"kind\": \"noop\", \"priority\": " + bad + "}", ALICE),
                400,
                "/jobs");
        assertThat(p.get("detail").asText()).contains("low, normal, high");
        assertProblem(patch(f, job, "{\"priority\": " + bad + "}", ALICE), 400, "/jobs/" + job);
      }
      assertProblem(patch(f, job, "{}", ALICE), 400, "/jobs/" + job);
      assertProblem(patch(f, job, "{\"priority\": null}", ALICE), 400, "/jobs/" + job);
      assertProblem(patch(f, job, "{\"paused\": true}", ALICE), 400, "/jobs/" + job);
      assertThat(f.rowCounts()).isEqualTo(before);
      assertThat(json(f.get("/jobs/" + job, ALICE)).get("priority").asText()).isEqualTo("high");
    }
  }

  @Test
  void run_next_puts_a_job_at_the_head_of_its_lane_and_only_an_admin_may(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      queued(f, ALICE, null);
      queued(f, ALICE, "high");
      long last = queued(f, BOB, "low");

      assertProblem(
          f.post("/jobs/" + last + "/run-next", "", BOB), 403, "/jobs/" + last + "/run-next");
      ApiResponse r = f.post("/jobs/" + last + "/run-next", "", ADMIN);

      assertThat(r.status()).as(r.bodyText()).isEqualTo(200);
      assertThat(json(r).get("priority").asText()).isEqualTo("next");
      assertThat(json(r).get("position").asInt()).isEqualTo(1);
      JsonNode head = json(f.get("/lanes", ADMIN)).get("lanes").get(0).get("queuedJobs").get(0);
      assertThat(head.get("id").asLong()).isEqualTo(last);
      assertThat(head.get("priority").asText()).isEqualTo("next");
      assertProblem(f.post("/jobs/99999/run-next", "", ADMIN), 404, "/jobs/99999/run-next");
    }
  }

  /**
   * A paused lane takes submissions and starts nothing; resuming it dispatches in the same request.
   */
  @Test
  void a_paused_lane_queues_and_starts_nothing_and_resuming_dispatches_at_once(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig().withSharedSlots(2), true)) {
      ApiResponse paused = f.put("/lanes/shared", "{\"paused\": true}", ADMIN);
      assertThat(paused.status()).as(paused.bodyText()).isEqualTo(200);
      assertThat(json(paused).get("paused").asBoolean()).isTrue();
      assertThat(json(paused).get("pausedBy").asText()).isEqualTo("root");

      long first = queued(f, ALICE, null);
      queued(f, BOB, null);
      f.h.queue.tick();

      assertThat(f.h.manual.launches()).isEmpty();
      JsonNode waiting = json(f.get("/jobs/" + first, ALICE));
      assertThat(waiting.get("status").asText()).isEqualTo("queued");
      JsonNode why = waiting.get("waitingFor");
      assertThat(why.get("lanePausedAt").isNull()).isFalse();
      assertThat(why.get("estimatedStart").isNull()).isTrue();
      assertThat(why.get("summary").asText())
          .contains("The lane is paused since")
          .contains("until an admin resumes it")
          .doesNotContain("root");
      JsonNode lane = json(f.get("/lanes", ADMIN)).get("lanes").get(0);
      assertThat(lane.get("paused").asBoolean()).isTrue();
      assertThat(lane.get("queued").asInt()).isEqualTo(2);

      ApiResponse resumed = f.put("/lanes/shared", "{\"paused\": false}", ADMIN);

      assertThat(resumed.status()).as(resumed.bodyText()).isEqualTo(200);
      assertThat(json(resumed).get("paused").asBoolean()).isFalse();
      assertThat(f.h.manual.launches()).hasSize(2);
      assertThat(json(f.get("/jobs/" + first, ALICE)).get("status").asText())
          .isEqualTo("dispatched");
      JsonNode later = json(f.get("/jobs/" + queued(f, ALICE, null), ALICE)).get("waitingFor");
      assertThat(later.get("lanePausedAt").isNull()).isTrue();
    }
  }

  @Test
  void only_an_admin_pauses_a_lane_and_a_bad_request_is_400(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      assertProblem(f.put("/lanes/shared", "{\"paused\": true}", ALICE), 403, "/lanes/shared");
      for (String bad :
          new String[] {
            "{}", "{\"paused\": \"yes\"}", "{\"paused\": null}", "{\"paused\": true, \"x\": 1}"
          }) {
        assertProblem(f.put("/lanes/shared", bad, ADMIN), 400, "/lanes/shared");
      }
      assertProblem(f.put("/lanes/nowhere", "{\"paused\": true}", ADMIN), 400, "/lanes/nowhere");
      assertThat(json(f.get("/lanes", ADMIN)).get("lanes").get(0).get("paused").asBoolean())
          .isFalse();
      ApiResponse dedicated = f.put("/lanes/user:alice", "{\"paused\": true}", ADMIN);
      assertThat(dedicated.status()).as(dedicated.bodyText()).isEqualTo(200);
      assertThat(json(dedicated).get("lane").asText()).isEqualTo("user:alice");
      assertThat(json(dedicated).get("capacity").asInt()).isEqualTo(1);
    }
  }
}
