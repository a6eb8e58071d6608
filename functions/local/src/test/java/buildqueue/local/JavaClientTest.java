package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.client.ApiClient;
import buildqueue.client.ApiException;
import buildqueue.client.ApiResponse;
import buildqueue.client.api.AdminApi;
import buildqueue.client.api.JobsApi;
import buildqueue.client.model.Artifact;
import buildqueue.client.model.BulkCancel;
import buildqueue.client.model.CancelFilter;
import buildqueue.client.model.ChosenPriority;
import buildqueue.client.model.Cost;
import buildqueue.client.model.Event;
import buildqueue.client.model.Job;
import buildqueue.client.model.JobArtifacts;
import buildqueue.client.model.JobPage;
import buildqueue.client.model.JobStatus;
import buildqueue.client.model.Lane;
import buildqueue.client.model.LaneHistory;
import buildqueue.client.model.LaneHistoryBucket;
import buildqueue.client.model.LaneHistoryLanesInner;
import buildqueue.client.model.Priority;
import buildqueue.client.model.PutWebhook;
import buildqueue.client.model.QueuedJob;
import buildqueue.client.model.SetLane;
import buildqueue.client.model.SetPriority;
import buildqueue.client.model.SetUser;
import buildqueue.client.model.StartEstimate;
import buildqueue.client.model.SubmitJob;
import buildqueue.client.model.Usage;
import buildqueue.client.model.UsageByUser;
import buildqueue.client.model.Waiting;
import buildqueue.client.model.WebhookDelivery;
import buildqueue.client.model.WebhookEndpoint;
import buildqueue.client.model.WebhookReplay;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.WebhookReceiver;
import java.io.File;
import java.math.BigDecimal;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client an integrator generates from openapi.json (openapi-generator's {@code native}
 * library; this module's pom generates it into the test sources) drives a local server through the
 * flow the TypeScript client's program does, the operators' routes, a job's artifacts and the
 * webhook routes included, on a server with a kind whose program publishes artifacts and webhook
 * deliveries allowed to a receiver on this machine ({@link ClientTestServer}). Jobs whose order a
 * test checks are submitted while the shared lane is paused ({@link #whilePaused}). A new route is
 * a method of the generated {@code JobsApi} or {@code AdminApi} (by the operation's tag) and one
 * more test here.
 */
@ExtendWith(PostgresExtension.class)
class JavaClientTest {
  private static final Map<String, Object> LONG = Map.of("steps", 100, "stepMillis", 200);
  private static final Map<String, Object> QUICK = Map.of("steps", 1, "stepMillis", 10);

  /** The lane of a user without a dedicated worker; the test server has one slot there. */
  private static final String SHARED = "shared";

  @TempDir Path dataDir;
  @TempDir Path programs;
  private TestServer server;
  private JobsApi jobs;

  private AdminApi admin;

  @BeforeEach
  void start(TestDatabase db) {
    server = ClientTestServer.start(db, dataDir, programs);
    jobs = new JobsApi(client("java-ada", false));
    admin = new AdminApi(client("root", true));
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private ApiClient client(String user, boolean admin) {
    return client(server.runtime.tokens().mint(user, admin, Duration.ofMinutes(10)));
  }

  private ApiClient client(String token) {
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

  @Test
  void a_queued_job_has_no_start_estimate_until_a_job_of_its_lane_finished() throws Exception {
    assertThat(queuedBehindARunningJob().getEstimatedStart()).isNull();

    long done = jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK), null).getId();
    assertThat(awaitFinished(done).getStatus()).isEqualTo(JobStatus.SUCCEEDED);

    StartEstimate eta = queuedBehindARunningJob().getEstimatedStart();
    assertThat(eta).as("an estimate once a job of the lane finished").isNotNull();
    assertThat(eta.getFrom()).isBeforeOrEqualTo(eta.getTo());
    // The first job, and the long one the first call cancelled if its worker had started it.
    assertThat(eta.getSamples()).isBetween(1, 2);
  }

  /** The waitingFor of a job queued behind a running one in a running lane; both cancelled. */
  private Waiting queuedBehindARunningJob() throws ApiException {
    long running = jobs.submitJob(new SubmitJob().kind("demo").payload(LONG), null).getId();
    Job queued = jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK), null);
    try {
      assertThat(queued.getStatus())
          .as("one slot: behind job %d", running)
          .isEqualTo(JobStatus.QUEUED);
      assertThat(queued.getWaitingFor().getLanePausedAt()).isNull();
      return queued.getWaitingFor();
    } finally {
      jobs.cancelJob(queued.getId());
      jobs.cancelJob(running);
      awaitFinished(running);
    }
  }

  @Test
  void priorities_order_a_users_queued_jobs_and_run_next_heads_the_paused_lane() throws Exception {
    List<Long> order =
        whilePaused(
            () -> {
              Lane paused = shared();
              assertThat(paused.getPaused()).isTrue();
              assertThat(paused.getPausedBy()).isEqualTo("root");
              assertThat(paused.getPausedAt()).isNotNull();
              long low = submit(ChosenPriority.LOW);
              long normal = submit(null);
              long high = submit(ChosenPriority.HIGH);
              Waiting waiting = jobs.getJob(low).getWaitingFor();
              assertThat(waiting.getLanePausedAt()).as("waitingFor says it is paused").isNotNull();
              assertThat(waiting.getEstimatedStart()).as("none while paused").isNull();
              assertThat(jobs.getJob(normal).getPriority()).isEqualTo(Priority.NORMAL);
              assertThat(queuedInLane()).containsExactly(high, normal, low);
              assertThat(List.of(position(high), position(normal), position(low)))
                  .containsExactly(1, 2, 3);

              Job raised =
                  jobs.setJobPriority(
                      low, new SetPriority().priority(SetPriority.PriorityEnum.HIGH));
              assertThat(raised.getPriority()).isEqualTo(Priority.HIGH);
              // The older of two high jobs goes first.
              assertThat(raised.getPosition()).isEqualTo(1);

              Job next = admin.runJobNext(normal);
              assertThat(next.getPriority()).isEqualTo(Priority.NEXT);
              assertThat(next.getStatus())
                  .as("a paused lane starts nothing")
                  .isEqualTo(JobStatus.QUEUED);
              assertThat(next.getPosition()).isEqualTo(1);
              assertThat(queuedInLane()).containsExactly(normal, low, high);
              return List.of(normal, low, high);
            });
    assertThat(shared().getPaused()).isFalse();

    List<Instant> dispatched = new ArrayList<>();
    for (long id : order) {
      Job done = awaitFinished(id);
      assertThat(done.getStatus()).isEqualTo(JobStatus.SUCCEEDED);
      dispatched.add(done.getDispatchedAt().toInstant());
    }
    assertThat(dispatched).as("dispatched in the lane's order").isSorted();
    assertThatThrownBy(
            () ->
                jobs.setJobPriority(
                    order.get(0), new SetPriority().priority(SetPriority.PriorityEnum.LOW)))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.getCode()).isEqualTo(409));
  }

  @Test
  void bulk_cancel_answers_how_many_and_a_cancelled_job_is_retried_once() throws Exception {
    List<Long> mine =
        whilePaused(
            () -> {
              List<Long> ids = new ArrayList<>();
              for (int i = 0; i < 3; i++) {
                ids.add(jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK), null).getId());
              }
              // No status: the generated CancelFilter must send none (not []), meaning both.
              BulkCancel done = admin.cancelJobs(new CancelFilter().userId("java-ada"));
              assertThat(done.getCancelledCount()).isEqualTo(3);
              assertThat(done.getCancelled()).containsExactlyElementsOf(ids);
              assertThat(done.getCancelRequestedCount()).isZero();
              assertThat(done.getRemaining()).isZero();
              assertThat(done.getMore()).isFalse();
              return ids;
            });
    for (long id : mine) {
      assertThat(jobs.getJob(id).getStatus()).isEqualTo(JobStatus.CANCELLED);
    }

    long old = mine.get(0);
    ApiResponse<Job> retried = jobs.retryJobWithHttpInfo(old);
    assertThat(retried.getStatusCode()).isEqualTo(201);
    Job fresh = retried.getData();
    assertThat(fresh.getId()).isNotEqualTo(old);
    assertThat(fresh.getRetryOf()).isEqualTo(old);
    assertThat(fresh.getKind()).isEqualTo("demo");
    assertThat(fresh.getPayload()).containsEntry("steps", 1);
    assertThat(jobs.getJob(old).getRetriedBy()).isEqualTo(fresh.getId());
    assertThat(failure(() -> jobs.retryJob(old))).as("a second retry").isEqualTo(409);
    assertThat(awaitFinished(fresh.getId()).getStatus()).isEqualTo(JobStatus.SUCCEEDED);
    assertThat(failure(() -> jobs.retryJob(fresh.getId()))).as("a succeeded job").isEqualTo(409);
  }

  @Test
  void a_jobs_cost_appears_once_its_worker_stopped_and_the_usage_routes_add_it_up()
      throws Exception {
    long id = jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK), null).getId();
    Job billed = await(id, j -> j.getCost() != null, "billed");
    assertThat(billed.getStatus()).isEqualTo(JobStatus.SUCCEEDED);
    assertPositive(billed.getCost());

    String from = Instant.now().minus(Duration.ofDays(1)).toString();
    String to = Instant.now().plus(Duration.ofDays(1)).toString();
    Usage own = jobs.getUsage("java-ada", from, to);
    assertThat(own.getUserId()).isEqualTo("java-ada");
    assertThat(own.getJobs()).isEqualTo(1);
    assertThat(own.getCost().getBilledSeconds())
        .isEqualByComparingTo(billed.getCost().getBilledSeconds());
    assertThat(own.getCost().getUsd()).isEqualByComparingTo(billed.getCost().getUsd());
    assertThat(failure(() -> jobs.getUsage("someone-else", from, to)))
        .as("another user's usage")
        .isEqualTo(404);

    UsageByUser all = admin.listUsage(from, to);
    assertThat(all.getUsers())
        .singleElement()
        .satisfies(u -> assertThat(u.getUserId()).isEqualTo("java-ada"))
        .satisfies(u -> assertThat(u.getJobs()).isEqualTo(1));
  }

  @Test
  void lane_history_has_36_buckets_holding_the_lanes_dispatches() throws Exception {
    for (int i = 0; i < 2; i++) {
      awaitFinished(jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK), null).getId());
    }
    LaneHistory history = admin.laneHistory(1);
    assertThat(history.getBucketSeconds()).isEqualTo(100);
    LaneHistoryLanesInner lane =
        history.getLanes().stream()
            .filter(l -> l.getLane().equals(SHARED))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no history of " + SHARED));
    assertThat(lane.getBuckets()).hasSize(36);
    assertThat(lane.getBuckets().stream().mapToInt(LaneHistoryBucket::getStarted).sum())
        .isEqualTo(2);
    assertThat(lane.getBuckets())
        .allSatisfy(
            b -> {
              assertThat(b.getWaitP50Seconds() == null).isEqualTo(b.getStarted() == 0);
              assertThat(b.getWaitP90Seconds() == null).isEqualTo(b.getStarted() == 0);
            });
  }

  @Test
  void a_read_only_admin_sees_the_lanes_and_gets_403_on_a_change() throws Exception {
    AdminApi readOnly =
        new AdminApi(
            client(
                server.runtime.tokens().mint("java-support", false, true, Duration.ofMinutes(10))));
    assertThat(readOnly.listLanesWithHttpInfo(null, null).getStatusCode()).isEqualTo(200);
    assertThat(failure(() -> readOnly.setLane(SHARED, new SetLane().paused(true)))).isEqualTo(403);
    assertThat(failure(() -> readOnly.cancelJobs(new CancelFilter().userId("java-ada"))))
        .isEqualTo(403);
    assertThat(admin.listLanes(null, null).getLanes().stream().noneMatch(l -> l.getPaused()))
        .as("no lane paused")
        .isTrue();
  }

  @Test
  void a_programs_three_artifacts_are_listed_and_downloaded_byte_identical_by_their_owner_only()
      throws Exception {
    long id =
        jobs.submitJob(
                new SubmitJob().kind(ClientTestServer.ARTIFACTS_KIND).payload(Map.of()), null)
            .getId();
    assertThat(awaitFinished(id).getStatus()).isEqualTo(JobStatus.SUCCEEDED);

    JobArtifacts listed = jobs.listJobArtifacts(id);
    assertThat(listed.getJobId()).isEqualTo(id);
    assertThat(listed.getStatus()).isEqualTo(JobStatus.SUCCEEDED);
    assertThat(listed.getArtifacts())
        .extracting(Artifact::getName)
        .containsExactlyElementsOf(ClientTestServer.ARTIFACTS);
    Map<String, byte[]> downloaded = new HashMap<>();
    for (Artifact a : listed.getArtifacts()) {
      ApiResponse<File> file = jobs.getJobArtifactWithHttpInfo(id, a.getName());
      byte[] bytes = Files.readAllBytes(file.getData().toPath());
      Files.delete(file.getData().toPath());
      assertThat(file.getStatusCode()).isEqualTo(200);
      assertThat((long) bytes.length).as(a.getName()).isEqualTo(a.getBytes());
      assertThat(sha256(bytes)).as(a.getName()).isEqualTo(a.getSha256());
      assertThat(header(file, "Buildqueue-Artifact-Sha256")).isEqualTo(a.getSha256());
      downloaded.put(a.getName(), bytes);
    }
    assertThat(new String(downloaded.get("report.txt"), StandardCharsets.UTF_8))
        .isEqualTo(ClientTestServer.REPORT);
    assertThat(downloaded.get("random.bin")).hasSize(ClientTestServer.RANDOM_BYTES);

    JobsApi other = new JobsApi(client("java-eve", false));
    assertThat(failure(() -> other.listJobArtifacts(id))).as("another's list").isEqualTo(404);
    assertThat(failure(() -> other.getJobArtifact(id, "report.txt")))
        .as("another's file")
        .isEqualTo(404);
  }

  @Test
  void an_admins_webhook_is_listed_without_its_secret_logs_a_jobs_deliveries_and_is_deleted()
      throws Exception {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      PutWebhook body = new PutWebhook().url(receiver.url("/hook")).userId("java-ada");
      AdminApi asUser = new AdminApi(client("java-ada", false));
      assertThat(failure(() -> asUser.putWebhook("java-ci", body))).as("a user").isEqualTo(403);

      ApiResponse<WebhookEndpoint> made = admin.putWebhookWithHttpInfo("java-ci", body);
      assertThat(made.getStatusCode()).isEqualTo(201);
      String secret = made.getData().getSecret();
      assertThat(secret).startsWith("whsec_");
      List<String> prints = made.getData().getSecretFingerprints();
      assertThat(prints).singleElement().asString().startsWith("sha256:");
      assertThat(admin.listWebhooks().getWebhooks())
          .singleElement()
          .satisfies(
              e -> {
                assertThat(e.getName()).isEqualTo("java-ci");
                assertThat(e.getUrl()).isEqualTo(receiver.url("/hook"));
                assertThat(e.getUserId()).isEqualTo("java-ada");
                assertThat(e.getSecretFingerprints()).isEqualTo(prints);
                assertThat(e.getSecret()).isNull();
              });
      // The generated model would drop a field it does not know: the answer's text holds no secret.
      assertThat(server.client("root", true).get("webhooks").text()).doesNotContain(secret);

      long job = jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK), null).getId();
      assertThat(awaitFinished(job).getStatus()).isEqualTo(JobStatus.SUCCEEDED);
      List<Long> events =
          jobs.getJobEvents(job, null).getEvents().stream().map(Event::getId).toList();
      List<List<WebhookDelivery>> log = new ArrayList<>(List.of(List.of()));
      Await.until(
          "job " + job + "'s events " + events + " delivered",
          TestServer.JOB_TIMEOUT,
          () -> {
            log.set(0, deliveries("java-ci").stream().filter(d -> d.getJobId() == job).toList());
            return log.get(0).stream()
                .filter(d -> d.getStatus() == WebhookDelivery.StatusEnum.DELIVERED)
                .map(WebhookDelivery::getEventId)
                .toList()
                .containsAll(events);
          });
      WebhookDelivery succeeded =
          log.get(0).stream()
              .filter(d -> d.getEventType().equals("succeeded"))
              .findFirst()
              .orElseThrow(() -> new AssertionError("no succeeded event in " + log.get(0)));
      assertThat(succeeded.getLastStatus()).isEqualTo(200);
      assertThat(succeeded.getDeliveredAt()).isNotNull();
      assertThat(receiver.received())
          .filteredOn(r -> r.header("webhook-id").equals(succeeded.getEventId().toString()))
          .isNotEmpty()
          .allSatisfy(r -> assertThat(StandardWebhooks.verifies(secret, r)).isTrue());

      assertThat(failure(() -> admin.replayWebhookDelivery("java-ci", succeeded.getId())))
          .as("replaying a delivered delivery")
          .isEqualTo(409);
      long unknown =
          log.get(0).stream().mapToLong(WebhookDelivery::getId).max().orElseThrow() + 1_000_000;
      assertThat(failure(() -> admin.replayWebhookDelivery("java-ci", unknown)))
          .as("replaying a delivery the endpoint does not have")
          .isEqualTo(404);

      assertThat(admin.deleteWebhookWithHttpInfo("java-ci").getStatusCode()).isEqualTo(204);
      assertThat(failure(() -> admin.getWebhook("java-ci"))).isEqualTo(404);
      assertThat(admin.listWebhooks().getWebhooks()).isEmpty();
    }
  }

  @Test
  void a_dead_delivery_replayed_answers_202_then_409_and_is_delivered() throws Exception {
    AtomicBoolean up = new AtomicBoolean();
    try (WebhookReceiver receiver = new WebhookReceiver(n -> up.get() ? 200 : 503)) {
      long id =
          ClientTestServer.deadDelivery(server, "java-replay", receiver.url("/hook"), "java-ada");
      assertThat(deliveries("java-replay"))
          .singleElement()
          .satisfies(d -> assertThat(d.getStatus()).isEqualTo(WebhookDelivery.StatusEnum.DEAD))
          .satisfies(d -> assertThat(d.getLastStatus()).isEqualTo(503));
      up.set(true);

      ApiResponse<WebhookReplay> replayed =
          admin.replayWebhookDeliveryWithHttpInfo("java-replay", id);
      assertThat(replayed.getStatusCode()).isEqualTo(202);
      assertThat(replayed.getData().getId()).isEqualTo(id);
      assertThat(replayed.getData().getStatus()).isEqualTo(WebhookReplay.StatusEnum.PENDING);
      assertThat(failure(() -> admin.replayWebhookDelivery("java-replay", id)))
          .as("a second replay: no longer dead")
          .isEqualTo(409);
      Await.until(
          "the replayed delivery delivered",
          TestServer.JOB_TIMEOUT,
          () ->
              deliveries("java-replay").get(0).getStatus() == WebhookDelivery.StatusEnum.DELIVERED);
    }
  }

  /** The endpoint's delivery log, newest first. */
  private List<WebhookDelivery> deliveries(String endpoint) {
    try {
      return admin.listWebhookDeliveries(endpoint, null, 200, null).getDeliveries();
    } catch (ApiException e) {
      throw new AssertionError("GET /webhooks/" + endpoint + "/deliveries: " + e.getCode(), e);
    }
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }

  /** The status a call that must fail answers. */
  private static int failure(ThrowingCall call) {
    try {
      call.run();
    } catch (ApiException e) {
      return e.getCode();
    }
    throw new AssertionError("the call succeeded");
  }

  @FunctionalInterface
  private interface ThrowingCall {
    void run() throws ApiException;
  }

  @FunctionalInterface
  private interface Paused<T> {
    T run() throws ApiException;
  }

  /**
   * Runs {@code body} with the shared lane paused, so the jobs it submits stay queued in the order
   * it checks, and resumes the lane however it ends.
   */
  private <T> T whilePaused(Paused<T> body) throws ApiException {
    assertThat(admin.setLane(SHARED, new SetLane().paused(true)).getPaused()).isTrue();
    try {
      return body.run();
    } finally {
      assertThat(admin.setLane(SHARED, new SetLane().paused(false)).getPaused()).isFalse();
    }
  }

  private Lane shared() throws ApiException {
    return admin.listLanes(200, null).getLanes().stream()
        .filter(l -> l.getLane().equals(SHARED))
        .findFirst()
        .orElseThrow(() -> new AssertionError("GET /lanes has no " + SHARED));
  }

  private List<Long> queuedInLane() throws ApiException {
    return shared().getQueuedJobs().stream().map(QueuedJob::getId).toList();
  }

  private long submit(ChosenPriority priority) throws ApiException {
    Job j = jobs.submitJob(new SubmitJob().kind("demo").payload(QUICK).priority(priority), null);
    assertThat(j.getPriority().getValue())
        .isEqualTo(priority == null ? "normal" : priority.getValue());
    return j.getId();
  }

  private int position(long id) throws ApiException {
    return jobs.getJob(id).getPosition();
  }

  private static void assertPositive(Cost cost) {
    assertThat(cost.getBilledSeconds()).isPositive();
    assertThat(cost.getVcpuSeconds()).isPositive();
    assertThat(cost.getGbSeconds()).isPositive();
    assertThat(cost.getUsd()).isGreaterThanOrEqualTo(BigDecimal.ZERO);
    assertThat(cost.getCapacity()).isNotNull();
  }

  private Job awaitFinished(long id) {
    return await(
        id,
        j ->
            Set.of(JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
                .contains(j.getStatus()),
        "finish");
  }

  private Job await(long id, Predicate<Job> done, String what) {
    Job[] last = new Job[1];
    Await.until(
        "job " + id + " to " + what,
        TestServer.JOB_TIMEOUT,
        () -> {
          try {
            last[0] = jobs.getJob(id);
          } catch (ApiException e) {
            throw new AssertionError("GET /jobs/" + id + ": " + e.getCode(), e);
          }
          return done.test(last[0]);
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
