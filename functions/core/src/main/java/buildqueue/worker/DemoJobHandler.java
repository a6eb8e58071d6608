package buildqueue.worker;

import buildqueue.kinds.DemoKind;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * Runs the built-in {@code demo} kind ({@link DemoKind}: {@code {"steps": n, "stepMillis": m,
 * "failAtStep": k?, "crashAtStep": k?, "crashAttempts": a?}}). It sleeps {@code m} ms per step and
 * reports progress after each, resuming after the last recorded step. {@code failAtStep} ends the
 * job {@code failed}; {@code crashAtStep} kills the worker abruptly when it reaches that step on
 * the first {@code a} attempts (every attempt if {@code crashAttempts} is absent).
 */
public final class DemoJobHandler implements JobHandler {
  public static final String KIND = DemoKind.NAME;

  @Override
  public String kind() {
    return KIND;
  }

  @Override
  public void validate(JsonNode payload) {
    DemoKind.PAYLOAD.check(payload);
  }

  @Override
  public JobOutcome run(JobContext context) throws InterruptedException {
    DemoKind.Payload p = DemoKind.read(context.payload());
    int steps = p.steps();
    Integer failAt = p.failAtStep().orElse(null);
    Integer crashAt = p.crashAtStep().orElse(null);
    Integer crashAttempts = p.crashAttempts().orElse(null);
    for (int step = context.progress() + 1; step <= steps; step++) {
      if (crashAt != null
          && step == crashAt
          && (crashAttempts == null || context.attempt() <= crashAttempts)) {
        context.crashWorker();
      }
      if (failAt != null && step == failAt) {
        return JobOutcome.failed("demo job failed on purpose at step " + step + " of " + steps);
      }
      Thread.sleep(p.stepMillis());
      context.log().line(JobLog.Stream.STDOUT, "step " + step + " of " + steps + " done");
      context.reportProgress(step);
    }
    return JobOutcome.succeeded();
  }
}
