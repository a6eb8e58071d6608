package buildqueue.worker;

import buildqueue.core.QueueConfig;
import buildqueue.kinds.KindLimits;

/**
 * What a queue's workers leave a kind ({@link KindLimits}), from the queue's configuration: the
 * bridge that lets the kind catalogue check timeouts against the worker lifetime without knowing
 * the queue's core.
 */
public final class QueueKindLimits {
  private QueueKindLimits() {}

  public static KindLimits of(QueueConfig config) {
    return new KindLimits(
        config.workerLifetime(),
        config.chainWindow(),
        config.deadlineMargin(),
        config.leaseSlack());
  }
}
