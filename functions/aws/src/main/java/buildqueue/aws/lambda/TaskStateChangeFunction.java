package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.lambda.EcsTaskStateChange.StopEvidence;
import buildqueue.aws.lambda.EcsTaskStateChange.UnreadableEventException;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.ExitTransitions;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Receives "ECS Task State Change" events for the worker cluster from an EventBridge rule. A
 * STOPPED task is termination evidence: its worker exits, its unfinished job is recovered, and its
 * lane is dispatched ({@code BuildQueue.taskStopped}). The exit statement only acts on a worker
 * that has not exited, so a duplicate, a late or an out-of-order event changes nothing, and an
 * event for a task the queue never launched matches no worker.
 *
 * <p>An event that cannot be read is logged and acknowledged: redelivering it cannot fix it. A
 * database failure fails the invocation, so Lambda retries it and then the dead-letter queue keeps
 * it.
 */
public final class TaskStateChangeFunction implements RequestStreamHandler {
  private static final System.Logger LOG =
      System.getLogger(TaskStateChangeFunction.class.getName());
  private static final Lazy<QueueServices> SERVICES =
      Lazy.of(() -> AwsServices.queueServices(Component.TASK_STATE_CHANGE));

  /** What one event did. */
  public enum Outcome {
    /** Not an ECS task state change we can read; acknowledged and dropped. */
    UNREADABLE,
    /** The task has not stopped yet (or the event is an earlier state): nothing to do. */
    NOT_STOPPED,
    /** STOPPED, but no live worker matched: a duplicate, a late event, or not our task. */
    NO_CHANGE,
    /** A worker exited on this evidence. */
    WORKER_EXITED
  }

  private final Supplier<QueueServices> services;

  public TaskStateChangeFunction() {
    this(SERVICES);
    LambdaLogging.install(Component.TASK_STATE_CHANGE);
    Priming.register("TaskStateChangeFunction", () -> prime(SERVICES.get()));
  }

  /** A STOPPED event as ECS sends it, for priming: no task of ours, an all-zero token. */
  private static final String SAMPLE_STOPPED =
      """
      {"version": "0", "id": "00000000-0000-0000-0000-000000000000", "detail-type": "ECS Task State Change",
       "source": "aws.ecs", "account": "111122223333", "time": "2026-01-01T00:00:00Z", "region": "eu-west-1",
       "resources": ["arn:aws:ecs:eu-west-1:111122223333:task/priming/0"],
       "detail": {"taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/priming/0", "lastStatus": "STOPPED",
                  "desiredStatus": "STOPPED", "startedBy": "bq-0", "version": 1, "stopCode": "EssentialContainerExited",
                  "stoppedReason": "Essential container in task exited",
                  "containers": [{"name": "worker", "exitCode": 0, "lastStatus": "STOPPED"}],
                  "overrides": {"containerOverrides": [{"name": "worker", "environment": [
                      {"name": "BUILDQUEUE_WORKER_TOKEN", "value": "00000000-0000-0000-0000-000000000000"}]}]}}}
      """;

  /**
   * SnapStart priming ({@link Priming}): the services and classes a first event needs, and the
   * event's reading, on a sample that names no task of ours. No statement is sent.
   */
  static void prime(QueueServices s) {
    Priming.loadClasses();
    s.primeLocally();
    try {
      for (int round = 0; round < Priming.ROUNDS; round++) {
        EcsTaskStateChange.parse(SAMPLE_STOPPED.getBytes(StandardCharsets.UTF_8))
            .stopEvidence()
            .orElseThrow()
            .toString();
      }
    } catch (UnreadableEventException e) {
      throw new IllegalStateException("priming's sample event no longer reads", e);
    }
    Priming.rehearse(r -> r.dataApi().ecs().eventBridge());
  }

  public TaskStateChangeFunction(Supplier<QueueServices> services) {
    this.services = services;
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context)
      throws IOException {
    Outcome outcome = handle(input.readAllBytes());
    output.write(("{\"outcome\":\"" + outcome + "\"}").getBytes(StandardCharsets.UTF_8));
  }

  public Outcome handle(byte[] eventJson) {
    EcsTaskStateChange event;
    try {
      event = EcsTaskStateChange.parse(eventJson);
    } catch (UnreadableEventException e) {
      // The body may hold anything, a token included: log its size, not its content.
      LOG.log(
          Level.WARNING,
          "acknowledging an event that cannot be read ({0} bytes): {1}",
          eventJson.length,
          e.getMessage());
      return Outcome.UNREADABLE;
    }
    Optional<StopEvidence> evidence = event.stopEvidence();
    if (evidence.isEmpty()) {
      LOG.log(
          Level.INFO,
          "task {0} is {1} (version {2}); not stopped yet, nothing to do",
          event.detail().taskArn(),
          event.detail().lastStatus(),
          event.detail().version());
      return Outcome.NOT_STOPPED;
    }
    StopEvidence stop = evidence.get();
    QueueServices s = services.get();
    Metrics metrics = s.newMetrics().property("taskArn", stop.taskArn());
    try {
      Optional<ExitTransitions.Exited> exited =
          s.queue()
              .taskStopped(
                  stop.taskArn(),
                  stop.workerId().orElse(null),
                  stop.token().orElse(null),
                  stop.reason(),
                  event.billedTime());
      if (exited.isEmpty()) {
        LOG.log(
            Level.INFO,
            "{0}: no live worker matched (a duplicate, a late event, or not our task)",
            stop);
        return Outcome.NO_CHANGE;
      }
      ExitTransitions.Exited e = exited.get();
      LOG.log(
          Level.INFO,
          "{0}: worker {1} in lane {2} exited; its job: {3}",
          stop,
          e.workerId(),
          e.lane(),
          e.jobId()
              .map(id -> id + " now " + e.jobStatus().map(Enum::name).orElse("?"))
              .orElse("none"));
      // The stop published what it wrote from its own statements (BuildQueue#taskStopped).
      return Outcome.WORKER_EXITED;
    } finally {
      s.flush(metrics);
    }
  }
}
