package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.WebhookDeliveries;
import buildqueue.core.WebhookHttp;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * Delivers webhooks on AWS (docs/architecture.md §4.11): one pass of {@link
 * WebhookDeliveries#deliverDue}, claiming due deliveries, posting them signed, recording the
 * outcomes, until nothing is due or its budget is spent. The tick invokes it asynchronously when
 * its survey finds deliveries due, so an idle stack, or one without an endpoint, never runs it. It
 * runs outside any VPC (template.yaml gives it no VpcConfig): it reaches the database through the
 * Data API and the endpoints over the internet, and the deliverer refuses private, loopback and
 * link-local targets before sending a byte ({@link WebhookHttp}).
 *
 * <p>The budget is the function's remaining time less {@link #RESERVE}: the deliverer checks it
 * before each claim, and a batch claimed just before the end may still take {@link #WORST_BATCH}
 * (every request of it at its timeout), so the pass ends well inside the function's timeout and
 * records every outcome it sent. A pass cut off anyway (a DNS answer that hangs) leaves its claims
 * to run out; they are sent again, which at least once allows.
 *
 * <p>A database failure fails the invocation; the tick's next survey finds the deliveries still due
 * and starts another pass. The event is read as plain JSON for its {@code startedBy} and {@code
 * eventId}, which go on the metrics line; nothing else of it matters.
 */
public final class WebhookDeliveryFunction implements RequestStreamHandler {
  private static final System.Logger LOG =
      System.getLogger(WebhookDeliveryFunction.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * The longest a batch claimed at the budget's end can take: {@link WebhookDeliveries#BATCH}
   * requests, {@link WebhookDeliveries#PARALLEL} at once, each at most {@link WebhookHttp#TIMEOUT}.
   */
  public static final Duration WORST_BATCH =
      WebhookHttp.TIMEOUT.multipliedBy(
          (WebhookDeliveries.BATCH + WebhookDeliveries.PARALLEL - 1) / WebhookDeliveries.PARALLEL);

  /** Kept back from the deadline: a batch at its worst, its record and the metrics line. */
  public static final Duration RESERVE = WORST_BATCH.plusSeconds(10);

  /** The most one pass runs, whatever the timeout leaves: a tick a minute starts the next. */
  public static final Duration MAX_BUDGET = Duration.ofSeconds(60);

  /** An event as the tick sends it, for priming. */
  private static final byte[] SAMPLE_EVENT =
      "{\"startedBy\": \"tick\", \"eventId\": \"00000000-0000-0000-0000-000000000000\"}"
          .getBytes(StandardCharsets.UTF_8);

  private static final Lazy<WebhookServices> SERVICES =
      Lazy.of(() -> AwsServices.webhookServices(Component.WEBHOOK_DELIVERY));

  private final Supplier<WebhookServices> services;

  public WebhookDeliveryFunction() {
    this(SERVICES);
    LambdaLogging.install(Component.WEBHOOK_DELIVERY);
    Priming.register("WebhookDeliveryFunction", () -> prime(SERVICES.get()));
  }

  public WebhookDeliveryFunction(Supplier<WebhookServices> services) {
    this.services = services;
  }

  /**
   * SnapStart priming ({@link Priming}): the services, the classes a first pass needs, the local
   * code on a sample event, and the Data API calls rehearsed; no statement and no request to an
   * endpoint.
   */
  static void prime(WebhookServices s) {
    Priming.loadClasses();
    java.io.PrintStream nowhere =
        new java.io.PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8);
    for (int round = 0; round < Priming.ROUNDS; round++) {
      JsonNode event = read(SAMPLE_EVENT);
      Metrics m = s.newMetrics().property("primed", true);
      properties(event, m);
      record(new WebhookDeliveries.Pass(0, 0, 0), m);
      m.flush(nowhere);
      writeReport("primed", OutputStream.nullOutputStream());
      budget(null);
    }
    Priming.rehearse(Rehearsal::dataApi);
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context)
      throws IOException {
    JsonNode event = read(input.readAllBytes());
    WebhookServices s = services.get();
    Metrics metrics = s.newMetrics();
    properties(event, metrics);
    try {
      WebhookDeliveries.Pass pass = s.deliveries().deliverDue(budget(context));
      LOG.log(
          pass.dead() > 0 ? Level.WARNING : Level.INFO,
          "webhook deliveries: {0} sent, {1} delivered, {2} dead",
          pass.attempts(),
          pass.delivered(),
          pass.dead());
      record(pass, metrics);
      writeReport(pass.toString(), output);
    } finally {
      metrics.flush(s.metricsOut());
    }
  }

  /**
   * What the pass may spend: the remaining time less {@link #RESERVE}, at most {@link #MAX_BUDGET}.
   */
  public static Duration budget(Context context) {
    Duration left =
        context == null
            ? MAX_BUDGET.plus(RESERVE)
            : Duration.ofMillis(context.getRemainingTimeInMillis());
    Duration budget = left.minus(RESERVE);
    if (budget.isNegative()) {
      return Duration.ZERO;
    }
    return budget.compareTo(MAX_BUDGET) > 0 ? MAX_BUDGET : budget;
  }

  private static JsonNode read(byte[] event) {
    try {
      JsonNode tree = JSON.readTree(event);
      return tree == null ? JSON.nullNode() : tree;
    } catch (IOException e) {
      return JSON.nullNode(); // an event that is not JSON still delivers: the database says what
    }
  }

  private static void properties(JsonNode event, Metrics metrics) {
    if (event.path("startedBy").isTextual()) {
      metrics.property("startedBy", event.get("startedBy").asText());
    }
    if (event.path("eventId").isTextual()) {
      metrics.property("scheduleEventId", event.get("eventId").asText());
    }
  }

  private static void record(WebhookDeliveries.Pass pass, Metrics metrics) {
    metrics.count(Metrics.WEBHOOK_ATTEMPTS, pass.attempts());
    metrics.count(Metrics.WEBHOOKS_DELIVERED, pass.delivered());
    metrics.count(Metrics.WEBHOOKS_DEAD, pass.dead());
  }

  /** The report as the runtime writes a handler's string: a JSON string. */
  private static void writeReport(String report, OutputStream output) {
    try {
      JSON.writeValue(output, report);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
