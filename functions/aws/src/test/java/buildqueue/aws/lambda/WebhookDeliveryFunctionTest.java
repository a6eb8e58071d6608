package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.fake.LambdaFake;
import buildqueue.aws.testing.MetricsCapture;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.testing.TestContext;
import buildqueue.aws.webhooks.WebhookDeliveryStarter;
import buildqueue.core.JobStatus;
import buildqueue.core.WebhookDeliveries;
import buildqueue.core.WebhookEndpoints;
import buildqueue.core.WebhookHttp;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.WebhookReceiver;
import buildqueue.testing.WebhookReceiver.Received;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Webhooks on AWS end to end (docs/architecture.md §4.11), on the Data API fake: the tick starts
 * the delivery function with an asynchronous Invoke (on the Lambda fake) only when its survey finds
 * deliveries due, and the function, given the event the tick sent, delivers them signed to a
 * receiver that checks each signature with the Standard Webhooks algorithm, written here from the
 * spec. A failed request is retried on the pass a later tick starts; the production wiring refuses
 * a private target; a start that fails costs the tick nothing.
 */
@ExtendWith(PostgresExtension.class)
class WebhookDeliveryFunctionTest {
  private static final Map<String, Object> SCHEDULE = TickFunctionTest.event("schedule-tick.json");
  private static final String FUNCTION = "bq-webhooks";
  private static final String SECRET =
      "whsec_" + Base64.getEncoder().encodeToString("a secret of 24 or more bytes".getBytes());
  private static final ObjectMapper JSON = new ObjectMapper();

  private LambdaFake lambda;

  @BeforeEach
  void start() {
    lambda = LambdaFake.start().function(FUNCTION, "live");
  }

  @AfterEach
  void stop() {
    lambda.close();
  }

  /** A tick's world on the Data API fake whose tick starts deliveries on the Lambda fake. */
  private QueueWorld world(TestDatabase tdb) {
    QueueWorld w = new QueueWorld("dataapi", tdb, Component.TICK);
    w.services.withWebhookStarter(
        WebhookDeliveryStarter.create(
            LambdaFake.REGION,
            LambdaFake.arn(FUNCTION, "live"),
            lambda.endpoint(),
            LambdaFake.credentials()));
    return w;
  }

  /**
   * The delivery function on the world's database and clock; the receiver is on the loopback, so
   * its transport allows private targets (the production one does not: see below).
   */
  private static WebhookDeliveryFunction function(QueueWorld w, MetricsCapture metrics) {
    WebhookServices services =
        new WebhookServices(
            w.services.db(),
            new WebhookDeliveries(w.services.db(), w.clock, new WebhookHttp(true)),
            "buildqueue-test",
            metrics);
    return new WebhookDeliveryFunction(() -> services);
  }

  /** Runs the function as Lambda would on the event the tick queued; answers its report. */
  private static String deliver(WebhookDeliveryFunction f, LambdaFake.Invocation invocation)
      throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    f.handleRequest(
        new ByteArrayInputStream(invocation.payload()),
        out,
        TestContext.withTimeLeft(Duration.ofSeconds(90)));
    return SampleEvents.asLambdaEvent(out.toByteArray(), String.class);
  }

  private static String tick(QueueWorld w) {
    return new TickFunction(() -> w.services)
        .handleRequest(SCHEDULE, TestContext.withTimeLeft(Duration.ofSeconds(55)));
  }

  private static void register(QueueWorld w, String url) {
    w.services
        .queue()
        .webhooks()
        .save("ci", new WebhookEndpoints.Change(url, null, null, List.of(SECRET), false))
        .orElseThrow();
  }

  /** Submits a job for alice and runs it to success on its worker, which then stops. */
  private static long succeed(QueueWorld w) {
    long job = w.submit("alice");
    WorkerLaunch launch = w.lastLaunch();
    w.workers.start(launch.workerId(), launch.token()).orElseThrow();
    w.workers.end(launch.workerId(), launch.token(), job, JobStatus.SUCCEEDED, null);
    w.services
        .queue()
        .taskStopped(
            ManualPlatform.taskIdOf(launch.workerId()), launch.workerId(), launch.token(), "done");
    return job;
  }

  private static List<Long> eventIds(QueueWorld w, long job) {
    return w
        .tdb
        .jdbc()
        .query(
            "select id from build_job_event where job_id = :job order by id", Params.of("job", job))
        .stream()
        .map(r -> r.longValue("id"))
        .toList();
  }

  private static List<Row> deliveries(QueueWorld w) {
    return w.tdb.jdbc().query("select * from build_webhook_delivery order by event_id");
  }

  // The Standard Webhooks check (standardwebhooks.com), from the spec: the signed content is
  // "<webhook-id>.<webhook-timestamp>.<body>", the key the base64 after "whsec_", the header
  // space-separated "v1,<base64 HMAC-SHA256>"; a timestamp over 5 minutes from the receiver's
  // clock is refused.
  private static boolean verifies(String secret, Received r) throws Exception {
    String id = r.header("webhook-id");
    String timestamp = r.header("webhook-timestamp");
    String signatures = r.header("webhook-signature");
    if (id == null || timestamp == null || signatures == null) {
      return false;
    }
    if (Math.abs(Instant.now().getEpochSecond() - Long.parseLong(timestamp)) > 300) {
      return false;
    }
    Mac hmac = Mac.getInstance("HmacSHA256");
    hmac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.split("_", 2)[1]), "HmacSHA256"));
    byte[] expected =
        hmac.doFinal((id + "." + timestamp + "." + r.bodyText()).getBytes(StandardCharsets.UTF_8));
    for (String signature : signatures.split(" ")) {
      String[] parts = signature.split(",", 2);
      if (parts.length == 2
          && parts[0].equals("v1")
          && MessageDigest.isEqual(Base64.getDecoder().decode(parts[1]), expected)) {
        return true;
      }
    }
    return false;
  }

  @Test
  void a_tick_with_deliveries_due_starts_one_pass_that_delivers_every_event_signed_and_in_order(
      TestDatabase tdb) throws Exception {
    MetricsCapture metrics = new MetricsCapture();
    try (QueueWorld w = world(tdb);
        WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      // No endpoint: a job's events owe nothing, and the tick starts no pass.
      succeed(w);
      tick(w);
      assertThat(lambda.invocations()).isEmpty();

      register(w, receiver.url("/hook"));
      long job = succeed(w);
      assertThat(deliveries(w)).hasSize(eventIds(w, job).size()).isNotEmpty();

      tick(w);

      assertThat(lambda.invocations(FUNCTION))
          .singleElement()
          .satisfies(
              i -> {
                assertThat(i.type()).isEqualTo("Event");
                assertThat(i.qualifier()).isEqualTo("live");
                assertThat(JSON.readTree(i.payload()).get("startedBy").asText()).isEqualTo("tick");
              });
      assertThat(w.metrics.last("tick").get("WebhookPassesStarted").asLong()).isEqualTo(1);
      assertThat(receiver.received()).as("the tick itself delivers nothing").isEmpty();

      String report = deliver(function(w, metrics), lambda.invocations().get(0));

      List<Received> got = receiver.received();
      assertThat(got)
          .extracting(r -> Long.parseLong(r.header("webhook-id")))
          .as("every event of the job, once, in order")
          .isEqualTo(eventIds(w, job));
      for (Received r : got) {
        assertThat(verifies(SECRET, r)).as(r.toString()).isTrue();
        assertThat(JSON.readTree(r.body()).get("data").get("jobId").asLong()).isEqualTo(job);
      }
      assertThat(deliveries(w))
          .allSatisfy(d -> assertThat(d.string("status")).isEqualTo("delivered"));
      assertThat(report).contains("delivered=" + got.size());
      JsonNode line = metrics.last("webhook-delivery");
      assertThat(line.get("WebhooksDelivered").asLong()).isEqualTo(got.size());
      assertThat(line.get("WebhooksDead").asLong()).isZero();
      assertThat(line.get("startedBy").asText()).isEqualTo("tick");

      // Nothing is due now: the next tick starts no pass.
      tick(w);
      assertThat(lambda.invocations()).hasSize(1);
    }
  }

  @Test
  void a_delivery_refused_once_is_sent_again_by_the_pass_a_later_tick_starts(TestDatabase tdb)
      throws Exception {
    MetricsCapture metrics = new MetricsCapture();
    try (QueueWorld w = world(tdb);
        WebhookReceiver receiver = new WebhookReceiver(n -> n == 0 ? 500 : 200)) {
      register(w, receiver.url("/hook"));
      long job = succeed(w);
      WebhookDeliveryFunction f = function(w, metrics);

      tick(w);
      deliver(f, lambda.invocations().get(0));
      // The first event was refused; the job's later events wait behind it.
      assertThat(receiver.received()).hasSize(1);
      tick(w);
      assertThat(lambda.invocations()).as("not due until its backoff is over").hasSize(1);

      w.clock.advance(WebhookDeliveries.FIRST_BACKOFF);
      tick(w);
      assertThat(lambda.invocations()).hasSize(2);
      deliver(f, lambda.invocations().get(1));

      List<Long> ids = eventIds(w, job);
      assertThat(receiver.received())
          .extracting(r -> Long.parseLong(r.header("webhook-id")))
          .first()
          .isEqualTo(ids.get(0));
      assertThat(receiver.received().subList(1, receiver.received().size()))
          .extracting(r -> Long.parseLong(r.header("webhook-id")))
          .isEqualTo(ids);
      assertThat(deliveries(w))
          .allSatisfy(d -> assertThat(d.string("status")).isEqualTo("delivered"))
          .first()
          .satisfies(d -> assertThat(d.intValue("attempts")).isEqualTo(2));
    }
  }

  @Test
  void the_production_wiring_refuses_a_private_target_before_sending_a_byte(TestDatabase tdb)
      throws Exception {
    MetricsCapture metrics = new MetricsCapture();
    try (QueueWorld w = world(tdb);
        WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      register(w, receiver.url("/hook"));
      succeed(w);
      // Due by the database's clock, which the production deliverer reads.
      w.tdb.jdbc().update("update build_webhook_delivery set next_attempt_at = now()");
      WebhookServices production =
          AwsServices.webhookServices(w.services.db(), "buildqueue-test", metrics);

      new WebhookDeliveryFunction(() -> production)
          .handleRequest(
              new ByteArrayInputStream("{}".getBytes(StandardCharsets.UTF_8)),
              new ByteArrayOutputStream(),
              TestContext.withTimeLeft(Duration.ofSeconds(90)));

      assertThat(receiver.received()).isEmpty();
      assertThat(deliveries(w))
          .first()
          .satisfies(
              d -> {
                assertThat(d.string("status")).isEqualTo("pending");
                assertThat(d.string("last_error")).containsIgnoringCase("private");
              });
    }
  }

  @Test
  void a_start_that_lambda_refuses_or_fails_costs_the_tick_nothing_and_the_next_tick_starts_one(
      TestDatabase tdb) {
    try (QueueWorld w = world(tdb);
        WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      register(w, receiver.url("/hook"));
      succeed(w);
      lambda.failNext(10); // every try of the SDK's

      String failed = tick(w);

      assertThat(failed).startsWith("TickReport[");
      assertThat(lambda.invocations()).isEmpty();
      assertThat(w.metrics.last("tick").has("WebhookPassesStarted")).isFalse();

      lambda.failNext(0);
      tick(w);
      assertThat(lambda.invocations()).hasSize(1);

      // A function that is not there (a stack deleted under it): Lambda's 404, logged.
      w.services.withWebhookStarter(
          WebhookDeliveryStarter.create(
              LambdaFake.REGION,
              LambdaFake.arn("gone", "live"),
              lambda.endpoint(),
              LambdaFake.credentials()));
      assertThat(tick(w)).startsWith("TickReport[");
      assertThat(lambda.invocations()).hasSize(1);
    }
  }

  @Test
  void a_pass_works_for_what_the_functions_timeout_leaves_less_a_batch_at_its_worst() {
    assertThat(WebhookDeliveryFunction.WORST_BATCH).isEqualTo(Duration.ofSeconds(40));
    assertThat(WebhookDeliveryFunction.budget(TestContext.withTimeLeft(Duration.ofSeconds(90))))
        .isBetween(Duration.ofSeconds(39), Duration.ofSeconds(40));
    assertThat(WebhookDeliveryFunction.budget(TestContext.withTimeLeft(Duration.ofMinutes(15))))
        .isEqualTo(WebhookDeliveryFunction.MAX_BUDGET);
    assertThat(WebhookDeliveryFunction.budget(TestContext.withTimeLeft(Duration.ofSeconds(30))))
        .isZero();
  }
}
