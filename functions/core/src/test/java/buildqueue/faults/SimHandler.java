package buildqueue.faults;

import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobOutcome;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;

/**
 * The simulation's job kind {@code sim}: {@code {"steps": n, "failAt": k?, "followUp": bool?,
 * "killsWorkerAt": k?}}. It resumes after its recorded progress, reports each step (each report is
 * a scheduling point), fails on purpose at {@code failAt}, kills its worker on reaching step {@code
 * killsWorkerAt} before reporting it ({@code n + 1}: after its last step) on every attempt, and on
 * success enqueues one follow-up job, which commits with the success or not at all. It tells the
 * simulation when it enters and leaves a job, so the simulation sees a job that runs on two workers
 * at once.
 */
final class SimHandler implements JobHandler {
  static final String KIND = "sim";
  static final String FAILED_ON_PURPOSE = "sim job failed on purpose at step ";

  private final Simulation sim;

  SimHandler(Simulation sim) {
    this.sim = sim;
  }

  @Override
  public String kind() {
    return KIND;
  }

  @Override
  public JobOutcome run(JobContext context) {
    JsonNode p = context.payload();
    int steps = p.path("steps").asInt(0);
    int failAt = p.path("failAt").asInt(-1);
    int killsWorkerAt = p.path("killsWorkerAt").asInt(-1);
    sim.handlerEnters(context.jobId());
    try {
      for (int step = context.progress() + 1; step <= steps + 1; step++) {
        if (step == killsWorkerAt) {
          sim.jobKillsItsWorker(context.jobId());
        }
        if (step > steps) {
          break;
        }
        context.reportProgress(step);
        if (step == failAt) {
          return JobOutcome.failed(FAILED_ON_PURPOSE + step);
        }
      }
      if (p.path("followUp").asBoolean(false)) {
        context.enqueueFollowUp(KIND, JsonNodeFactory.instance.objectNode().put("steps", 1));
      }
      return JobOutcome.succeeded();
    } finally {
      sim.handlerLeaves(context.jobId());
    }
  }
}
