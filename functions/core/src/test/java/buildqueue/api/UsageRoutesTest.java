package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.assertProblem;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobStatus;
import buildqueue.core.Ledger;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md §4.8 over HTTP: a job's {@code cost}, a user's usage (invisible to other
 * users), every user's (admins), and a budget's 429, held to openapi.json.
 */
class UsageRoutesTest extends ApiTest {
  private static final String DECEMBER = "?from=2026-12-01&to=2027-01-01";

  @Override
  ApiFixture fixture(TestDatabase tdb) {
    return new ApiFixture(
        tdb,
        QueueHarness.testConfig().toBuilder()
            .ledger(Ledger.fargate().withBudget(100L, "month"))
            .build(),
        true);
  }

  /** Runs a job of {@code caller} on a worker of its own for {@code seconds}, and stops it. */
  private long runJob(Caller caller, int seconds) {
    return finish(f.submit(caller, "noop", "{}"), seconds);
  }

  /** The last launched worker runs job {@code id} for {@code seconds}, and stops. */
  private long finish(long id, int seconds) {
    WorkerLaunch w = f.h.manual.lastLaunch();
    f.h.workers.start(w.workerId(), w.token()).orElseThrow();
    f.h.clock.advance(Duration.ofSeconds(seconds));
    f.h.workers.end(w.workerId(), w.token(), id, JobStatus.SUCCEEDED, null);
    f.h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited");
    return id;
  }

  @Test
  void a_jobs_cost_is_null_until_its_worker_stops_then_what_it_was_billed() {
    long id = f.submit(ALICE, "noop", "{}");
    assertThat(json(f.get("/jobs/" + id, ALICE)).get("cost").isNull()).isTrue();
    long billed = finish(id, 90);

    JsonNode cost = json(f.get("/jobs/" + billed, ALICE)).get("cost");
    assertThat(cost.get("billedSeconds").decimalValue()).isEqualByComparingTo("90");
    assertThat(cost.get("vcpuSeconds").decimalValue()).isEqualByComparingTo("90");
    assertThat(cost.get("gbSeconds").decimalValue()).isEqualByComparingTo("180");
    assertThat(cost.get("capacity").asText()).isEqualTo("on-demand");
    // 90 × 0.04048 / 3600 + 180 × 0.004445 / 3600 = 0.001234
    assertThat(cost.get("usd").decimalValue()).isEqualByComparingTo("0.001234");
  }

  @Test
  void a_users_usage_is_theirs_and_an_admins_and_another_user_gets_404() {
    runJob(ALICE, 61);
    runJob(BOB, 30);

    JsonNode alice = json(f.get("/users/alice/usage" + DECEMBER, ALICE));
    assertThat(alice.get("jobs").asLong()).isEqualTo(1);
    assertThat(alice.get("cost").get("billedSeconds").decimalValue()).isEqualByComparingTo("61");
    assertThat(json(f.get("/users/alice/usage" + DECEMBER, ADMIN))).isEqualTo(alice);
    JsonNode hidden =
        assertProblem(f.get("/users/alice/usage" + DECEMBER, BOB), 404, "/users/alice/usage");
    assertThat(hidden.get("detail").asText()).doesNotContain("61");
    // Bob's worker was billed the one-minute minimum.
    JsonNode all = json(f.get("/usage" + DECEMBER, ADMIN));
    assertThat(all.get("users"))
        .extracting(u -> u.get("userId").asText())
        .containsExactly("alice", "bob");
    assertThat(all.get("users").get(1).get("cost").get("billedSeconds").decimalValue())
        .isEqualByComparingTo("60");
    assertProblem(f.get("/usage" + DECEMBER, ALICE), 403, "/usage");
    JsonNode none = json(f.get("/users/alice/usage?from=2026-11-01&to=2026-12-01", ALICE));
    assertThat(none.get("jobs").asLong()).isZero();
    assertThat(none.get("cost").isNull()).isTrue();
  }

  @Test
  void a_bad_range_is_400_and_changes_nothing() {
    Map<String, Long> before = f.rowCounts();
    for (String query :
        new String[] {
          "?from=yesterday",
          "?to=2026-13-01",
          "?from=2026-12-02&to=2026-12-01",
          "?from=2026-12-01&to=2026-12-01",
          "?from=2026-12-01T00:00:00"
        }) {
      assertProblem(f.get("/users/alice/usage" + query, ALICE), 400, "/users/alice/usage");
      assertProblem(f.get("/usage" + query, ADMIN), 400, "/usage");
    }
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void
      an_enqueue_past_the_budget_is_a_429_of_its_own_with_retry_after_at_the_months_end_and_nothing_written() {
    runJob(ALICE, 100);
    Map<String, Long> before = f.rowCounts();

    ApiResponse r = f.post("/jobs", "{\"kind\": \"noop\"}", ALICE);

    JsonNode p = assertProblem(r, 429, "/jobs");
    assertThat(p.get("type").asText()).isEqualTo("urn:buildqueue:problem:budget-exceeded");
    assertThat(p.get("detail").asText())
        .contains("used 100 of your 100 vCPU-seconds this month")
        .contains("2027-01-01T00:00:00Z");
    assertThat(r.header("Retry-After"))
        .hasValue(
            Long.toString(
                Duration.between(f.h.clock.now(), java.time.Instant.parse("2027-01-01T00:00:00Z"))
                    .toSeconds()));
    assertThat(f.rowCounts()).isEqualTo(before);
    // Bob's budget is his own; an admin raises Alice's.
    assertThat(f.post("/jobs", "{\"kind\": \"noop\"}", BOB).status()).isEqualTo(201);
    JsonNode user = json(f.put("/users/alice", "{\"budgetVcpuSeconds\": 500}", ADMIN));
    assertThat(user.get("budgetVcpuSeconds").asLong()).isEqualTo(500);
    assertThat(user.get("budgetIsDefault").asBoolean()).isFalse();
    assertThat(f.post("/jobs", "{\"kind\": \"noop\"}", ALICE).status()).isEqualTo(201);
    assertProblem(f.put("/users/alice", "{\"budgetVcpuSeconds\": -1}", ADMIN), 400, "/users/alice");
    assertProblem(
        f.put("/users/alice", "{\"budgetVcpuSeconds\": \"lots\"}", ADMIN), 400, "/users/alice");
    JsonNode back = json(f.put("/users/alice", "{\"budgetVcpuSeconds\": null}", ADMIN));
    assertThat(back.get("budgetVcpuSeconds").asLong()).isEqualTo(100);
    assertThat(back.get("budgetIsDefault").asBoolean()).isTrue();
  }
}
