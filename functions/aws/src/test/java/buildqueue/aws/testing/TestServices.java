package buildqueue.aws.testing;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.lambda.QueueServices;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.kinds.KindRegistry;
import buildqueue.platform.WorkerPlatform;
import buildqueue.testing.QueueHarness;

/** The services a queue function holds, wired to test doubles at the wire or database level. */
public final class TestServices {
  /** Where test services write their metric lines: one shared stream, kept for inspection. */
  public static final MetricsCapture METRICS = new MetricsCapture();

  private TestServices() {}

  public static QueueServices of(
      Component component,
      Database db,
      WorkerPlatform platform,
      EventBridgeFake eventBridge,
      QueueClock clock) {
    return of(component, db, platform, eventBridge, clock, QueueHarness.testConfig());
  }

  public static QueueServices of(
      Component component,
      Database db,
      WorkerPlatform platform,
      EventBridgeFake eventBridge,
      QueueClock clock,
      QueueConfig config) {
    return of(component, db, platform, eventBridge, clock, config, METRICS);
  }

  public static QueueServices of(
      Component component,
      Database db,
      WorkerPlatform platform,
      EventBridgeFake eventBridge,
      QueueClock clock,
      QueueConfig config,
      java.io.PrintStream metricsOut) {
    return of(
        component,
        db,
        platform,
        eventBridge,
        clock,
        config,
        metricsOut,
        buildqueue.worker.JobHandlers.builtIn());
  }

  /** As the others, with the API's kinds from {@code kinds} rather than the built-in ones. */
  public static QueueServices of(
      Component component,
      Database db,
      WorkerPlatform platform,
      EventBridgeFake eventBridge,
      QueueClock clock,
      QueueConfig config,
      java.io.PrintStream metricsOut,
      KindRegistry kinds) {
    return new QueueServices(
        component,
        db,
        platform,
        eventBridge.client(),
        "buildqueue-test-bus",
        config,
        clock,
        "buildqueue-test",
        metricsOut,
        kinds);
  }
}
