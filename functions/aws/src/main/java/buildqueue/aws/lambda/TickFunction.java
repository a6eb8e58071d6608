package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.BuildQueue;
import buildqueue.core.TickBudget;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The scheduled pass, once a minute ({@code BuildQueue.tick}): liveness checks, unknown launches,
 * lease reclaim, dispatch, housekeeping; then the job events not yet published, and the queue's
 * gauges. The tick works through everything due within what the function's timeout leaves, less
 * {@link #RESERVE} (the queue holds it to half the launch grace besides), paced to ECS's request
 * rates; what it cannot finish is first in line next minute. Concurrent or overlapping ticks are
 * safe (every claim in the tick skips rows another holds), so a slow tick and a retried one never
 * collide. A database failure fails the invocation; the next tick starts over.
 *
 * <p>The event is taken as a plain map, not as {@code ScheduledEvent}: an EventBridge rule sends
 * {@code "detail": {}} but EventBridge Scheduler sends {@code "detail": "{}"} (a string), which the
 * runtime cannot bind to {@code ScheduledEvent}'s map and so fails before the handler runs. The
 * tick reads nothing of the event but its id, for the logs.
 */
public final class TickFunction implements RequestHandler<Map<String, Object>, String> {
  private static final System.Logger LOG = System.getLogger(TickFunction.class.getName());
  private static final Lazy<QueueServices> SERVICES = Lazy.of(() -> AwsServices.queueServices(Component.TICK));

  /** Kept back from the function's deadline for publishing job events, gauges and metrics. */
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
      TickBudget.of(budget(null)).limit();
    }
    Priming.rehearse(r -> r.dataApi().ecs().eventBridge());
  }

  public TickFunction(Supplier<QueueServices> services) {
    this.services = services;
  }

  @Override
  public String handleRequest(Map<String, Object> event, Context context) {
    QueueServices s = services.get();
    Metrics metrics = s.newMetrics();
    if (event != null && event.get("id") instanceof String id) {
      metrics.property("scheduleEventId", id);
    }
    try {
      BuildQueue.TickReport report = s.queue().tick(TickBudget.of(budget(context)));
      LOG.log(report.cutShort().isEmpty() ? Level.INFO : Level.WARNING, "tick: {0}", report);
      metrics.count(Metrics.TICK_DISPATCHED, report.dispatched());
      metrics.count(Metrics.LAUNCHES_RETRIED, report.relaunched());
      metrics.count(Metrics.LEASES_RECLAIMED, report.reclaimed());
      metrics.count(Metrics.TICK_CUT_SHORT, report.cutShort().size());
      s.publishQuietly(metrics);
      s.gauges().readInto(metrics);
      return report.toString();
    } finally {
      s.flush(metrics);
    }
  }

  /** What the function's deadline leaves the tick: its remaining time less {@link #RESERVE}. */
  static Duration budget(Context context) {
    Duration left = context == null
        ? Duration.ofSeconds(55)
        : Duration.ofMillis(context.getRemainingTimeInMillis());
    Duration budget = left.minus(RESERVE);
    return budget.isNegative() ? Duration.ZERO : budget;
  }
}
