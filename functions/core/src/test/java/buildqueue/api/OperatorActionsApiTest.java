package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.assertProblem;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobStatus;
import buildqueue.core.OperatorTransitions;
import buildqueue.db.Params;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Operator actions over HTTP (docs/architecture.md §4.9): bulk cancel by filter and retry of a
 * failed or cancelled job. Runs on every database adapter: the aws module runs this class again on
 * the Data API fake (its pom's queue-suite-on-data-api execution).
 */
@ExtendWith(PostgresExtension.class)
class OperatorActionsApiTest {

  private static ApiFixture fixture(TestDatabase tdb) {
    return new ApiFixture(tdb, QueueHarness.testConfig(), true);
  }

  @Test
  void a_bulk_cancel_by_user_cancels_queued_jobs_at_once_stops_the_running_one_and_spares_others(
      TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      long running = f.submit(ALICE, "noop", "{}");
      long queued1 = f.submit(ALICE, "noop", "{}");
      long queued2 = f.submit(ALICE, "gate", "{}");
      long bobs = f.submit(BOB, "noop", "{}");
      assertThat(f.h.status(running)).isEqualTo("dispatched");
      String task = f.h.worker(f.h.job(running).longValue("worker_id")).string("task_id");

      ApiResponse r = f.post("/jobs/cancel", "{\"userId\": \"alice\"}", ADMIN);

      assertThat(r.status()).as(r.bodyText()).isEqualTo(200);
      JsonNode out = json(r);
      assertThat(out.get("cancelledCount").asInt()).isEqualTo(2);
      assertThat(out.get("cancelled").toString()).isEqualTo("[" + queued1 + "," + queued2 + "]");
      assertThat(out.get("cancelRequestedCount").asInt()).isEqualTo(1);
      assertThat(out.get("cancelRequested").toString()).isEqualTo("[" + running + "]");
      assertThat(out.get("remaining").asInt()).isZero();
      assertThat(out.get("more").asBoolean()).isFalse();
      assertThat(f.h.status(queued1)).isEqualTo("cancelled");
      assertThat(f.h.status(queued2)).isEqualTo("cancelled");
      assertThat(f.h.job(running).bool("cancel_requested")).isTrue();
      assertThat(f.h.manual.stopRequests())
          .as("the running job's worker is told to stop")
          .contains(task);
      assertThat(f.h.status(bobs)).isEqualTo("queued");
      assertThat(f.h.eventTypes(queued1)).endsWith("cancelled");
      assertThat(f.h.eventTypes(running)).endsWith("cancel-requested");
      assertThat(f.h.eventTypes(bobs)).doesNotContain("cancelled", "cancel-requested");

      JsonNode again = json(f.post("/jobs/cancel", "{\"userId\": \"alice\"}", ADMIN));
      assertThat(again.get("cancelledCount").asInt() + again.get("cancelRequestedCount").asInt())
          .as("a repeated bulk cancel finds nothing left to cancel")
          .isZero();
    }
  }

  @Test
  void a_filter_matching_more_than_one_call_takes_is_cancelled_in_batches_that_say_what_remains(
      TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      int many = 2 * OperatorTransitions.MAX_BULK_CANCEL + 50;
      Rows.job().user("alice").kind("noop").insert(tdb.jdbc(), many - 10);
      Rows.job().user("carol").kind("noop").insert(tdb.jdbc(), 10);
      List<Long> gates = Rows.job().user("alice").kind("gate").insert(tdb.jdbc(), 5);

      List<Integer> cancelled = new ArrayList<>();
      List<Integer> remaining = new ArrayList<>();
      boolean more = true;
      while (more) {
        JsonNode out =
            json(f.post("/jobs/cancel", "{\"kind\": \"noop\", \"status\": [\"queued\"]}", ADMIN));
        cancelled.add(out.get("cancelledCount").asInt());
        remaining.add(out.get("remaining").asInt());
        more = out.get("more").asBoolean();
        assertThat(cancelled).as("the loop ends").hasSizeLessThanOrEqualTo(4);
      }

      assertThat(cancelled).containsExactly(100, 100, 50);
      assertThat(remaining).containsExactly(150, 50, 0);
      assertThat(
              count(
                  f,
                  "select count(*) as n from build_job where kind = 'noop' and status = 'cancelled'"))
          .isEqualTo(many);
      assertThat(
              count(
                  f,
                  "select count(*) as n from build_job_event e join build_job j on j.id = e.job_id"
                      + " where j.kind = 'noop' and e.type = 'cancelled'"))
          .as("one history row per cancelled job, as a single cancel writes")
          .isEqualTo(many);
      gates.forEach(g -> assertThat(f.h.status(g)).isEqualTo("queued"));
    }
  }

  @Test
  void a_bulk_cancel_of_running_jobs_only_leaves_the_queued_ones(TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      long running = f.submit(ALICE, "noop", "{}");
      long queued = f.submit(ALICE, "noop", "{}");

      JsonNode out =
          json(f.post("/jobs/cancel", "{\"userId\": \"alice\", \"status\": [\"running\"]}", ADMIN));

      assertThat(out.get("cancelledCount").asInt()).isZero();
      assertThat(out.get("cancelRequested").toString()).isEqualTo("[" + running + "]");
      assertThat(f.h.status(queued)).isEqualTo("queued");
      assertThat(f.h.job(running).bool("cancel_requested")).isTrue();
    }
  }

  @Test
  void a_bulk_cancel_without_a_filter_or_with_a_bad_one_is_refused_and_changes_nothing(
      TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      f.submit(ALICE, "noop", "{}");
      f.submit(ALICE, "noop", "{}");
      Map<String, Long> before = f.rowCounts();
      String[] bad = {
        "{}",
        "{\"userId\": null}",
        "{\"status\": []}",
        "{\"status\": [\"done\"]}",
        "{\"status\": \"queued\"}",
        "{\"status\": [1]}",
        "{\"userId\": 5}",
        "{\"userId\": \"\"}",
        "{\"kind\": [\"noop\"]}",
        "{\"user\": \"alice\"}",
        "[]",
        "not json"
      };
      for (String body : bad) {
        assertProblem(f.post("/jobs/cancel", body, ADMIN), 400, "/jobs/cancel");
      }
      assertThat(
              assertProblem(f.post("/jobs/cancel", "{}", ADMIN), 400, "/jobs/cancel")
                  .get("detail")
                  .asText())
          .contains("at least one of");
      assertProblem(f.post("/jobs/cancel", "{\"userId\": \"alice\"}", ALICE), 403, "/jobs/cancel");
      assertThat(f.rowCounts()).isEqualTo(before);
      assertThat(count(f, "select count(*) as n from build_job where cancel_requested")).isZero();
    }
  }

  @Test
  void a_failed_job_is_retried_as_a_new_job_with_its_kind_and_payload_linked_both_ways(
      TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      long failed =
          Rows.job()
              .user("alice")
              .kind("noop")
              .payload("{\"note\": \"again\", \"n\": 3}")
              .status(JobStatus.FAILED)
              .insert(tdb.jdbc());

      ApiResponse r = f.post("/jobs/" + failed + "/retry", "{}", ALICE);

      assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
      JsonNode retry = json(r);
      long retryId = retry.get("id").asLong();
      assertThat(r.header("Location")).hasValue("/jobs/" + retryId);
      assertThat(retry.get("userId").asText()).isEqualTo("alice");
      assertThat(retry.get("kind").asText()).isEqualTo("noop");
      assertThat(retry.get("payload").toString()).isEqualTo("{\"n\":3,\"note\":\"again\"}");
      assertThat(retry.get("retryOf").asLong()).isEqualTo(failed);
      assertThat(retry.get("status").asText()).isEqualTo("dispatched");
      assertThat(json(f.get("/jobs/" + retryId, ALICE)).get("retryOf").asLong()).isEqualTo(failed);
      JsonNode old = json(f.get("/jobs/" + failed, ALICE));
      assertThat(old.get("retriedBy").asLong()).isEqualTo(retryId);
      assertThat(old.get("status").asText()).isEqualTo("failed");
      assertThat(f.h.eventTypes(failed)).containsExactly("retried");

      Map<String, Long> before = f.rowCounts();
      JsonNode again =
          assertProblem(
              f.post("/jobs/" + failed + "/retry", "", ALICE), 409, "/jobs/" + failed + "/retry");
      assertThat(again.get("detail").asText()).contains("already retried by job " + retryId);
      assertThat(f.rowCounts()).isEqualTo(before);
    }
  }

  @Test
  void an_admin_retries_a_users_cancelled_job_for_that_user_and_another_user_finds_no_job(
      TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      long cancelled =
          Rows.job().user("bob").kind("noop").status(JobStatus.CANCELLED).insert(tdb.jdbc());
      Map<String, Long> before = f.rowCounts();
      assertProblem(
          f.post("/jobs/" + cancelled + "/retry", "{}", ALICE),
          404,
          "/jobs/" + cancelled + "/retry");
      assertThat(f.rowCounts()).isEqualTo(before);

      ApiResponse r = f.post("/jobs/" + cancelled + "/retry", "{}", ADMIN);

      assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
      assertThat(json(r).get("userId").asText()).isEqualTo("bob");
      assertThat(json(r).get("lane").asText()).isEqualTo("shared");
      assertThat(json(f.get("/jobs/" + cancelled, BOB)).get("retriedBy").asLong())
          .isEqualTo(json(r).get("id").asLong());
    }
  }

  @Test
  void only_a_failed_or_cancelled_job_is_retried_and_a_refused_retry_writes_nothing(
      TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      long dispatched = f.submit(ALICE, "noop", "{}");
      long queued = f.submit(ALICE, "noop", "{}");
      long succeeded = Rows.job().user("alice").status(JobStatus.SUCCEEDED).insert(tdb.jdbc());
      long unknownKind =
          Rows.job().user("alice").kind("retired-kind").status(JobStatus.FAILED).insert(tdb.jdbc());
      long failed = Rows.job().user("alice").status(JobStatus.FAILED).insert(tdb.jdbc());
      Map<String, Long> before = f.rowCounts();

      for (long id : new long[] {dispatched, queued, succeeded, unknownKind}) {
        JsonNode p =
            assertProblem(
                f.post("/jobs/" + id + "/retry", "{}", ALICE), 409, "/jobs/" + id + "/retry");
        assertThat(p.get("detail").asText()).startsWith("Job " + id);
      }
      assertProblem(
          f.post("/jobs/" + failed + "/retry", "{\"kind\": \"demo\"}", ALICE),
          400,
          "/jobs/" + failed + "/retry");
      assertProblem(f.post("/jobs/12345678/retry", "{}", ALICE), 404, "/jobs/12345678/retry");
      assertProblem(f.post("/jobs/x/retry", "{}", ALICE), 404, "/jobs/x/retry");
      assertThat(f.rowCounts()).isEqualTo(before);
      assertThat(count(f, "select count(*) as n from build_job where retried_by is not null"))
          .isZero();
    }
  }

  @Test
  void a_retry_past_the_users_quota_gets_429_and_writes_nothing(TestDatabase tdb) {
    try (ApiFixture f = fixture(tdb)) {
      assertThat(f.put("/users/alice", "{\"maxQueuedJobs\": 1}", ADMIN).status()).isEqualTo(200);
      f.submit(ALICE, "noop", "{}"); // dispatched
      f.submit(ALICE, "noop", "{}"); // queued: 1 of 1
      long failed = Rows.job().user("alice").status(JobStatus.FAILED).insert(tdb.jdbc());
      Map<String, Long> before = f.rowCounts();

      ApiResponse r = f.post("/jobs/" + failed + "/retry", "{}", ALICE);

      assertProblem(r, 429, "/jobs/" + failed + "/retry");
      assertThat(r.header("Retry-After")).hasValue("60");
      assertThat(f.rowCounts()).isEqualTo(before);
      assertThat(f.h.job(failed).get("retried_by")).isNull();
    }
  }

  @Test
  void many_concurrent_retries_of_one_job_make_one_retry_and_every_answer_names_it(TestDatabase tdb)
      throws Exception {
    try (ApiFixture f = fixture(tdb)) {
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        for (int round = 0; round < 5; round++) {
          long failed = Rows.job().user("alice").status(JobStatus.FAILED).insert(tdb.jdbc());
          List<Future<ApiResponse>> answers = new ArrayList<>();
          for (int i = 0; i < 8; i++) {
            Caller caller = i % 2 == 0 ? ALICE : ADMIN;
            Callable<ApiResponse> retry = () -> f.post("/jobs/" + failed + "/retry", "{}", caller);
            answers.add(pool.submit(retry));
          }
          Set<String> named = new HashSet<>();
          int created = 0;
          for (Future<ApiResponse> a : answers) {
            ApiResponse r = a.get();
            assertThat(r.status()).as(r.bodyText()).isIn(200, 201, 409);
            created += r.status() == 201 ? 1 : 0;
            named.add(r.header("Location").orElseThrow());
          }
          long retries = count(f, "select count(*) as n from build_job where retry_of = " + failed);
          assertThat(retries).as("round " + round).isEqualTo(1);
          assertThat(created).as("round " + round).isEqualTo(1);
          assertThat(named)
              .as("round " + round + ": every answer names the one retry")
              .containsExactly("/jobs/" + f.h.job(failed).longValue("retried_by"));
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }

  private static long count(ApiFixture f, String sql) {
    return f.h.testDb.jdbc().query(sql, Params.none()).get(0).longValue("n");
  }
}
