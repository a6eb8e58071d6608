package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.assertProblem;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.QueueConfig;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * docs/architecture.md §4.7 over HTTP: the quota's 429, the admin's PUT /users quota, what a
 * supersede answers.
 */
@ExtendWith(PostgresExtension.class)
class QuotaAndSupersedeApiTest {

  @Test
  void
      the_1001st_queued_job_gets_429_with_retry_after_and_how_many_are_queued_and_nothing_is_written(
          TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      Rows.job()
          .user("alice")
          .lane("shared")
          .insert(tdb.jdbc(), QueueConfig.DEFAULT_MAX_QUEUED_JOBS);
      Map<String, Long> before = f.rowCounts();

      ApiResponse r =
          f.post("/jobs", "{\"kind\": \"noop\", \"idempotencyKey\": \"one-more\"}", ALICE);

      JsonNode problem = assertProblem(r, 429, "/jobs");
      assertThat(r.header("Retry-After")).hasValue("60");
      assertThat(problem.get("detail").asText())
          .startsWith("You have 1000 queued jobs; the limit is 1000 per user.")
          .contains("Nothing was written");
      assertThat(f.rowCounts()).isEqualTo(before);
    }
  }

  @Test
  void an_admin_sets_a_users_quota_and_the_next_submission_past_it_is_refused(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      ApiResponse set = f.put("/users/alice", "{\"maxQueuedJobs\": 1}", ADMIN);
      assertThat(set.status()).as(set.bodyText()).isEqualTo(200);
      assertThat(json(set).get("maxQueuedJobs").asInt()).isEqualTo(1);
      assertThat(json(set).get("maxQueuedJobsIsDefault").asBoolean()).isFalse();
      assertThat(json(set).get("dedicatedWorker").asBoolean()).isFalse();

      assertThat(f.post("/jobs", "{\"kind\": \"noop\"}", ALICE).status())
          .isEqualTo(201); // dispatched
      assertThat(f.post("/jobs", "{\"kind\": \"noop\"}", ALICE).status())
          .isEqualTo(201); // queued: 1 of 1
      assertThat(
              assertProblem(f.post("/jobs", "{\"kind\": \"noop\"}", ALICE), 429, "/jobs")
                  .get("detail")
                  .asText())
          .startsWith("You have 1 queued job; the limit is 1 per user.");

      ApiResponse reset = f.put("/users/alice", "{\"maxQueuedJobs\": null}", ADMIN);
      assertThat(json(reset).get("maxQueuedJobs").asInt()).isEqualTo(1000);
      assertThat(json(reset).get("maxQueuedJobsIsDefault").asBoolean()).isTrue();
      assertThat(f.post("/jobs", "{\"kind\": \"noop\"}", ALICE).status()).isEqualTo(201);
    }
  }

  @Test
  void only_an_admin_sets_a_quota_and_a_bad_value_is_400_and_changes_nothing(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      assertProblem(f.put("/users/alice", "{\"maxQueuedJobs\": 5}", ALICE), 403, "/users/alice");
      for (String bad :
          new String[] {"0", "-1", "1.5", "\"5\"", "true", "1000001", "99999999999", "[]", "{}"}) {
        JsonNode p =
            assertProblem(
                f.put("/users/alice", "{\"maxQueuedJobs\": " + bad + "}", ADMIN),
                400,
                "/users/alice");
        assertThat(p.get("detail").asText())
            .as(bad)
            .contains("\"maxQueuedJobs\" must be a whole number from 1 to 1000000");
      }
      assertProblem(f.put("/users/alice", "{}", ADMIN), 400, "/users/alice");
      assertThat(f.rowCounts().values()).containsOnly(0L);
    }
  }

  @Test
  void a_superseding_submission_answers_which_jobs_it_cancelled_and_which_it_asked_to_stop(
      TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      long onWorker =
          json(f.post("/jobs", "{\"kind\": \"noop\", \"supersedeKey\": \"doc-1\"}", ALICE))
              .get("id")
              .asLong();
      long queued =
          json(f.post("/jobs", "{\"kind\": \"noop\", \"supersedeKey\": \"doc-2\"}", ALICE))
              .get("id")
              .asLong();
      long queuedToo =
          json(f.post("/jobs", "{\"kind\": \"noop\", \"supersedeKey\": \"doc-1\"}", ALICE))
              .get("id")
              .asLong();

      ApiResponse r = f.post("/jobs", "{\"kind\": \"noop\", \"supersedeKey\": \"doc-1\"}", ALICE);

      assertThat(r.status()).isEqualTo(201);
      JsonNode job = json(r);
      assertThat(job.get("supersedeKey").asText()).isEqualTo("doc-1");
      assertThat(job.get("superseded").get("cancelledCount").asLong()).isEqualTo(1);
      assertThat(job.get("superseded").get("cancelled").get(0).asLong()).isEqualTo(queuedToo);
      // the job on a worker was asked to stop by queuedToo already; the newest finds nothing more
      // to ask
      assertThat(job.get("superseded").get("cancelRequested")).isEmpty();
      JsonNode old = json(f.get("/jobs/" + queuedToo, ALICE));
      assertThat(old.get("status").asText()).isEqualTo("cancelled");
      assertThat(old.get("supersededBy").asLong()).isEqualTo(job.get("id").asLong());
      assertThat(json(f.get("/jobs/" + onWorker, ALICE)).get("cancelRequested").asBoolean())
          .isTrue();
      assertThat(json(f.get("/jobs/" + queued, ALICE)).get("status").asText()).isEqualTo("queued");
      assertProblem(
          f.post("/jobs", "{\"kind\": \"noop\", \"supersedeKey\": 7}", ALICE), 400, "/jobs");
    }
  }
}
