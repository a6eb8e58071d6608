package buildqueue.api;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobQueries;
import buildqueue.core.QueueConfig;
import buildqueue.db.Params;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * An {@link HttpApi} over a {@link QueueHarness} (real PostgreSQL, in-process workers with the job
 * kinds of the harness), with shorthands for calls and row counts.
 */
final class ApiFixture implements AutoCloseable {
  static final Caller ALICE = Caller.user("alice");
  static final Caller BOB = Caller.user("bob");
  static final Caller ADMIN = Caller.admin("root");
  private static final ObjectMapper JSON = new ObjectMapper();

  final QueueHarness h;
  final JobQueries queries;

  /** Every response is held to openapi.json. */
  final CheckedApi api;

  ApiFixture(TestDatabase tdb) {
    this(tdb, QueueHarness.testConfig());
  }

  ApiFixture(TestDatabase tdb, QueueConfig config) {
    this(tdb, config, false);
  }

  /**
   * @param manualWorkers launches are only recorded ({@link QueueHarness#manual}): jobs stay as
   *     submitted
   */
  ApiFixture(TestDatabase tdb, QueueConfig config, boolean manualWorkers) {
    this.h = manualWorkers ? QueueHarness.manual(tdb, config) : QueueHarness.open(tdb, config);
    this.queries = new JobQueries(h.db, h.config, h.clock);
    this.api = new CheckedApi(new HttpApi(h.queue, queries, h.handlers));
  }

  ApiResponse get(String target, Caller caller) {
    return api.handle(ApiRequest.of("GET", target, caller));
  }

  ApiResponse post(String target, String json, Caller caller) {
    return api.handle(ApiRequest.json("POST", target, json, caller));
  }

  ApiResponse put(String target, String json, Caller caller) {
    return api.handle(ApiRequest.json("PUT", target, json, caller));
  }

  ApiResponse call(
      String method, String target, Map<String, String> headers, byte[] body, Caller caller) {
    return api.handle(ApiRequest.of(method, target, headers, body, caller));
  }

  /** Submits a job through the API and returns its id; fails unless the answer is 201. */
  long submit(Caller caller, String kind, String payload) {
    ApiResponse r =
        post("/jobs", "{\"kind\": \"" + kind + "\", \"payload\": " + payload + "}", caller);
    assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
    return json(r).get("id").asLong();
  }

  /** A gate job that reports {@code progressTo} and then holds its worker until opened. */
  long submitHeldGate(Caller caller, int progressTo) throws InterruptedException {
    long id = submit(caller, "gate", "{\"progressTo\": " + progressTo + "}");
    h.gates.awaitEntered(id);
    return id;
  }

  static JsonNode json(ApiResponse r) {
    try {
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new UncheckedIOException("not JSON: " + r.bodyText(), e);
    }
  }

  /**
   * Rows in build_job, build_job_event, build_worker and build_user, to prove a request wrote
   * nothing.
   */
  Map<String, Long> rowCounts() {
    return Map.of(
        "build_job", count("select count(*) as n from build_job"),
        "build_job_event", count("select count(*) as n from build_job_event"),
        "build_worker", count("select count(*) as n from build_worker"),
        "build_user", count("select count(*) as n from build_user"));
  }

  private long count(String sql) {
    return h.testDb.jdbc().query(sql, Params.none()).get(0).longValue("n");
  }

  /** Asserts the RFC 9457 shape and returns the problem. */
  static JsonNode assertProblem(ApiResponse r, int status, String instance) {
    assertThat(r.status()).as(r.bodyText()).isEqualTo(status);
    assertThat(r.header("Content-Type")).hasValue("application/problem+json");
    JsonNode p = json(r);
    assertThat(p.get("type").asText()).startsWith("urn:buildqueue:problem:");
    assertThat(p.get("title").asText()).isNotBlank();
    assertThat(p.get("status").asInt()).isEqualTo(status);
    assertThat(p.get("detail").asText()).isNotBlank();
    assertThat(p.get("instance").asText()).isEqualTo(instance);
    assertThat(p.size()).as("only the RFC 9457 members").isEqualTo(5);
    return p;
  }

  /**
   * Lets every gate job finish, so no worker is left blocked, then waits for the workers to end.
   */
  @Override
  public void close() {
    for (var row : h.testDb.jdbc().query("select id from build_job", Params.none())) {
      h.gates.open(row.longValue("id"));
    }
    h.close();
    if (h.platform != null) {
      h.awaitQuiet();
    }
  }
}
