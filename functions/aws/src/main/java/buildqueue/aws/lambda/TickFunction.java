package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.BuildQueue;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The scheduled pass, once a minute ({@code BuildQueue.tick}): liveness checks, unknown launches,
 * lease reclaim, dispatch, housekeeping; then the job events not yet published, and the queue's
 * gauges. Concurrent or overlapping ticks are safe (every claim in the tick skips rows another
 * holds), so a slow tick and a retried one never collide. A database failure fails the
 * invocation; the next tick starts over.
 *
 * <p>The event is taken as a plain map, not as {@code ScheduledEvent}: an EventBridge rule sends
 * {@code "detail": {}} but EventBridge Scheduler sends {@code "detail": "{}"} (a string), which the
 * runtime cannot bind to {@code ScheduledEvent}'s map and so fails before the handler runs. The
 * tick reads nothing of the event but its id, for the logs.
 */
public final class TickFunction implements RequestHandler<Map<String, Object>, String> {
  private static final System.Logger LOG = System.getLogger(TickFunction.class.getName());
  private static final Lazy<QueueServices> SERVICES = Lazy.of(() -> AwsServices.queueServices(Component.TICK));

  private final Supplier<QueueServices> services;

  public TickFunction() {
    this(SERVICES);
    LambdaLogging.install(Component.TICK);
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
      BuildQueue.TickReport report = s.queue().tick();
      LOG.log(Level.INFO, "tick: {0}", report);
      metrics.count(Metrics.TICK_DISPATCHED, report.dispatched());
      metrics.count(Metrics.LAUNCHES_RETRIED, report.relaunched());
      metrics.count(Metrics.LEASES_RECLAIMED, report.reclaimed());
      s.publishQuietly(metrics);
      s.gauges().readInto(metrics);
      return report.toString();
    } finally {
      s.flush(metrics);
    }
  }
}
