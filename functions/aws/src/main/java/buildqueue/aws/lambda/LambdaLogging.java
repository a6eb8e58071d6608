package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.logging.JsonLogging;
import java.util.Map;

/**
 * JSON-line logs for a function, installed once when Lambda builds the handler (during init, so it
 * is part of a SnapStart snapshot: it holds no connection and nothing random). Without it the JDK
 * writes each record on two lines, which CloudWatch splits into two events.
 */
final class LambdaLogging {
  private static volatile boolean installed;

  private LambdaLogging() {}

  static synchronized void install(Component component) {
    if (!installed) {
      JsonLogging.install(Map.of("component", component.label()));
      installed = true;
    }
  }
}
