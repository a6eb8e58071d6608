package buildqueue.aws.lambda;

import buildqueue.api.HttpApi;
import buildqueue.aws.AwsSettings;
import buildqueue.aws.events.EventBridgePublisher;
import buildqueue.aws.events.EventBridgeTickSchedule;
import buildqueue.aws.metrics.ExitMeter;
import buildqueue.aws.metrics.MeteredPlatform;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.core.OutboxTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.TickSchedule;
import buildqueue.db.Database;
import buildqueue.kinds.KindRegistry;
import buildqueue.platform.WorkerPlatform;
import java.io.PrintStream;
import java.lang.System.Logger.Level;
import software.amazon.awssdk.services.eventbridge.EventBridgeClient;

/**
 * What a queue function holds for the life of its container: the database, the worker platform, the
 * queue, the event publisher and the metric collectors. Built once, on the first invocation ({@link
 * Lazy}); nothing in it depends on the invocation, and nothing random is made at build time (each
 * dispatch makes its own token).
 */
public final class QueueServices {
  private static final System.Logger LOG = System.getLogger(QueueServices.class.getName());

  private final AwsSettings.Component component;
  private final Database db;
  private final MeteredPlatform platform;
  private final ExitMeter exits;
  private final BuildQueue queue;
  private final EventBridgePublisher publisher;
  private final JobQueries queries;
  private HttpApi api;
  private final String metricsNamespace;
  private final PrintStream metricsOut;
  private final KindRegistry kinds;
  private final java.util.concurrent.atomic.AtomicInteger foldedPublished =
      new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger foldedRefused =
      new java.util.concurrent.atomic.AtomicInteger();

  public QueueServices(
      AwsSettings.Component component,
      Database db,
      WorkerPlatform platform,
      EventBridgeClient eventBridge,
      String eventBus,
      QueueConfig config,
      QueueClock clock,
      String metricsNamespace,
      PrintStream metricsOut,
      KindRegistry kinds) {
    this(
        component,
        db,
        platform,
        eventBridge,
        eventBus,
        config,
        clock,
        metricsNamespace,
        metricsOut,
        kinds,
        null);
  }

  /**
   * @param tickRule the tick's EventBridge rule, which the queue turns on and off ({@link
   *     EventBridgeTickSchedule}); null: the tick always runs
   */
  public QueueServices(
      AwsSettings.Component component,
      Database db,
      WorkerPlatform platform,
      EventBridgeClient eventBridge,
      String eventBus,
      QueueConfig config,
      QueueClock clock,
      String metricsNamespace,
      PrintStream metricsOut,
      KindRegistry kinds,
      String tickRule) {
    this.component = component;
    this.db = db;
    this.platform = new MeteredPlatform(platform);
    this.exits = new ExitMeter();
    this.publisher =
        new EventBridgePublisher(eventBridge, eventBus, new OutboxTransitions(db, clock));
    // A submission and a stop publish what they wrote from their own statements (no claim or
    // settle statement of their own); counted here for the invocation's metrics line.
    this.queue =
        new BuildQueue(
            db,
            this.platform,
            config,
            clock,
            exits,
            events -> {
              OutboxTransitions.Sent sent = publisher.sendClaimed(events);
              foldedPublished.addAndGet(sent.accepted().size());
              foldedRefused.addAndGet(sent.refused().size());
              return sent;
            },
            tickRule == null
                ? TickSchedule.ALWAYS
                : new EventBridgeTickSchedule(eventBridge, tickRule));
    this.queries = new JobQueries(db, config, clock);
    this.api = new HttpApi(queue, queries, kinds);
    this.metricsNamespace = metricsNamespace;
    this.metricsOut = metricsOut;
    this.kinds = kinds;
  }

  /**
   * The API with the artifacts store: listing reads the database, a download is a presigned S3 GET
   * (docs/architecture.md §4.10). Without it the API has nothing to download.
   */
  QueueServices withArtifacts(buildqueue.artifacts.ArtifactStore store) {
    this.api = new HttpApi(queue, queries, kinds, store);
    return this;
  }

  public AwsSettings.Component component() {
    return component;
  }

  public Database db() {
    return db;
  }

  public BuildQueue queue() {
    return queue;
  }

  public EventBridgePublisher publisher() {
    return publisher;
  }

  /** The HTTP API over this queue; it accepts the kinds of the catalogue the worker image ships. */
  public HttpApi api() {
    return api;
  }

  /** The job kinds the API accepts. */
  public KindRegistry kinds() {
    return kinds;
  }

  /**
   * Runs this container's local, per-invocation code once without an invocation (SnapStart
   * priming): a metrics line, drained and rendered, to nowhere: a line written during init would be
   * a metric CloudWatch records.
   */
  void primeLocally() {
    PrintStream nowhere =
        new PrintStream(
            java.io.OutputStream.nullOutputStream(),
            false,
            java.nio.charset.StandardCharsets.UTF_8);
    for (int round = 0; round < Priming.ROUNDS; round++) {
      Metrics m = newMetrics().property("primed", true);
      platform.drainInto(m);
      exits.drainInto(m);
      m.count(Metrics.TICK_DISPATCHED, 0);
      m.flush(nowhere);
    }
  }

  /** A fresh metrics line for one invocation. */
  public Metrics newMetrics() {
    return new Metrics(metricsNamespace, component.label());
  }

  /**
   * Publishes pending job events after the invocation's own work has committed. A failure here is
   * logged, not thrown: the work is done, retrying the invocation would not help, and the tick
   * publishes whatever is left.
   */
  public void publishQuietly(Metrics metrics) {
    try {
      EventBridgePublisher.Published p = publisher.publishPending();
      if (p.published() > 0) {
        metrics.count(Metrics.EVENTS_PUBLISHED, p.published());
      }
      if (p.refused() > 0) {
        metrics.count(Metrics.EVENTS_REFUSED, p.refused());
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "publishing job events failed; the tick publishes them", e);
    }
  }

  /** Adds what the container-level collectors saw during this invocation, then writes the line. */
  public void flush(Metrics metrics) {
    int published = foldedPublished.getAndSet(0);
    int refused = foldedRefused.getAndSet(0);
    if (published > 0) {
      metrics.count(Metrics.EVENTS_PUBLISHED, published);
    }
    if (refused > 0) {
      metrics.count(Metrics.EVENTS_REFUSED, refused);
    }
    platform.drainInto(metrics);
    exits.drainInto(metrics);
    metrics.flush(metricsOut);
  }
}
