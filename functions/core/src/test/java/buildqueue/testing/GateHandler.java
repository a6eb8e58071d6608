package buildqueue.testing;

import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobOutcome;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * Test kind {@code gate}: reports {@code payload.progressTo} (if any), then blocks until the test
 * opens the job's gate, then succeeds ({@code payload.fail} fails it instead). Lets a test hold a
 * job on its worker for exactly as long as it needs. {@code payload.failMessageBytes} fails it with
 * a message of that many bytes (4-byte characters); {@code payload.followUpPayloadBytes} submits a
 * {@code noop} follow-up whose payload is that many bytes as stored.
 */
public final class GateHandler implements JobHandler {
  public static final String KIND = "gate";
  private final Map<Long, CountDownLatch> gates = new ConcurrentHashMap<>();
  private final Map<Long, CountDownLatch> entered = new ConcurrentHashMap<>();

  @Override
  public String kind() {
    return KIND;
  }

  private CountDownLatch gate(long jobId) {
    return gates.computeIfAbsent(jobId, k -> new CountDownLatch(1));
  }

  private CountDownLatch entered(long jobId) {
    return entered.computeIfAbsent(jobId, k -> new CountDownLatch(1));
  }

  public void open(long jobId) {
    gate(jobId).countDown();
  }

  /** Waits until the job's handler is running (and has made its progress report). */
  public void awaitEntered(long jobId) throws InterruptedException {
    if (!entered(jobId).await(30, java.util.concurrent.TimeUnit.SECONDS)) {
      throw new AssertionError("job " + jobId + " never reached its gate");
    }
  }

  @Override
  public JobOutcome run(JobContext context) throws Exception {
    if (context.payload().has("progressTo")) {
      context.reportProgress(context.payload().get("progressTo").asInt());
    }
    entered(context.jobId()).countDown();
    gate(context.jobId()).await();
    if (context.payload().has("reportAfterGate")) {
      context.reportProgress(context.payload().get("reportAfterGate").asInt());
    }
    if (context.payload().has("followUps")) {
      context
          .payload()
          .get("followUps")
          .forEach(f -> context.enqueueFollowUp(f.get("kind").asText(), f.get("payload")));
    }
    if (context.payload().has("followUpPayloadBytes")) {
      // {"f": "…"} as jsonb stores it adds 9 bytes to the text.
      int bytes = context.payload().get("followUpPayloadBytes").asInt();
      context.enqueueFollowUp(
          "noop", JsonNodeFactory.instance.objectNode().put("f", "x".repeat(bytes - 9)));
    }
    if (context.payload().has("failMessageBytes")) {
      return JobOutcome.failed(
          "\uD83D\uDE00".repeat(context.payload().get("failMessageBytes").asInt() / 4));
    }
    if (context.payload().path("fail").asBoolean(false)) {
      return JobOutcome.failed("gate job failed on request");
    }
    return JobOutcome.succeeded();
  }
}
