package buildqueue.worker;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The built-in {@code demo} kind: {@code {"steps": n, "stepMillis": m, "failAtStep": k?,
 * "crashAtStep": k?, "crashAttempts": a?}}. It sleeps {@code m} ms per step and reports progress
 * after each, resuming after the last recorded step. {@code failAtStep} ends the job {@code
 * failed}; {@code crashAtStep} kills the worker abruptly when it reaches that step on the first
 * {@code a} attempts (every attempt if {@code crashAttempts} is absent).
 */
public final class DemoJobHandler implements JobHandler {
  public static final String KIND = "demo";
  static final int MAX_STEPS = 10_000;
  static final int MAX_STEP_MILLIS = 600_000;

  @Override
  public String kind() {
    return KIND;
  }

  @Override
  public void validate(JsonNode payload) {
    if (!payload.isObject()) {
      throw new IllegalArgumentException("demo payload must be a JSON object");
    }
    payload.fieldNames().forEachRemaining(name -> {
      if (!java.util.Set.of("steps", "stepMillis", "failAtStep", "crashAtStep", "crashAttempts").contains(name)) {
        throw new IllegalArgumentException(
            "demo payload has unknown field \"" + name
                + "\"; known: steps, stepMillis, failAtStep, crashAtStep, crashAttempts");
      }
    });
    intField(payload, "steps", 0, MAX_STEPS);
    intField(payload, "stepMillis", 0, MAX_STEP_MILLIS);
    intField(payload, "failAtStep", 1, MAX_STEPS);
    intField(payload, "crashAtStep", 1, MAX_STEPS);
    intField(payload, "crashAttempts", 1, 1_000);
  }

  @Override
  public JobOutcome run(JobContext context) throws InterruptedException {
    JsonNode p = context.payload();
    int steps = intField(p, "steps", 0, MAX_STEPS).orElse(5);
    int stepMillis = intField(p, "stepMillis", 0, MAX_STEP_MILLIS).orElse(1000);
    Integer failAt = intField(p, "failAtStep", 1, MAX_STEPS).orElse(null);
    Integer crashAt = intField(p, "crashAtStep", 1, MAX_STEPS).orElse(null);
    Integer crashAttempts = intField(p, "crashAttempts", 1, 1_000).orElse(null);
    for (int step = context.progress() + 1; step <= steps; step++) {
      if (crashAt != null && step == crashAt && (crashAttempts == null || context.attempt() <= crashAttempts)) {
        context.crashWorker();
      }
      if (failAt != null && step == failAt) {
        return JobOutcome.failed("demo job failed on purpose at step " + step + " of " + steps);
      }
      Thread.sleep(stepMillis);
      context.log().line(JobLog.Stream.STDOUT, "step " + step + " of " + steps + " done");
      context.reportProgress(step);
    }
    return JobOutcome.succeeded();
  }

  private static java.util.Optional<Integer> intField(JsonNode payload, String name, int min, int max) {
    JsonNode v = payload.get(name);
    if (v == null || v.isNull()) {
      return java.util.Optional.empty();
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < min || v.asInt() > max) {
      throw new IllegalArgumentException(
          "demo payload field \"" + name + "\" must be a whole number from " + min + " to " + max + ", was " + v);
    }
    return java.util.Optional.of(v.asInt());
  }
}
