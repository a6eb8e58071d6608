package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.assertProblem;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobStatus;
import buildqueue.core.OutboxTransitions;
import buildqueue.core.WebhookDeliveries;
import buildqueue.core.WebhookHttp;
import buildqueue.db.Params;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.WebhookReceiver;
import buildqueue.testing.WebhookReceiver.Received;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md "Webhooks" and "Trace context" over HTTP: endpoints (admins), deliveries
 * from the outbox verified by a receiver that checks signatures with the Standard Webhooks
 * algorithm written here from the spec (not with our signer), retries with backoff on the queue's
 * clock, order per job, dead deliveries and their replay, secrets kept out of logs and answers, and
 * the job's traceparent in its events.
 */
class WebhooksApiTest extends ApiTest {
  private static final String SECRET_A = "whsec_" + b64("first secret of 24+ bytes!!");
  private static final String SECRET_B = "whsec_" + b64("second secret, also 24+ bytes");
  private static final String TRACEPARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @Override
  ApiFixture fixture(TestDatabase tdb) {
    return new ApiFixture(tdb, QueueHarness.testConfig(), true);
  }

  private static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  // --- The Standard Webhooks receiver's check, from the spec (standardwebhooks.com): the signed
  // content is "<webhook-id>.<webhook-timestamp>.<body>"; the key is the base64 after "whsec_";
  // the header holds space-separated "v1,<base64 HMAC-SHA256>"; a timestamp more than 5 minutes
  // from the receiver's clock is refused.
  static boolean verifies(String secret, Received r) throws Exception {
    String id = r.header("webhook-id");
    String timestamp = r.header("webhook-timestamp");
    String signatures = r.header("webhook-signature");
    if (id == null || timestamp == null || signatures == null) {
      return false;
    }
    long skew = Math.abs(Instant.now().getEpochSecond() - Long.parseLong(timestamp));
    if (skew > 300) {
      return false;
    }
    Mac hmac = Mac.getInstance("HmacSHA256");
    hmac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.split("_", 2)[1]), "HmacSHA256"));
    byte[] expected =
        hmac.doFinal((id + "." + timestamp + "." + r.bodyText()).getBytes(StandardCharsets.UTF_8));
    for (String sig : signatures.split(" ")) {
      String[] parts = sig.split(",", 2);
      if (parts.length == 2
          && parts[0].equals("v1")
          && MessageDigest.isEqual(Base64.getDecoder().decode(parts[1]), expected)) {
        return true;
      }
    }
    return false;
  }

  private WebhookDeliveries deliverer() {
    return new WebhookDeliveries(f.h.db, f.h.clock, new WebhookHttp(true));
  }

  /** What the outbox's publisher does: every pending event is sent and settled published. */
  private void publishAll() {
    OutboxTransitions outbox = new OutboxTransitions(f.h.db, f.h.clock);
    List<Long> ids;
    do {
      ids =
          outbox.claimPending(OutboxTransitions.MAX_CLAIM).stream()
              .map(OutboxTransitions.PendingEvent::id)
              .toList();
      outbox.settle(ids, List.of());
    } while (!ids.isEmpty());
  }

  /**
   * Submits a job of {@code caller} and runs it to success on the worker its submission launched.
   */
  private long succeed(Caller caller) {
    long id = f.submit(caller, "noop", "{}");
    WorkerLaunch w = f.h.manual.lastLaunch();
    f.h.workers.start(w.workerId(), w.token()).orElseThrow();
    f.h.workers.end(w.workerId(), w.token(), id, JobStatus.SUCCEEDED, null);
    f.h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited");
    return id;
  }

  private List<Long> eventIds(long jobId) {
    return f
        .h
        .testDb
        .jdbc()
        .query(
            "select id from build_job_event where job_id = :job order by id",
            Params.of("job", jobId))
        .stream()
        .map(r -> r.longValue("id"))
        .toList();
  }

  private ApiResponse register(String name, String body) {
    return f.put("/webhooks/" + name, body, ADMIN);
  }

  @Test
  void an_admin_registers_an_endpoint_and_afterwards_sees_only_fingerprints_of_its_secret() {
    ApiResponse made = register("ci", "{\"url\": \"https://ci.example.com/hook\"}");
    assertThat(made.status()).as(made.bodyText()).isEqualTo(201);
    JsonNode endpoint = json(made);
    String secret = endpoint.get("secret").asText();
    assertThat(secret).startsWith("whsec_");
    assertThat(endpoint.get("userId").isNull()).isTrue();
    assertThat(endpoint.get("eventTypes").isNull()).isTrue();
    assertThat(endpoint.get("secretFingerprints")).hasSize(1);

    ApiResponse listed = f.get("/webhooks", ADMIN);
    assertThat(listed.bodyText()).doesNotContain(secret).contains("sha256:");
    assertThat(f.get("/webhooks/ci", ADMIN).bodyText()).doesNotContain(secret);
    // Replaced without secrets: the secret is kept and not shown again.
    ApiResponse replaced =
        register("ci", "{\"url\": \"https://ci.example.com/v2\", \"eventTypes\": [\"failed\"]}");
    assertThat(replaced.status()).isEqualTo(200);
    assertThat(json(replaced).has("secret")).isFalse();
    assertThat(json(replaced).get("secretFingerprints"))
        .isEqualTo(endpoint.get("secretFingerprints"));

    assertThat(f.call("DELETE", "/webhooks/ci", Map.of(), new byte[0], ADMIN).status())
        .isEqualTo(204);
    assertProblem(f.get("/webhooks/ci", ADMIN), 404, "/webhooks/ci");
  }

  @Test
  void users_and_read_only_admins_may_not_change_endpoints() {
    String body = "{\"url\": \"https://ci.example.com/hook\"}";
    assertProblem(f.put("/webhooks/ci", body, ALICE), 403, "/webhooks/ci");
    assertProblem(f.get("/webhooks", ALICE), 403, "/webhooks");
    Caller reader = Caller.readOnlyAdmin("auditor");
    assertProblem(f.put("/webhooks/ci", body, reader), 403, "/webhooks/ci");
    assertThat(register("ci", body).status()).isEqualTo(201);
    assertThat(f.get("/webhooks", reader).status()).isEqualTo(200);
    assertThat(f.get("/webhooks/ci/deliveries", reader).status()).isEqualTo(200);
    assertProblem(
        f.call("DELETE", "/webhooks/ci", Map.of(), new byte[0], reader), 403, "/webhooks/ci");
  }

  @Test
  void bad_fields_are_400_and_write_nothing_and_a_bad_secret_is_never_repeated() {
    String leaked = "whsec_" + b64("short");
    Map<String, String> bad = new LinkedHashMap<>();
    bad.put("{}", "\"url\" is missing");
    bad.put("{\"url\": \"ftp://x.example.com/\"}", "http or https");
    bad.put("{\"url\": \"https://user:pw@x.example.com/\"}", "user information");
    bad.put("{\"url\": \"/relative\"}", "http or https");
    bad.put("{\"url\": \"https://x.example.com/\", \"eventTypes\": []}", "eventTypes");
    bad.put("{\"url\": \"https://x.example.com/\", \"eventTypes\": [\"Bad Type\"]}", "eventTypes");
    bad.put(
        "{\"url\": \"https://x.example.com/\", \"secrets\": [\"" + leaked + "\"]}", "secrets[0]");
    bad.put(
        "{\"url\": \"https://x.example.com/\", \"secrets\": [\"a\", \"b\", \"c\"]}", "one or two");
    bad.put(
        "{\"url\": \"https://x.example.com/\", \"secrets\": [\""
            + SECRET_A
            + "\"], \"rotateSecret\": true}",
        "not both");
    bad.put("{\"url\": \"https://x.example.com/\", \"extra\": 1}", "extra");
    for (var e : bad.entrySet()) {
      ApiResponse r = register("ci", e.getKey());
      JsonNode p = assertProblem(r, 400, "/webhooks/ci");
      assertThat(p.get("detail").asText()).as(e.getKey()).contains(e.getValue());
      assertThat(r.bodyText()).doesNotContain(leaked).doesNotContain(SECRET_A);
    }
    assertProblem(
        register("Not_A_Name", "{\"url\": \"https://x.example.com/\"}"),
        404,
        "/webhooks/Not_A_Name");
    assertThat(json(f.get("/webhooks", ADMIN)).get("webhooks")).isEmpty();
  }

  @Test
  void every_delivery_verifies_with_the_standard_webhooks_algorithm_under_either_rotated_secret()
      throws Exception {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      register(
          "ci",
          "{\"url\": \"" + receiver.url("/hook") + "\", \"secrets\": [\"" + SECRET_A + "\"]}");
      long job = succeed(ALICE);
      publishAll();
      deliverer().deliverDue(Duration.ofSeconds(30));

      List<Received> got = receiver.received();
      assertThat(got).hasSize(eventIds(job).size());
      for (Received r : got) {
        assertThat(verifies(SECRET_A, r)).as(r.toString()).isTrue();
        assertThat(verifies(SECRET_B, r)).isFalse();
        JsonNode body = new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body());
        assertThat(body.get("type").asText()).startsWith("job.");
        assertThat(body.get("data").get("jobId").asLong()).isEqualTo(job);
        assertThat(r.header("webhook-id"))
            .isEqualTo(String.valueOf(body.get("data").get("eventId").asLong()));
      }
      // A rotation: a new secret is made, the old one still signs; then only the given one.
      ApiResponse rotated =
          register("ci", "{\"url\": \"" + receiver.url("/hook") + "\", \"rotateSecret\": true}");
      String fresh = json(rotated).get("secret").asText();
      assertThat(json(rotated).get("secretFingerprints")).hasSize(2);
      long second = succeed(BOB);
      publishAll();
      deliverer().deliverDue(Duration.ofSeconds(30));
      List<Received> after = receiver.received().subList(got.size(), receiver.received().size());
      assertThat(after).hasSize(eventIds(second).size());
      for (Received r : after) {
        assertThat(r.header("webhook-signature").split(" ")).hasSize(2);
        assertThat(verifies(SECRET_A, r)).isTrue();
        assertThat(verifies(fresh, r)).isTrue();
      }
    }
  }

  @Test
  void a_receiver_that_answers_500_five_times_gets_every_event_once_acknowledged_in_order_per_job()
      throws Exception {
    try (WebhookReceiver receiver = new WebhookReceiver(n -> n < 5 ? 500 : 200)) {
      register(
          "ci",
          "{\"url\": \"" + receiver.url("/hook") + "\", \"secrets\": [\"" + SECRET_A + "\"]}");
      long a = succeed(ALICE);
      long b = succeed(BOB);
      long c = f.submit(ALICE, "noop", "{}");
      WebhookDeliveries deliverer = deliverer();
      int passes = 0;
      while (pending() > 0 || passes == 0) {
        publishAll();
        deliverer.deliverDue(Duration.ofSeconds(30));
        // The backoff runs on the queue's clock: an hour covers any retry before the bound.
        f.h.clock.advance(Duration.ofHours(1));
        assertThat(++passes).as("passes").isLessThan(20);
      }
      List<Received> got = receiver.received();
      assertThat(got.stream().filter(r -> r.answered() == 500)).hasSize(5);
      Map<Long, List<Long>> acknowledged = new LinkedHashMap<>();
      for (Received r : got) {
        assertThat(verifies(SECRET_A, r)).isTrue();
        if (r.answered() == 200) {
          JsonNode data =
              new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body()).get("data");
          acknowledged
              .computeIfAbsent(data.get("jobId").asLong(), k -> new ArrayList<>())
              .add(data.get("eventId").asLong());
        }
      }
      // Every event once, each job's in the order of its history.
      assertThat(acknowledged.get(a)).isEqualTo(eventIds(a));
      assertThat(acknowledged.get(b)).isEqualTo(eventIds(b));
      assertThat(acknowledged.get(c)).isEqualTo(eventIds(c));
      JsonNode log = json(f.get("/webhooks/ci/deliveries?status=delivered&limit=200", ADMIN));
      assertThat(log.get("deliveries"))
          .hasSize(eventIds(a).size() + eventIds(b).size() + eventIds(c).size());
    }
  }

  private long pending() {
    return f.h
        .testDb
        .jdbc()
        .query(
            "select count(*) as n from build_webhook_delivery where status = 'pending'",
            Params.none())
        .get(0)
        .longValue("n");
  }

  @Test
  void a_delivery_never_acknowledged_dies_after_its_bound_and_a_replay_delivers_it() {
    boolean[] up = {false};
    try (WebhookReceiver receiver = new WebhookReceiver(n -> up[0] ? 204 : 503)) {
      register(
          "ci",
          "{\"url\": \""
              + receiver.url("/hook")
              + "\", \"eventTypes\": [\"enqueued\"], \"secrets\": [\""
              + SECRET_A
              + "\"]}");
      long job = f.submit(ALICE, "noop", "{}");
      publishAll();
      WebhookDeliveries deliverer = deliverer();
      for (int i = 0; i < 40 && pending() > 0; i++) {
        deliverer.deliverDue(Duration.ofSeconds(30));
        f.h.clock.advance(Duration.ofHours(1));
      }
      JsonNode log = json(f.get("/webhooks/ci/deliveries", ADMIN)).get("deliveries");
      assertThat(log).hasSize(1);
      JsonNode dead = log.get(0);
      assertThat(dead.get("status").asText()).isEqualTo("dead");
      assertThat(dead.get("jobId").asLong()).isEqualTo(job);
      assertThat(dead.get("lastStatus").asInt()).isEqualTo(503);
      assertThat(dead.get("lastError").asText()).contains("503");
      assertThat(dead.get("nextAttemptAt").isNull()).isTrue();
      // Tried with doubling waits for 24 hours from the first attempt, then given up.
      assertThat(
              Duration.between(
                  Instant.parse(dead.get("firstAttemptAt").asText()),
                  Instant.parse(dead.get("lastAttemptAt").asText())))
          .isLessThanOrEqualTo(WebhookDeliveries.MAX_AGE);
      assertThat(dead.get("attempts").asInt()).isBetween(10, 40);

      long id = dead.get("id").asLong();
      up[0] = true;
      ApiResponse replayed = f.post("/webhooks/ci/deliveries/" + id + "/replay", "", ADMIN);
      assertThat(replayed.status()).as(replayed.bodyText()).isEqualTo(202);
      assertProblem(
          f.post("/webhooks/ci/deliveries/" + id + "/replay", "", ADMIN),
          409,
          "/webhooks/ci/deliveries/" + id + "/replay");
      deliverer.deliverDue(Duration.ofSeconds(30));
      JsonNode after = json(f.get("/webhooks/ci/deliveries", ADMIN)).get("deliveries").get(0);
      assertThat(after.get("status").asText()).isEqualTo("delivered");
      assertProblem(
          f.post("/webhooks/ci/deliveries/999999/replay", "", ADMIN),
          404,
          "/webhooks/ci/deliveries/999999/replay");
    }
  }

  @Test
  void an_endpoint_gets_only_its_users_events_of_its_types() {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      register(
          "alice-ends",
          "{\"url\": \""
              + receiver.url("/hook")
              + "\", \"userId\": \"alice\", \"eventTypes\": [\"succeeded\", \"failed\"]}");
      long mine = succeed(ALICE);
      succeed(BOB);
      publishAll();
      deliverer().deliverDue(Duration.ofSeconds(30));
      assertThat(receiver.received()).hasSize(1);
      assertThat(receiver.received().get(0).bodyText())
          .contains("\"type\":\"job.succeeded\"")
          .contains("\"jobId\":" + mine);
    }
  }

  @Test
  void no_secret_reaches_a_log_line_or_an_answer_but_the_one_that_generated_it() {
    List<String> lines = new ArrayList<>();
    Handler capture =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            synchronized (lines) {
              lines.add(
                  r.getMessage()
                      + " "
                      + java.util.Arrays.toString(r.getParameters())
                      + " "
                      + (r.getThrown() == null ? "" : r.getThrown().toString()));
            }
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    // What production logs: INFO and above (a JDBC driver's FINEST trace prints every parameter).
    capture.setLevel(java.util.logging.Level.INFO);
    Logger root = Logger.getLogger("");
    root.addHandler(capture);
    // The fault tests turn the queue's logger off in the JVM they may share with this one.
    Logger queue = Logger.getLogger("buildqueue");
    java.util.logging.Level was = queue.getLevel();
    queue.setLevel(java.util.logging.Level.INFO);
    List<String> answers = new ArrayList<>();
    String generated;
    try (WebhookReceiver receiver = new WebhookReceiver(n -> 500)) {
      ApiResponse made =
          register(
              "ci",
              "{\"url\": \"" + receiver.url("/hook") + "\", \"secrets\": [\"" + SECRET_A + "\"]}");
      answers.add(made.bodyText());
      ApiResponse rotated =
          register("ci", "{\"url\": \"" + receiver.url("/hook") + "\", \"rotateSecret\": true}");
      generated = json(rotated).get("secret").asText();
      answers.add(
          register("ci", "{\"url\": \"x\", \"secrets\": [\"" + SECRET_B + "x\"]}").bodyText());
      succeed(ALICE);
      publishAll();
      WebhookDeliveries deliverer = deliverer();
      for (int i = 0; i < 40 && pending() > 0; i++) {
        deliverer.deliverDue(Duration.ofSeconds(30));
        f.h.clock.advance(Duration.ofHours(1));
      }
      answers.add(f.get("/webhooks", ADMIN).bodyText());
      answers.add(f.get("/webhooks/ci", ADMIN).bodyText());
      answers.add(f.get("/webhooks/ci/deliveries?limit=200", ADMIN).bodyText());
      assertThat(receiver.received()).isNotEmpty();
    } finally {
      root.removeHandler(capture);
      queue.setLevel(was);
    }
    assertThat(lines).as("the dead deliveries were logged").isNotEmpty();
    for (String secret : List.of(SECRET_A, SECRET_B, generated)) {
      String key = secret.substring("whsec_".length());
      assertThat(lines).noneMatch(l -> l.contains(key));
      assertThat(answers).noneMatch(a -> a.contains(key));
    }
  }

  @Test
  void a_traceparent_is_stored_with_the_job_and_carried_in_its_events_and_webhook_bodies()
      throws Exception {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      register("ci", "{\"url\": \"" + receiver.url("/hook") + "\"}");
      ApiResponse r =
          f.call(
              "POST",
              "/jobs",
              Map.of("Content-Type", "application/json", "traceparent", TRACEPARENT),
              "{\"kind\": \"noop\"}".getBytes(StandardCharsets.UTF_8),
              ALICE);
      assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
      long job = json(r).get("id").asLong();
      assertThat(f.h.job(job).string("traceparent")).isEqualTo(TRACEPARENT);

      List<OutboxTransitions.PendingEvent> claimed =
          new OutboxTransitions(f.h.db, f.h.clock).claimPending(OutboxTransitions.MAX_CLAIM);
      assertThat(claimed).isNotEmpty().allMatch(e -> TRACEPARENT.equals(e.traceparent()));
      f.h.clock.advance(OutboxTransitions.CLAIM.plusSeconds(1));
      publishAll();
      deliverer().deliverDue(Duration.ofSeconds(30));
      assertThat(receiver.received()).isNotEmpty();
      for (Received got : receiver.received()) {
        assertThat(got.bodyText()).contains("\"traceparent\":\"" + TRACEPARENT + "\"");
        // The request to the endpoint joins the trace with a span of its own.
        assertThat(got.header("traceparent"))
            .startsWith("00-4bf92f3577b34da6a3ce929d0e0e4736-")
            .isNotEqualTo(TRACEPARENT);
      }
    }
  }

  @Test
  void a_malformed_traceparent_is_400_naming_it_and_writes_nothing() {
    Map<String, Long> before = f.rowCounts();
    for (String bad :
        List.of(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "garbage")) {
      ApiResponse r =
          f.call(
              "POST",
              "/jobs",
              Map.of("Content-Type", "application/json", "traceparent", bad),
              "{\"kind\": \"noop\"}".getBytes(StandardCharsets.UTF_8),
              ALICE);
      JsonNode p = assertProblem(r, 400, "/jobs");
      assertThat(p.get("detail").asText()).as(bad).contains("traceparent");
    }
    assertThat(f.rowCounts()).isEqualTo(before);
  }
}
