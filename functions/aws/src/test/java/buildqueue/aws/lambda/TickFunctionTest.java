package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.testing.TestContext;
import buildqueue.core.OutboxTransitions;
import buildqueue.db.DatabaseException;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.amazonaws.services.lambda.runtime.events.ScheduledEvent;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@ExtendWith(PostgresExtension.class)
public class TickFunctionTest {
  /** An EventBridge rule's event ({@code "detail": {}}). */
  private static final Map<String, Object> SCHEDULE = event("schedule-tick.json");

  /**
   * A sample event from infra/events as the Lambda runtime hands it to the tick's declared input
   * type.
   */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> event(String name) {
    return SampleEvents.asLambdaEvent(SampleEvents.bytes(name), Map.class);
  }

  @Test
  void an_eventbridge_scheduler_event_does_not_bind_to_the_rule_event_type() {
    // Why the tick reads plain JSON: Scheduler's "detail" is the string "{}", which the runtime's
    // serializer cannot read into ScheduledEvent, so a handler declared on it never runs.
    byte[] scheduler = SampleEvents.bytes("scheduler-tick.json");
    assertThat(SampleEvents.tree("scheduler-tick.json").get("detail").isTextual()).isTrue();

    assertThatThrownBy(() -> SampleEvents.asLambdaEvent(scheduler, ScheduledEvent.class))
        .isInstanceOf(Exception.class);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"schedule-tick.json", "scheduler-tick.json"})
  void a_tick_runs_on_the_event_of_a_rule_and_of_eventbridge_scheduler(
      String sample, TestDatabase tdb) throws Exception {
    try (QueueWorld w = new QueueWorld(tdb, Component.TICK)) {
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();

      // As Lambda calls it: the event's bytes, the report written back as a JSON string.
      new TickFunction(() -> w.services)
          .handleRequest(
              new java.io.ByteArrayInputStream(SampleEvents.bytes(sample)),
              out,
              TestContext.withTimeLeft(Duration.ofSeconds(60)));

      String report = SampleEvents.asLambdaEvent(out.toByteArray(), String.class);
      assertThat(report).startsWith("TickReport[");
      assertThat(w.metrics.last("tick").get("scheduleEventId").asText())
          .isEqualTo(SampleEvents.tree(sample).get("id").asText());
    }
  }

  @Test
  void the_tick_works_for_what_the_functions_timeout_leaves_less_the_reserve() {
    assertThat(TickFunction.budget(TestContext.withTimeLeft(Duration.ofSeconds(55))))
        .isBetween(Duration.ofSeconds(44), Duration.ofSeconds(45));
    assertThat(TickFunction.budget(TestContext.withTimeLeft(Duration.ofSeconds(5)))).isZero();
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_tick_finds_a_stopped_task_recovers_its_job_dispatches_and_reports(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TICK)) {
      long job = w.submit("alice");
      WorkerLaunch first = w.lastLaunch();
      w.workers.start(first.workerId(), first.token()).orElseThrow(); // it ran, then died
      long waiting = w.submit("bob");
      w.services.flush(w.services.newMetrics());
      w.clock.advance(Duration.ofMinutes(2));
      w.platform.setState(
          ManualPlatform.taskIdOf(first.workerId()),
          new TaskState.Stopped("EssentialContainerExited"));

      String report =
          new TickFunction(() -> w.services)
              .handleRequest(SCHEDULE, TestContext.withTimeLeft(Duration.ofSeconds(60)));

      assertThat(report).contains("exited=1", "dispatched=1"); // the recovered job's next worker
      assertThat(w.worker(first.workerId()).string("status")).isEqualTo("exited");
      assertThat(w.job(job).string("status"))
          .isEqualTo("dispatched"); // back at the head, relaunched
      assertThat(w.job(waiting).string("status")).isEqualTo("queued");
      assertThat(w.unpublishedEvents()).isZero();
      JsonNode line = w.metrics.last("tick");
      assertThat(line.get("QueueDepth").asLong()).isEqualTo(1);
      assertThat(line.get("QueueWaitSeconds").asLong()).isEqualTo(120);
      assertThat(line.get("WorkersExited").asLong()).isEqualTo(1);
      assertThat(line.get("Recoveries").asLong()).isEqualTo(1);
      assertThat(line.get("SlotHeldSeconds").asDouble()).isEqualTo(120.0);
      assertThat(line.get("Launches").asLong()).isEqualTo(1);
      assertThat(line.get("TickDispatched").asLong()).isEqualTo(1);
      assertThat(line.get("scheduleEventId").asText())
          .isEqualTo("89d1a02d-5ec7-412e-82f5-13505f849b41");
      assertThat(line.get("_aws").get("CloudWatchMetrics").get(0).get("Namespace").asText())
          .isEqualTo("buildqueue-test");
    }
  }

  @Test
  void an_idle_tick_reports_an_empty_queue(TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.TICK)) {
      new TickFunction(() -> w.services)
          .handleRequest(SCHEDULE, TestContext.withTimeLeft(Duration.ofSeconds(60)));

      JsonNode line = w.metrics.last("tick");
      assertThat(line.get("QueueDepth").asLong()).isZero();
      assertThat(line.get("QueueWaitSeconds").asLong()).isZero();
      assertThat(w.eventBridge.received()).isEmpty();
    }
  }

  @Test
  void a_tick_that_changes_nothing_still_publishes_the_events_its_survey_found_pending(
      TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.TICK)) {
      // The submission's own PutEvents fails: its events are left unpublished, to be sent again
      // once the refusal's wait is over.
      w.eventBridge.failNextCalls(1);
      w.submit("alice");
      assertThat(w.unpublishedEvents()).isPositive();
      w.clock.advance(OutboxTransitions.RETRY_AFTER);

      String report =
          new TickFunction(() -> w.services)
              .handleRequest(SCHEDULE, TestContext.withTimeLeft(Duration.ofSeconds(60)));

      assertThat(report).contains("exited=0", "relaunched=0", "reclaimed=0", "dispatched=0");
      assertThat(w.unpublishedEvents()).isZero();
      assertThat(w.eventBridge.accepted()).isNotEmpty();
    }
  }

  @Test
  void a_database_failure_fails_the_tick(TestDatabase tdb) {
    var broken = TaskStateChangeFunctionTest.failing(tdb.jdbc(), sql -> true);
    try (QueueWorld w = new QueueWorld(tdb, Component.TICK, broken)) {
      TickFunction tick = new TickFunction(() -> w.services);

      assertThatThrownBy(
              () -> tick.handleRequest(SCHEDULE, TestContext.withTimeLeft(Duration.ofSeconds(60))))
          .isInstanceOf(DatabaseException.class);
    }
  }
}
