package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.TestSeeds;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The fault simulation of the core module, with the queue on the RDS Data API adapter and the
 * wire-level fake: every statement, transaction and fault travels through the real SDK client. The
 * outage fault here is an auto-paused Aurora cluster answering {@code DatabaseResumingException}
 * until it has resumed. {@code -Dfaults.dataApiScenarios=N} runs more; {@code -Dfaults.baseSeed}
 * repeats a batch; {@code -Dfaults.seed} replays one scenario.
 */
class DataApiFaultInjectionTest {
  static final int DEFAULT_SCENARIOS = 100;

  /** The default run's batch; {@code -Dbuildqueue.seed=random} draws one ({@link TestSeeds}). */
  static final long FIXED_BASE_SEED = 231_000_000_000L;

  private static final Logger QUIET = Logger.getLogger("buildqueue");
  private static final Logger QUIET_SDK = Logger.getLogger("software.amazon.awssdk");

  @BeforeAll
  static void quiet() {
    QUIET.setLevel(Level.OFF);
    QUIET_SDK.setLevel(Level.OFF);
  }

  @Test
  void every_invariant_holds_on_the_data_api_through_resumes_and_lost_answers() {
    Long replay = Long.getLong("faults.seed");
    if (replay != null) {
      try (Lane lane = new Lane(DataApiFaults::new)) {
        Simulation.Outcome o = Simulation.run(lane, Simulation.Options.of(replay));
        System.out.println(o.report());
        assertThat(o.violation()).as(o::report).isNull();
      }
      return;
    }
    int scenarios = Integer.getInteger("faults.dataApiScenarios", DEFAULT_SCENARIOS);
    long base = TestSeeds.seed("data api fault injection", "faults.baseSeed", FIXED_BASE_SEED);

    FaultRun.Summary summary =
        FaultRun.run(base, scenarios, Integer.getInteger("faults.parallel", 2), DataApiFaults::new);

    System.out.println("data api " + summary.line() + " (base seed " + base + ")");
    assertThat(summary.violations())
        .as(() -> summary.failure().report() + summary.replayCheck())
        .isZero();
    assertThat(summary.scenarios()).isEqualTo(scenarios);
  }
}
