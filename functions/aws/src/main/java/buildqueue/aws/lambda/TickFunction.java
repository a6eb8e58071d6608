package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.metrics.Metrics;
import buildqueue.aws.metrics.QueueGauges;
import buildqueue.core.BuildQueue;
import buildqueue.core.TickBudget;
import buildqueue.core.TickSchedule;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The scheduled pass, once a minute ({@code BuildQueue.tick}): liveness checks, unknown launches,
 * lease reclaim, dispatch, housekeeping; then the job events not yet published, the start of a
 * webhook delivery pass (an asynchronous Invoke of the delivery function, docs/architecture.md
 * §4.11), the files of abandoned attempts (an artifact sweep, §4.10), and the queue's gauges. The
 * tick's first statement says which of these have anything due, and reads the gauges: an idle queue
 * costs that one Data API call, with no outbox claim, sweep, delivery or gauge read of its own. The
 * tick works through everything due within what the function's timeout leaves, less {@link
 * #RESERVE} (the queue holds it to half the launch grace besides), paced to ECS's request rates;
 * what it cannot finish is first in line next minute. Concurrent or overlapping ticks are safe
 * (every claim in the tick skips rows another holds), so a slow tick and a retried one never
 * collide. A database failure fails the invocation; the next tick starts over.
 *
 * <p>The event is read as plain JSON, not bound to {@code ScheduledEvent}: an EventBridge rule
 * sends {@code "detail": {}} but EventBridge Scheduler sends {@code "detail": "{}"} (a string),
 * which the runtime cannot bind to {@code ScheduledEvent}'s map and so fails before the handler
 * runs. The tick reads nothing of the event but its id, for the logs. It reads it from the stream
 * with its own JSON mapper rather than have the runtime bind it: the runtime's serializer is first
 * used on the first event, a cold path priming cannot reach ({@link Priming}). Given {@code
 * ::handleRequest}, the runtime takes the stream overload (it prefers the longer signature); the
 * map overload stays for callers holding the event as the runtime would have bound it.
 */
public final class TickFunction implements RequestStreamHandler {
  private static final System.Logger LOG = System.getLogger(TickFunction.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A scheduled event as a rule sends it, for priming. */
  private static final byte[] SAMPLE_EVENT =
      """
      {"version": "0", "id": "00000000-0000-0000-0000-000000000000", "detail-type": "Scheduled Event",
       "source": "aws.events", "time": "2026-01-01T00:00:00Z", "detail": {}}
      """
          .getBytes(java.nio.charset.StandardCharsets.UTF_8);

  private static final Lazy<QueueServices> SERVICES =
      Lazy.of(() -> AwsServices.queueServices(Component.TICK));

  /**
   * Kept back from the function's deadline for publishing job events, the artifact sweep, starting
   * webhook deliveries, gauges and metrics.
   */
  static final Duration RESERVE = Duration.ofSeconds(10);

  private final Supplier<QueueServices> services;

  public TickFunction() {
    this(SERVICES);
    LambdaLogging.install(Component.TICK);
    Priming.register("TickFunction", () -> prime(SERVICES.get()));
  }

  /** SnapStart priming ({@link Priming}): the services and the classes a first tick needs. */
  static void prime(QueueServices s) {
    Priming.loadClasses();
    s.primeLocally();
    for (int round = 0; round < Priming.ROUNDS; round++) {
      eventId(SAMPLE_EVENT);
      cause(SAMPLE_EVENT);
      writeReport("primed", OutputStream.nullOutputStream());
      TickBudget.of(budget(null)).limit();
    }
    Priming.rehearse(r -> r.dataApi().ecs().eventBridge().lambda());
  }

  public TickFunction(Supplier<QueueServices> services) {
    this.services = services;
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context)
      throws IOException {
    byte[] event = input.readAllBytes();
    writeReport(tick(eventId(event), cause(event), context), output);
  }

  public String handleRequest(Map<String, Object> event, Context context) {
    return tick(
        event != null && event.get("id") instanceof String id ? id : null,
        event != null && Boolean.TRUE.equals(event.get(FALLBACK))
            ? TickSchedule.Cause.FALLBACK
            : TickSchedule.Cause.SCHEDULE,
        context);
  }

  /**
   * The fallback rule's constant input ({@code {"fallback": true}} in template.yaml): the tick it
   * starts turns the minute rule on when it finds work, since an arm may have been lost.
   */
  static final String FALLBACK = "fallback";

  /** Whether the event is the fallback rule's; anything else is the minute rule's. */
  static TickSchedule.Cause cause(byte[] event) {
    try {
      JsonNode tree = JSON.readTree(event);
      return tree != null && tree.path(FALLBACK).asBoolean(false)
          ? TickSchedule.Cause.FALLBACK
          : TickSchedule.Cause.SCHEDULE;
    } catch (IOException e) {
      return TickSchedule.Cause.SCHEDULE;
    }
  }

  /** The event's id, or null: an event that is not JSON still ticks (the schedule fired). */
  static String eventId(byte[] event) {
    try {
      JsonNode tree = JSON.readTree(event);
      JsonNode id = tree == null ? null : tree.get("id");
      return id != null && id.isTextual() ? id.asText() : null;
    } catch (IOException e) {
      return null;
    }
  }

  /** The report as the runtime writes a handler's string: a JSON string. */
  private static void writeReport(String report, OutputStream output) {
    try {
      JSON.writeValue(output, report);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private String tick(String eventId, TickSchedule.Cause cause, Context context) {
    QueueServices s = services.get();
    Metrics metrics = s.newMetrics();
    if (eventId != null) {
      metrics.property("scheduleEventId", eventId);
    }
    try {
      BuildQueue.TickReport report = s.queue().tick(TickBudget.of(budget(context)), true, cause);
      LOG.log(report.cutShort().isEmpty() ? Level.INFO : Level.WARNING, "tick: {0}", report);
      metrics.count(Metrics.TICK_DISPATCHED, report.dispatched());
      metrics.count(Metrics.LAUNCHES_RETRIED, report.relaunched());
      metrics.count(Metrics.LEASES_RECLAIMED, report.reclaimed());
      metrics.count(Metrics.TICK_CUT_SHORT, report.cutShort().size());
      if (report.eventsMayBePending()) {
        s.publishQuietly(metrics);
      }
      // After the publishing, whose settle may owe deliveries of its own: the pass takes them too.
      // Before the sweep, which may take seconds of S3 calls: a start takes one short call.
      s.startWebhookDeliveriesQuietly(report.found().webhooksDue(), metrics, eventId);
      // Uploads the survey found abandoned, and the files of jobs this tick's housekeeping deleted.
      s.sweepArtifactsQuietly(
          report.found().artifactsToSweep() || report.housekeptJobs() > 0,
          metrics,
          () -> context == null || context.getRemainingTimeInMillis() > RESERVE.toMillis() / 2);
      QueueGauges.recordInto(report.found().gauges(), metrics);
      return report.toString();
    } finally {
      s.flush(metrics);
    }
  }

  /** What the function's deadline leaves the tick: its remaining time less {@link #RESERVE}. */
  static Duration budget(Context context) {
    Duration left =
        context == null
            ? Duration.ofSeconds(55)
            : Duration.ofMillis(context.getRemainingTimeInMillis());
    Duration budget = left.minus(RESERVE);
    return budget.isNegative() ? Duration.ZERO : budget;
  }
}
