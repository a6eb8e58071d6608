package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.events.EventBridgeTickSchedule;
import buildqueue.aws.testing.EventBridgeFake;
import buildqueue.aws.testing.TestContext;
import buildqueue.core.QueueClock;
import buildqueue.db.Json;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.eventbridge.model.ResourceNotFoundException;

/**
 * Idle at zero on AWS: the tick's rule is disabled by a tick that finds no work, enabled by the
 * first enqueue after it (one EnableRule, later enqueues none), and by the fallback rule's tick
 * when that finds work the lost arm of an enqueue left without a tick. EventBridge is the wire
 * fake, which answers an unknown rule as EventBridge does.
 */
@ExtendWith(PostgresExtension.class)
class IdleTickRuleTest {
  private static final String RULE = "buildqueue-tick";

  private static QueueServices services(TestDatabase tdb, EventBridgeFake eventBridge) {
    return new QueueServices(
        Component.TICK,
        tdb.jdbc(),
        new ManualPlatform(),
        eventBridge.client(),
        "default",
        QueueHarness.testConfig(),
        QueueClock.DATABASE,
        "buildqueue-test",
        new PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8),
        buildqueue.worker.JobHandlers.builtIn(),
        RULE);
  }

  private static void tick(QueueServices s, Map<String, Object> event) {
    new TickFunction(() -> s)
        .handleRequest(event, TestContext.withTimeLeft(Duration.ofSeconds(60)));
  }

  private static void allWorkDone(TestDatabase tdb) {
    tdb.jdbc()
        .update(
            "truncate build_job_log, build_lane_turn, build_user, build_worker, build_job,"
                + " build_job_event restart identity cascade");
  }

  @Test
  void the_rule_goes_off_when_idle_on_at_the_first_enqueue_and_on_again_at_the_fallback(
      TestDatabase tdb) {
    try (EventBridgeFake eventBridge = new EventBridgeFake()) {
      eventBridge.rule(RULE);
      QueueServices s = services(tdb, eventBridge);

      tick(s, TickFunctionTest.event("schedule-tick.json"));
      assertThat(eventBridge.enabled(RULE)).isFalse();

      for (int i = 0; i < 3; i++) {
        s.queue().enqueue("u" + i, "demo", new Json("{\"steps\": 1}"), null);
      }
      assertThat(eventBridge.enabled(RULE)).isTrue();
      assertThat(eventBridge.ruleCalls())
          .containsExactly("DisableRule " + RULE, "EnableRule " + RULE);

      // Idle again; then the first enqueue's EnableRule fails: the job is safe, the rule is off.
      allWorkDone(tdb);
      tick(s, TickFunctionTest.event("schedule-tick.json"));
      eventBridge.failNextCalls(1);
      s.queue().enqueue("u1", "demo", new Json("{\"steps\": 1}"), null);
      assertThat(eventBridge.enabled(RULE)).isFalse();

      tick(s, Map.of(TickFunction.FALLBACK, true));
      assertThat(eventBridge.enabled(RULE)).as("the fallback found the job and armed").isTrue();
      assertThat(eventBridge.ruleCalls())
          .containsExactly(
              "DisableRule " + RULE,
              "EnableRule " + RULE,
              "DisableRule " + RULE,
              "EnableRule " + RULE);
    }
  }

  @Test
  void an_unknown_rule_is_refused_as_eventbridge_refuses_it() {
    try (EventBridgeFake eventBridge = new EventBridgeFake()) {
      eventBridge.rule(RULE);
      EventBridgeTickSchedule missing =
          new EventBridgeTickSchedule(eventBridge.client(), "no-such-rule");

      assertThatThrownBy(missing::arm)
          .isInstanceOf(ResourceNotFoundException.class)
          .hasMessageContaining("Rule no-such-rule does not exist on EventBus default.");
      assertThatThrownBy(missing::disarm).isInstanceOf(ResourceNotFoundException.class);
      assertThat(eventBridge.ruleCalls()).isEqualTo(List.of());
    }
  }
}
