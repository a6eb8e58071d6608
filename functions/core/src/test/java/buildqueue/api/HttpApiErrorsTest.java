package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.testing.InProcessPlatform;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import buildqueue.worker.JobHandlers;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every refusal: its status, its problem+json shape, a detail that says what to do, no writes. */
class HttpApiErrorsTest extends ApiTest {
  @Test
  void every_route_but_health_and_the_page_answers_401_without_a_caller() throws Exception {
    long id = queuedBehindAHeldJob();
    String[][] routes = {
      {"POST", "/jobs"},
      {"GET", "/jobs"},
      {"GET", "/jobs/" + id},
      {"GET", "/jobs/" + id + "/events"},
      {"GET", "/jobs/" + id + "/log"},
      {"POST", "/jobs/" + id + "/cancel"},
      {"GET", "/lanes"},
      {"PUT", "/users/alice"},
    };
    Map<String, Long> before = f.rowCounts();
    for (String[] route : routes) {
      ApiResponse r =
          f.api.handle(ApiRequest.json(route[0], route[1], "{\"kind\": \"noop\"}", null));
      JsonNode p = assertProblem(r, 401, route[1]);
      assertThat(p.get("detail").asText()).contains("Authorization: Bearer");
      assertThat(r.header("WWW-Authenticate")).hasValue("Bearer realm=\"buildqueue\"");
    }
    assertThat(f.rowCounts()).isEqualTo(before);
    assertThat(f.h.status(id)).isEqualTo("queued");
  }

  @Test
  void a_caller_whose_sub_is_unusable_answers_401() {
    assertProblem(f.get("/jobs", Caller.user("")), 401, "/jobs");
    assertProblem(f.get("/jobs", Caller.user("a\u0000b")), 401, "/jobs");
    assertProblem(f.get("/jobs", Caller.user("x".repeat(201))), 401, "/jobs");
  }

  @Test
  void another_users_job_is_not_found_whatever_the_route() throws Exception {
    long id = queuedBehindAHeldJob();
    Map<String, Long> before = f.rowCounts();

    JsonNode p = assertProblem(f.get("/jobs/" + id, BOB), 404, "/jobs/" + id);
    assertProblem(f.get("/jobs/" + id + "/events", BOB), 404, "/jobs/" + id + "/events");
    assertProblem(f.post("/jobs/" + id + "/cancel", "", BOB), 404, "/jobs/" + id + "/cancel");

    assertThat(p.get("detail").asText())
        .contains("There is no job " + id + " of yours")
        .contains("GET /jobs");
    assertThat(f.rowCounts()).isEqualTo(before);
    assertThat(f.h.status(id)).isEqualTo("queued");
  }

  /**
   * Alice's job, queued behind Bob's job that holds the only shared slot: nothing moves until the
   * gate opens.
   */
  private long queuedBehindAHeldJob() throws InterruptedException {
    f.submitHeldGate(BOB, 0);
    return f.h.submit("alice", "noop", "{}");
  }

  @Test
  void a_missing_job_and_another_users_job_answer_alike() {
    long id = f.h.submit("alice", "noop", "{}");

    JsonNode others = assertProblem(f.get("/jobs/" + id, BOB), 404, "/jobs/" + id);
    JsonNode missing =
        assertProblem(f.get("/jobs/" + (id + 1000), BOB), 404, "/jobs/" + (id + 1000));

    assertThat(others.get("detail").asText().replace(String.valueOf(id), "N"))
        .isEqualTo(missing.get("detail").asText().replace(String.valueOf(id + 1000), "N"));
  }

  @Test
  void ids_that_are_not_whole_numbers_or_too_large_are_not_found() {
    for (String bad :
        new String[] {
          "abc", "-1", "1.5", "+1", "99999999999999999999999", "%31%32x", "0x10", " 1"
        }) {
      String path = "/jobs/" + bad.replace(" ", "%20");
      ApiResponse r = f.get(path, ALICE);
      assertThat(r.status()).as(path).isIn(400, 404);
      assertProblem(r, r.status(), path);
      assertProblem(f.post(path + "/cancel", "", ALICE), r.status(), path + "/cancel");
      assertProblem(f.get(path + "/events", ALICE), r.status(), path + "/events");
    }
    assertThat(f.rowCounts().get("build_job")).isZero();
  }

  @Test
  void non_admins_get_403_on_admin_routes_and_nothing_changes() throws Exception {
    f.submitHeldGate(BOB, 0);
    f.submit(ALICE, "noop", "{}");
    Map<String, Long> before = f.rowCounts();

    JsonNode lanes = assertProblem(f.get("/lanes", ALICE), 403, "/lanes");
    JsonNode put =
        assertProblem(
            f.put("/users/alice", "{\"dedicatedWorker\": true}", ALICE), 403, "/users/alice");

    assertThat(lanes.get("detail").asText()).contains("buildqueue/admin");
    assertThat(put.get("detail").asText()).contains("buildqueue/admin");
    assertThat(f.rowCounts()).isEqualTo(before);
    assertThat(f.h.job(2).string("lane")).isEqualTo("shared");
  }

  @Test
  void a_non_admin_asking_for_another_users_jobs_gets_403() {
    JsonNode p = assertProblem(f.get("/jobs?userId=bob", ALICE), 403, "/jobs");
    assertThat(p.get("detail").asText()).contains("leave out userId");
  }

  @Test
  void cancelling_a_finished_job_answers_409() {
    long id = f.submit(ALICE, "noop", "{}");
    f.h.awaitStatus(id, "succeeded");
    f.h.awaitWorkersExited(); // its exit writes a cost event
    Map<String, Long> before = f.rowCounts();

    JsonNode p =
        assertProblem(f.post("/jobs/" + id + "/cancel", "", ALICE), 409, "/jobs/" + id + "/cancel");

    assertThat(p.get("detail").asText())
        .contains("already succeeded")
        .contains("nothing to cancel");
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void cancelling_a_cancelled_job_answers_409() throws Exception {
    f.submitHeldGate(BOB, 0);
    long id = f.submit(ALICE, "noop", "{}");
    f.post("/jobs/" + id + "/cancel", "", ALICE);

    JsonNode p =
        assertProblem(f.post("/jobs/" + id + "/cancel", "", ALICE), 409, "/jobs/" + id + "/cancel");

    assertThat(p.get("detail").asText()).contains("already been cancelled");
  }

  @Test
  void an_unknown_route_is_404_naming_the_routes() {
    JsonNode p = assertProblem(f.get("/nope", ALICE), 404, "/nope");
    assertThat(p.get("detail").asText()).contains("POST /jobs").contains("GET /jobs/{id}/events");
    assertProblem(f.get("/jobs/", ALICE), 404, "/jobs/");
    assertProblem(f.get("//jobs", ALICE), 404, "//jobs");
    assertProblem(f.get("/jobs/1/2/3", ALICE), 404, "/jobs/1/2/3");
    assertProblem(f.get("/jobs/1/events/", ALICE), 404, "/jobs/1/events/");
    assertProblem(f.get("/users", ADMIN), 404, "/users");
    assertProblem(f.get("", null), 404, "");
    assertProblem(f.get("/nope", null), 404, "/nope");
  }

  @Test
  void a_wrong_method_is_405_with_allow() {
    Object[][] cases = {
      {"DELETE", "/jobs", "POST, GET, HEAD"},
      {"PUT", "/jobs/1", "GET, HEAD, PATCH"},
      {"GET", "/jobs/1/cancel", "POST"},
      {"POST", "/jobs/1/events", "GET, HEAD"},
      {"POST", "/lanes", "GET, HEAD"},
      {"GET", "/users/alice", "PUT"},
      {"POST", "/health", "GET, HEAD"},
      {"POST", "/", "GET, HEAD"},
      {"get", "/jobs", "POST, GET, HEAD"},
    };
    for (Object[] c : cases) {
      ApiResponse r = f.api.handle(ApiRequest.of((String) c[0], (String) c[1], ALICE));
      JsonNode p = assertProblem(r, 405, (String) c[1]);
      assertThat(r.header("Allow")).as(c[0] + " " + c[1]).hasValue((String) c[2]);
      assertThat(p.get("detail").asText()).contains("use " + c[2]);
    }
    assertThat(f.rowCounts().get("build_job")).isZero();
  }

  @Test
  void an_unknown_kind_is_400_naming_the_known_ones() {
    JsonNode p = badSubmit("{\"kind\": \"deploy\"}");
    assertThat(p.get("detail").asText())
        .contains("Unknown kind \"deploy\"")
        .contains("demo, gate, noop");
  }

  @Test
  void a_payload_the_kind_rejects_is_400_with_the_kinds_message() {
    JsonNode p = badSubmit("{\"kind\": \"demo\", \"payload\": {\"steps\": -1}}");
    assertThat(p.get("detail").asText())
        .contains("not valid for kind \"demo\"")
        .contains("\"steps\" must be a whole number from 0 to 10000");
  }

  @Test
  void a_payload_that_is_not_an_object_is_400() {
    for (String payload : new String[] {"[]", "\"x\"", "1", "true"}) {
      JsonNode p = badSubmit("{\"kind\": \"noop\", \"payload\": " + payload + "}");
      assertThat(p.get("detail").asText()).contains("\"payload\" must be a JSON object");
    }
  }

  @Test
  void a_body_that_is_not_an_object_is_400() {
    for (String body : new String[] {"[]", "\"demo\"", "42", "null", "true"}) {
      JsonNode p = badSubmit(body);
      assertThat(p.get("detail").asText()).contains("must be a JSON object");
    }
  }

  @Test
  void malformed_json_is_400_saying_where() {
    JsonNode p = badSubmit("{\"kind\": \"noop\",\n \"payload\": {]}");
    assertThat(p.get("detail").asText()).contains("not valid JSON").contains("line 2");
    badSubmit("{\"kind\": \"noop\"} trailing");
    badSubmit("{\"kind\": \"noop\", \"kind\": \"demo\"}");
    badSubmit("{\"kind\": 'noop'}");
    badSubmit("{\"kind\": \"noop\", \"payload\": {\"n\": NaN}}");
    badSubmit("{\"kind\": \"noop\"");
    badSubmit("");
  }

  @Test
  void an_over_long_number_is_400_naming_the_limit_in_plain_words() {
    Map<String, Long> before = f.rowCounts();
    for (String number : new String[] {"9".repeat(1001), "0." + "1".repeat(1000)}) {
      JsonNode p = badSubmit("{\"kind\": \"noop\", \"payload\": {\"n\": " + number + "}}");
      assertThat(p.get("detail").asText())
          .contains("a number longer than 1,000 digits")
          .contains("send long numbers as strings")
          .doesNotContain("not valid JSON")
          .doesNotContain("StreamReadConstraints")
          .doesNotContain("getMax");
    }
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void over_deep_json_is_400_naming_the_limit_in_plain_words() {
    String deep = "{\"a\": ".repeat(65) + "1" + "}".repeat(65);
    JsonNode p = badSubmit("{\"kind\": \"noop\", \"payload\": " + deep + "}");
    assertThat(p.get("detail").asText())
        .contains("more than 64 levels deep")
        .doesNotContain("not valid JSON")
        .doesNotContain("StreamReadConstraints")
        .doesNotContain("getMax");
    String deepArrays = "[".repeat(100) + "]".repeat(100);
    assertThat(badSubmit(deepArrays).get("detail").asText()).contains("more than 64 levels deep");
  }

  @Test
  void head_answers_as_get_wherever_get_does() throws Exception {
    long id = f.submit(ALICE, "noop", "{}");
    String[] targets = {
      "/",
      "/health",
      "/openapi.json",
      "/jobs",
      "/jobs/" + id,
      "/jobs/" + id + "/events",
      "/jobs/" + id + "/log",
      "/lanes",
      "/jobs/" + (id + 1000)
    };
    for (String target : targets) {
      ApiResponse get = f.api.handle(ApiRequest.of("GET", target, ADMIN));
      ApiResponse head = f.api.handle(ApiRequest.of("HEAD", target, ADMIN));
      assertThat(head.status()).as("HEAD " + target).isEqualTo(get.status());
      assertThat(head.headers().keySet()).as("HEAD " + target).isEqualTo(get.headers().keySet());
      assertThat(head.header("Content-Type")).isEqualTo(get.header("Content-Type"));
      assertThat(head.body()).as("HEAD " + target).isEmpty();
    }
    ApiResponse unauthenticated = f.api.handle(ApiRequest.of("HEAD", "/jobs", null));
    assertThat(unauthenticated.status()).isEqualTo(401);
    assertThat(unauthenticated.header("WWW-Authenticate")).isPresent();
    assertThat(unauthenticated.body()).isEmpty();
    ApiResponse notAllowed = f.api.handle(ApiRequest.of("HEAD", "/jobs/" + id + "/cancel", ALICE));
    assertThat(notAllowed.status()).isEqualTo(405);
    assertThat(notAllowed.header("Allow")).hasValue("POST");
  }

  @Test
  void wrong_types_are_400_naming_the_field() {
    assertThat(badSubmit("{\"kind\": 7}").get("detail").asText())
        .contains("\"kind\" must be a string");
    assertThat(badSubmit("{\"payload\": {}}").get("detail").asText())
        .contains("\"kind\" is missing");
    assertThat(badSubmit("{\"kind\": \"noop\", \"idempotencyKey\": 5}").get("detail").asText())
        .contains("\"idempotencyKey\" must be a string");
  }

  @Test
  void an_unknown_top_level_field_is_400_naming_it() {
    JsonNode p = badSubmit("{\"kind\": \"noop\", \"urgency\": 1}");
    assertThat(p.get("detail").asText())
        .contains("Unknown field \"urgency\"")
        .contains("kind, payload, idempotencyKey");
  }

  @Test
  void an_idempotency_key_must_be_1_to_200_characters() {
    badSubmit("{\"kind\": \"noop\", \"idempotencyKey\": \"\"}");
    badSubmit("{\"kind\": \"noop\", \"idempotencyKey\": \"" + "k".repeat(201) + "\"}");
    badSubmit("{\"kind\": \"noop\", \"idempotencyKey\": \"a\\u0000b\"}");
    ApiResponse ok =
        f.post(
            "/jobs",
            "{\"kind\": \"noop\", \"idempotencyKey\": \"" + "é".repeat(200) + "\"}",
            ALICE);
    assertThat(ok.status()).isEqualTo(201);
  }

  @Test
  void reusing_an_idempotency_key_for_a_different_job_is_409() {
    f.post(
        "/jobs", "{\"kind\": \"noop\", \"payload\": {\"a\": 1}, \"idempotencyKey\": \"k\"}", ALICE);
    f.h.awaitStatus(1, "succeeded");
    f.h.awaitWorkersExited(); // its exit writes a cost event
    Map<String, Long> before = f.rowCounts();

    ApiResponse r =
        f.post(
            "/jobs",
            "{\"kind\": \"noop\", \"payload\": {\"a\": 2}, \"idempotencyKey\": \"k\"}",
            ALICE);

    JsonNode p = assertProblem(r, 409, "/jobs");
    assertThat(p.get("detail").asText()).contains("already used for job 1");
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void a_body_over_256_kib_is_413() {
    String filler = "x".repeat(HttpApi.MAX_BODY_BYTES);
    Map<String, Long> before = f.rowCounts();

    ApiResponse r =
        f.post("/jobs", "{\"kind\": \"noop\", \"payload\": {\"f\": \"" + filler + "\"}}", ALICE);

    JsonNode p = assertProblem(r, 413, "/jobs");
    assertThat(p.get("detail").asText()).contains("262144 bytes");
    assertProblem(
        f.put("/users/x", "{\"dedicatedWorker\": true, \"f\": \"" + filler + "\"}", ADMIN),
        413,
        "/users/x");
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void a_body_of_exactly_256_kib_is_accepted_when_its_payload_fits() {
    String head = "{\"kind\": \"noop\", \"payload\": {\"f\": \"" + "x".repeat(1000) + "\"}";
    String tail = "}";
    String body = head + " ".repeat(HttpApi.MAX_BODY_BYTES - head.length() - tail.length()) + tail;
    assertThat(body.length()).isEqualTo(HttpApi.MAX_BODY_BYTES);

    assertThat(f.post("/jobs", body, ALICE).status()).isEqualTo(201);
  }

  @Test
  void a_payload_over_the_row_budget_as_stored_is_413_and_writes_nothing() {
    // 20,000 zeros are 40,008 bytes as sent ({"a": [0,0,…]}), under the limit, and 60,007 as
    // stored ({"a": [0, 0, …]}), over it.
    String payload = "{\"a\": [" + "0,".repeat(19_999) + "0]}";
    Map<String, Long> before = f.rowCounts();

    ApiResponse r = f.post("/jobs", "{\"kind\": \"noop\", \"payload\": " + payload + "}", ALICE);

    JsonNode p = assertProblem(r, 413, "/jobs");
    assertThat(p.get("detail").asText())
        .contains(
            "takes 60007 bytes as stored",
            "the limit is 55000 bytes",
            "Nothing was written",
            "object storage");
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void a_body_that_is_not_json_is_415() {
    byte[] body = "{\"kind\": \"noop\"}".getBytes(StandardCharsets.UTF_8);
    for (String type :
        new String[] {
          "text/plain",
          "application/x-www-form-urlencoded",
          "application/xml",
          "application/jsonp",
          ""
        }) {
      Map<String, String> headers = type.isEmpty() ? Map.of() : Map.of("Content-Type", type);
      ApiResponse r = f.call("POST", "/jobs", headers, body, ALICE);
      JsonNode p = assertProblem(r, 415, "/jobs");
      assertThat(p.get("detail").asText()).as(type).contains("Content-Type: application/json");
    }
    assertProblem(
        f.call(
            "POST",
            "/jobs",
            Map.of("Content-Type", "application/json; charset=latin1"),
            body,
            ALICE),
        415,
        "/jobs");
    assertProblem(
        f.call(
            "PUT",
            "/users/x",
            Map.of("Content-Type", "text/plain"),
            "{\"dedicatedWorker\": true}".getBytes(StandardCharsets.UTF_8),
            ADMIN),
        415,
        "/users/x");
    assertThat(f.rowCounts().values()).containsOnly(0L);
  }

  @Test
  void json_content_types_with_parameters_or_suffixes_are_accepted() {
    byte[] body = "{\"kind\": \"noop\"}".getBytes(StandardCharsets.UTF_8);
    for (String type :
        new String[] {
          "application/json; charset=UTF-8", "Application/JSON", "application/vnd.x+json"
        }) {
      ApiResponse r = f.call("POST", "/jobs", Map.of("content-type", type), body, ALICE);
      assertThat(r.status()).as(type).isEqualTo(201);
    }
  }

  @Test
  void a_user_update_needs_a_boolean_dedicated_worker() {
    for (String body :
        new String[] {
          "{}",
          "{\"dedicatedWorker\": \"yes\"}",
          "{\"dedicatedWorker\": 1}",
          "{\"dedicatedWorker\": true, \"lane\": \"x\"}",
          "[]",
          "nope"
        }) {
      ApiResponse r = f.put("/users/alice", body, ADMIN);
      assertProblem(r, 400, "/users/alice");
    }
    assertProblem(f.put("/users/a%00b", "{\"dedicatedWorker\": true}", ADMIN), 400, "/users/a%00b");
    assertProblem(
        f.put("/users/" + "u".repeat(201), "{\"dedicatedWorker\": true}", ADMIN),
        400,
        "/users/" + "u".repeat(201));
    assertProblem(f.put("/users/%zz", "{\"dedicatedWorker\": true}", ADMIN), 400, "/users/%zz");
    assertProblem(f.put("/users/%ff", "{\"dedicatedWorker\": true}", ADMIN), 400, "/users/%ff");
    assertThat(f.rowCounts().values()).containsOnly(0L);
  }

  @Test
  void bad_query_parameters_are_400() {
    assertThat(
            assertProblem(f.get("/jobs?status=done", ALICE), 400, "/jobs").get("detail").asText())
        .contains("Unknown status \"done\"")
        .contains("queued, dispatched, running");
    assertThat(assertProblem(f.get("/jobs?limit=0", ALICE), 400, "/jobs").get("detail").asText())
        .contains("from 1 to 200");
    assertProblem(f.get("/jobs?limit=201", ALICE), 400, "/jobs");
    assertProblem(f.get("/jobs?limit=ten", ALICE), 400, "/jobs");
    assertProblem(f.get("/jobs?limit=99999999999999", ALICE), 400, "/jobs");
    assertProblem(f.get("/jobs?limit=1&limit=2", ALICE), 400, "/jobs");
    assertThat(
            assertProblem(f.get("/jobs?stauts=queued", ALICE), 400, "/jobs").get("detail").asText())
        .contains("Unknown query parameter \"stauts\"")
        .contains("limit, status, userId");
    assertProblem(f.get("/jobs?status=%E0", ALICE), 400, "/jobs");
    assertProblem(f.get("/jobs?status=%", ALICE), 400, "/jobs");
    assertProblem(f.get("/lanes?queuedLimit=-1", ADMIN), 400, "/lanes");
    assertProblem(f.get("/health?x=1", null), 400, "/health");
  }

  @Test
  void health_is_503_when_the_database_does_not_answer() {
    ApiResponse r = apiOverAClosedDatabase().handle(ApiRequest.of("GET", "/health", null));

    JsonNode p = assertProblem(r, 503, "/health");
    assertThat(p.get("detail").asText()).contains("database did not answer");
    assertThat(r.header("Retry-After")).hasValue("5");
  }

  @Test
  void an_unexpected_failure_is_a_500_with_an_incident_id_and_no_internals() {
    ApiResponse r = apiOverAClosedDatabase().handle(ApiRequest.of("GET", "/jobs", ALICE));

    JsonNode p = assertProblem(r, 500, "/jobs");
    assertThat(p.get("detail").asText())
        .containsPattern("incident [0-9a-f-]{36}")
        .doesNotContain("select")
        .doesNotContain("Exception")
        .doesNotContain("jdbc");
  }

  private JsonNode badSubmit(String body) {
    Map<String, Long> before = f.rowCounts();
    ApiResponse r = f.post("/jobs", body, ALICE);
    JsonNode p = assertProblem(r, 400, "/jobs");
    assertThat(f.rowCounts()).as("rows after " + body).isEqualTo(before);
    return p;
  }

  @Test
  void problem_details_never_echo_more_than_a_short_escaped_excerpt() {
    String kind = "k\u0001" + "z".repeat(500);
    JsonNode p = badSubmit("{\"kind\": \"k\\u0001" + "z".repeat(500) + "\"}");
    assertThat(p.get("detail").asText())
        .contains("k\\u0001")
        .hasSizeLessThan(400)
        .doesNotContain(kind)
        .doesNotContain("\u0001");
  }

  /** The real JDBC adapter over a database that is gone: every statement fails. */
  private static CheckedApi apiOverAClosedDatabase() {
    TestDatabase gone = TestDatabases.create();
    gone.close();
    Database db = gone.jdbc();
    QueueConfig config = QueueConfig.defaults();
    JobHandlers handlers = JobHandlers.builtIn();
    InProcessPlatform platform = new InProcessPlatform(db, config, QueueClock.DATABASE, handlers);
    return new CheckedApi(
        new HttpApi(
            new BuildQueue(db, platform, config, QueueClock.DATABASE),
            new JobQueries(db, config, QueueClock.DATABASE),
            handlers));
  }
}
