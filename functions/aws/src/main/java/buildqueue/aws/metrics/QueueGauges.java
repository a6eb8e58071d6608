package buildqueue.aws.metrics;

import buildqueue.core.TickTransitions;

/**
 * The queue's state as gauges, once per tick: how many jobs wait, and the longest wait. They come
 * with the tick's survey ({@link TickTransitions#survey}), the queue as the tick found it, so they
 * cost no statement of their own.
 */
public final class QueueGauges {
  private QueueGauges() {}

  public static void recordInto(TickTransitions.Gauges gauges, Metrics metrics) {
    metrics.observe(Metrics.QUEUE_DEPTH, gauges.queued(), Metrics.Unit.COUNT);
    metrics.observe(Metrics.QUEUE_WAIT_SECONDS, gauges.longestWaitSeconds(), Metrics.Unit.SECONDS);
  }
}
