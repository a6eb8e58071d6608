package buildqueue.aws.metrics;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The metrics of one invocation (or one worker run), written as a single CloudWatch embedded metric
 * format (EMF) log line: CloudWatch Logs turns it into metrics, with no API call and no agent.
 * Every metric carries the dimension {@code Function} (which part of the stack measured it) and is
 * also published without dimensions, so totals across functions need no metric math.
 *
 * <p>Not thread-safe: one invocation, one instance.
 */
public final class Metrics {
  /** The units this code uses, as EMF spells them. */
  public enum Unit {
    COUNT("Count"),
    SECONDS("Seconds");

    final String emf;

    Unit(String emf) {
      this.emf = emf;
    }
  }

  /** Metric names: one list, so dashboards and alarms have one place to look. */
  public static final String QUEUE_DEPTH = "QueueDepth";

  public static final String QUEUE_WAIT_SECONDS = "QueueWaitSeconds";
  public static final String LAUNCHES = "Launches";
  public static final String LAUNCH_FAILURES = "LaunchFailures";
  public static final String LAUNCHES_UNKNOWN = "LaunchesUnknown";
  public static final String WORKERS_EXITED = "WorkersExited";
  public static final String RECOVERIES = "Recoveries";
  public static final String JOBS_FAILED_AFTER_EXITS = "JobsFailedAfterExits";
  public static final String WORKERS_NEVER_STARTED = "WorkersNeverStarted";
  public static final String SLOT_HELD_SECONDS = "SlotHeldSeconds";
  public static final String EVENTS_PUBLISHED = "EventsPublished";
  public static final String EVENTS_REFUSED = "EventsRefused";
  public static final String WORKER_RUN_SECONDS = "WorkerRunSeconds";
  public static final String TICK_DISPATCHED = "TickDispatched";
  public static final String LAUNCHES_RETRIED = "LaunchesRetried";
  public static final String LEASES_RECLAIMED = "LeasesReclaimed";

  /** Parts of a tick that stopped before all that was due was done (out of time, throttled). */
  public static final String TICK_CUT_SHORT = "TickCutShort";

  /** Attempts of an artifact sweep removed (the tick, docs/architecture.md §4.10). */
  public static final String ARTIFACTS_SWEPT = "ArtifactsSwept";

  /** Webhook delivery passes the tick started (docs/architecture.md §4.11). */
  public static final String WEBHOOK_PASSES_STARTED = "WebhookPassesStarted";

  /** Webhook requests a delivery pass sent, and of them those acknowledged or now dead. */
  public static final String WEBHOOK_ATTEMPTS = "WebhookAttempts";

  public static final String WEBHOOKS_DELIVERED = "WebhooksDelivered";
  public static final String WEBHOOKS_DEAD = "WebhooksDead";

  private static final ObjectMapper JSON = new ObjectMapper();

  /** EMF takes at most 100 values per metric in one line. */
  private static final int MAX_VALUES = 100;

  private final String namespace;
  private final String function;
  private final Map<String, Unit> units = new LinkedHashMap<>();
  private final Map<String, List<Double>> values = new LinkedHashMap<>();
  private final Map<String, Object> properties = new LinkedHashMap<>();

  public Metrics(String namespace, String function) {
    this.namespace = namespace;
    this.function = function;
  }

  /** Adds {@code n} to a counter (one value per line, summed). */
  public Metrics count(String name, long n) {
    List<Double> v = series(name, Unit.COUNT);
    if (v.isEmpty()) {
      v.add((double) n);
    } else {
      v.set(0, v.get(0) + n);
    }
    return this;
  }

  /**
   * Records one observation (a gauge reading, or one worker's slot time); several are kept apart.
   */
  public Metrics observe(String name, double value, Unit unit) {
    List<Double> v = series(name, unit);
    if (v.size() < MAX_VALUES) {
      v.add(value);
    }
    return this;
  }

  public Metrics observe(String name, Duration d) {
    return observe(name, d.toMillis() / 1000.0, Unit.SECONDS);
  }

  /** A searchable field on the line that is not a metric (a request id, a worker id). */
  public Metrics property(String name, Object value) {
    properties.put(name, value);
    return this;
  }

  public boolean isEmpty() {
    return values.isEmpty();
  }

  private List<Double> series(String name, Unit unit) {
    Unit known = units.putIfAbsent(name, unit);
    if (known != null && known != unit) {
      throw new IllegalArgumentException("metric " + name + " is in " + known + ", not " + unit);
    }
    return values.computeIfAbsent(name, k -> new ArrayList<>());
  }

  /** The EMF document, one line of JSON. */
  public String toEmf(Instant at) {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode aws = root.putObject("_aws");
    aws.put("Timestamp", at.toEpochMilli());
    ObjectNode directive = aws.putArray("CloudWatchMetrics").addObject();
    directive.put("Namespace", namespace);
    ArrayNode dimensionSets = directive.putArray("Dimensions");
    dimensionSets.addArray().add("Function");
    dimensionSets.addArray();
    ArrayNode definitions = directive.putArray("Metrics");
    root.put("Function", function);
    properties.forEach((k, v) -> root.putPOJO(k, v));
    for (Map.Entry<String, List<Double>> e : values.entrySet()) {
      definitions.addObject().put("Name", e.getKey()).put("Unit", units.get(e.getKey()).emf);
      List<Double> v = e.getValue();
      if (v.size() == 1) {
        putNumber(root, e.getKey(), v.get(0));
      } else {
        ArrayNode array = root.putArray(e.getKey());
        v.forEach(x -> addNumber(array, x));
      }
    }
    return root.toString();
  }

  private static void putNumber(ObjectNode node, String name, double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      node.put(name, (long) v);
    } else {
      node.put(name, v);
    }
  }

  private static void addNumber(ArrayNode node, double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      node.add((long) v);
    } else {
      node.add(v);
    }
  }

  /** Writes the line if anything was measured. Lambda and the awslogs driver ship stdout lines. */
  public void flush(PrintStream out) {
    if (!isEmpty()) {
      out.println(toEmf(Instant.now()));
      out.flush();
    }
  }
}
