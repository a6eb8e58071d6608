package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.WebhookDeliveries;
import buildqueue.db.Database;
import java.io.PrintStream;

/**
 * What the webhook delivery function holds for the life of its container: the database and the
 * deliverer on it. Built once, on the first invocation ({@link Lazy}); nothing in it depends on the
 * invocation, and nothing random is made at build time.
 */
public record WebhookServices(
    Database db, WebhookDeliveries deliveries, String metricsNamespace, PrintStream metricsOut) {

  /** A fresh metrics line for one invocation. */
  public Metrics newMetrics() {
    return new Metrics(metricsNamespace, Component.WEBHOOK_DELIVERY.label());
  }
}
