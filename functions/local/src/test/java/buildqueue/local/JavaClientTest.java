package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.client.ApiClient;
import buildqueue.client.ApiException;
import buildqueue.client.ApiResponse;
import buildqueue.client.api.AdminApi;
import buildqueue.client.api.JobsApi;
import buildqueue.client.model.Job;
import buildqueue.client.model.JobPage;
import buildqueue.client.model.JobStatus;
import buildqueue.client.model.SetUser;
import buildqueue.client.model.SubmitJob;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client an integrator generates from openapi.json (openapi-generator's {@code native}
 * library; this module's pom generates it into the test sources) drives a local server through the
 * flow the TypeScript client's program does. A new route is a method of the generated {@code
 * JobsApi} or {@code AdminApi} (by the operation's tag) and one more test here.
 */
@ExtendWith(PostgresExtension.class)
class JavaClientTest {
  private static final Map<String, Object> LONG = Map.of("steps", 100, "stepMillis", 200);

  @TempDir Path dataDir;
  private TestServer server;
  private JobsApi jobs;

  @BeforeEach
  void start(TestDatabase db) {
    server = TestServer.start(db, dataDir);
    jobs = new JobsApi(client("java-ada", false));
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private ApiClient client(String user, boolean admin) {
    String token = server.runtime.tokens().mint(user, admin, Duration.ofMinutes(10));
    ApiClient client = new ApiClient();
    client.updateBaseUri(server.runtime.baseUri().toString().replaceAll("/$", ""));
    client.setRequestInterceptor(r -> r.header("Authorization", "Bearer " + token));
    return client;
  }

  @Test
  void submit_with_an_idempotency_key_and_poll_to_success() throws Exception {
    SubmitJob body =
        new SubmitJob()
            .kind("demo")
            .payload(Map.of("steps", 3, "stepMillis", 20))
            .idempotencyKey("java-build-1");
    ApiResponse<Job> first = jobs.submitJobWithHttpInfo(body, null);
    ApiResponse<Job> again = jobs.submitJobWithHttpInfo(body, null);
    assertThat(first.getStatusCode()).isEqualTo(201);
    assertThat(again.getStatusCode()).isEqualTo(200);
    assertThat(again.getData().getId()).isEqualTo(first.getData().getId());

    Job done = awaitFinished(first.getData().getId());
    assertThat(done.getStatus()).isEqualTo(JobStatus.SUCCEEDED);
    assertThat(done.getProgress()).isEqualTo(3);
    assertThat(done.getPayload()).containsEntry("steps", 3);
  }

  @Test
  void a_supersede_key_cancels_the_earlier_job() throws Exception {
    Job first =
        jobs.submitJob(new SubmitJob().kind("demo").payload(LONG).supersedeKey("doc-7"), null);
    Job second =
        jobs.submitJob(new SubmitJob().kind("demo").payload(LONG).supersedeKey("doc-7"), null);
    Job replaced = awaitFinished(first.getId());
    assertThat(replaced.getStatus()).isEqualTo(JobStatus.CANCELLED);
    assertThat(replaced.getSupersededBy()).isEqualTo(second.getId());
    jobs.cancelJob(second.getId());
    assertThat(awaitFinished(second.getId()).getStatus()).isEqualTo(JobStatus.CANCELLED);
  }

  @Test
  void list_follows_next_page_by_page() throws Exception {
    List<Long> submitted = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      submitted.add(
          jobs.submitJob(
                  new SubmitJob().kind("demo").payload(Map.of("steps", 1, "stepMillis", 1)), null)
              .getId());
    }
    Set<Long> seen = new HashSet<>();
    Long before = null;
    for (int page = 0; page < 3; page++) {
      JobPage p = jobs.listJobs(null, 1, null, before);
      assertThat(p.getJobs()).hasSize(1);
      assertThat(seen.add(p.getJobs().get(0).getId())).as("a job on one page only").isTrue();
      if (page < 2) {
        assertThat(p.getNext()).as("page %d's next", page).isNotNull();
        before = Long.valueOf(query(p.getNext(), "before"));
      }
    }
    assertThat(seen).containsExactlyInAnyOrderElementsOf(submitted);
  }

  @Test
  void the_log_since_a_byte_count_is_what_came_after_it() throws Exception {
    long id =
        jobs.submitJob(
                new SubmitJob().kind("demo").payload(Map.of("steps", 2, "stepMillis", 10)), null)
            .getId();
    awaitFinished(id);
    ApiResponse<String> all = jobs.getJobLogWithHttpInfo(id, null);
    long total = Long.parseLong(header(all, "Buildqueue-Log-Total-Bytes"));
    assertThat(total).isPositive();
    assertThat(all.getData()).isNotEmpty();
    assertThat(header(all, "Buildqueue-Job-Status")).isEqualTo("succeeded");
    assertThat(jobs.getJobLog(id, total)).isEmpty();
    assertThat(jobs.getJobLog(id, 0L)).isEqualTo(all.getData());
  }

  @Test
  void cancel_stops_a_job() throws Exception {
    long id = jobs.submitJob(new SubmitJob().kind("demo").payload(LONG), null).getId();
    jobs.cancelJob(id);
    assertThat(awaitFinished(id).getStatus()).isEqualTo(JobStatus.CANCELLED);
  }

  @Test
  void a_full_quota_answers_429_with_retry_after() throws Exception {
    new AdminApi(client("root", true)).setUser("java-quota", new SetUser().maxQueuedJobs(1));
    JobsApi quota = new JobsApi(client("java-quota", false));
    SubmitJob body = new SubmitJob().kind("demo").payload(LONG);
    List<Long> accepted = new ArrayList<>();
    try {
      assertThatThrownBy(
              () -> {
                for (int i = 0; i < 5; i++) {
                  accepted.add(quota.submitJob(body, null).getId());
                }
              })
          .isInstanceOfSatisfying(
              ApiException.class,
              e -> {
                assertThat(e.getCode()).isEqualTo(429);
                assertThat(e.getResponseHeaders().firstValue("Retry-After")).isPresent();
                assertThat(e.getResponseHeaders().firstValue("Content-Type"))
                    .hasValue("application/problem+json");
                assertThat(e.getResponseBody()).contains("\"status\":429");
              });
      assertThat(accepted).hasSizeLessThanOrEqualTo(2);
    } finally {
      for (long id : accepted) {
        quota.cancelJob(id);
      }
    }
  }

  private Job awaitFinished(long id) {
    Job[] last = new Job[1];
    Await.until(
        "job " + id + " to finish",
        TestServer.JOB_TIMEOUT,
        () -> {
          try {
            last[0] = jobs.getJob(id);
          } catch (ApiException e) {
            throw new AssertionError("GET /jobs/" + id + ": " + e.getCode(), e);
          }
          return Set.of(JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
              .contains(last[0].getStatus());
        });
    return last[0];
  }

  private static String header(ApiResponse<?> r, String name) {
    return r.getHeaders().entrySet().stream()
        .filter(h -> h.getKey().equalsIgnoreCase(name))
        .map(h -> h.getValue().get(0))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no header " + name));
  }

  private static String query(String next, String name) {
    for (String pair : URI.create(next).getRawQuery().split("&")) {
      String[] kv = pair.split("=", 2);
      if (kv[0].equals(name)) {
        return kv[1];
      }
    }
    throw new AssertionError(next + " has no " + name);
  }
}
