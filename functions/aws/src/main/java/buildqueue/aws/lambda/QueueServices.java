package buildqueue.aws.lambda;

import buildqueue.api.HttpApi;
import buildqueue.artifacts.ArtifactStore;
import buildqueue.aws.AwsSettings;
import buildqueue.aws.events.EventBridgePublisher;
import buildqueue.aws.events.EventBridgeTickSchedule;
import buildqueue.aws.metrics.ExitMeter;
import buildqueue.aws.metrics.MeteredPlatform;
import buildqueue.aws.metrics.Metrics;
import buildqueue.aws.webhooks.WebhookDeliveryStarter;
import buildqueue.core.ArtifactSweep;
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
import java.util.Optional;
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
  private Optional<ArtifactSweep> artifactSweep = Optional.empty();
  private Optional<WebhookDeliveryStarter> webhookStarter = Optional.empty();
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
   * The artifacts store: the API lists from the database and downloads by a presigned S3 GET; the
   * tick sweeps what abandoned attempts left (docs/architecture.md §4.10). Without it the API has
   * nothing to download and the tick nothing to sweep.
   */
  public QueueServices withArtifacts(ArtifactStore store) {
    this.api = new HttpApi(queue, queries, kinds, store);
    this.artifactSweep = Optional.of(new ArtifactSweep(db, store));
    return this;
  }

  /**
   * The tick starts a webhook delivery pass with it when its survey finds deliveries due
   * (docs/architecture.md §4.11). Without it nothing delivers webhooks on AWS.
   */
  public QueueServices withWebhookStarter(WebhookDeliveryStarter starter) {
    this.webhookStarter = Optional.of(starter);
    return this;
  }

  /**
   * Sweeps what abandoned attempts uploaded ({@link ArtifactSweep}), only when {@code due}: the
   * tick's survey found an upload to sweep, or its housekeeping deleted jobs (whose published files
   * go with them). Nothing is due on an idle queue, so this costs no statement there. A pass
   * removes at most {@link ArtifactSweep#BATCH} attempts; another follows while passes come back
   * full and {@code timeLeft} says there is time. A failure is logged, not thrown: the tick's work
   * is done, and a later tick's survey finds what is left. Answers how many attempts it removed.
   */
  public int sweepArtifactsQuietly(
      boolean due, Metrics metrics, java.util.function.BooleanSupplier timeLeft) {
    if (!due || artifactSweep.isEmpty()) {
      return 0;
    }
    int swept = 0;
    try {
      int pass;
      do {
        pass = artifactSweep.get().sweep();
        swept += pass;
      } while (pass == ArtifactSweep.BATCH && timeLeft.getAsBoolean());
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "the artifact sweep failed; a later tick sweeps again", e);
    }
    if (swept > 0) {
      metrics.count(Metrics.ARTIFACTS_SWEPT, swept);
    }
    return swept;
  }

  /**
   * Starts a webhook delivery pass when {@code due} (the tick's survey found deliveries due) and a
   * starter is set. A failure is logged, not thrown: the deliveries stay due, and the next tick
   * starts a pass. Answers whether Lambda took the invocation.
   */
  public boolean startWebhookDeliveriesQuietly(boolean due, Metrics metrics, String eventId) {
    if (!due || webhookStarter.isEmpty()) {
      return false;
    }
    try {
      int status = webhookStarter.get().start(component.label(), eventId);
      metrics.count(Metrics.WEBHOOK_PASSES_STARTED, 1);
      LOG.log(Level.INFO, "webhook deliveries are due: started a delivery pass ({0})", status);
      return true;
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "starting a webhook delivery pass failed; the next tick starts one: " + e.getMessage());
      return false;
    }
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
