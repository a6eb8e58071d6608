package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.TestSeeds;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The seeded fault-injection suite. By default it runs {@value #DEFAULT_SCENARIOS} scenarios from a
 * fixed base seed ({@link TestSeeds}: {@code -Dbuildqueue.seed=random} draws a fresh one), prints
 * one summary line (with how many of each fault it injected) and fails if a fault type was never
 * injected. Properties:
 *
 * <ul>
 *   <li>{@code -Dfaults.scenarios=N}: a longer soak;
 *   <li>{@code -Dfaults.baseSeed=B}: the same batch again (scenario i has seed B + i);
 *   <li>{@code -Dfaults.seed=S} (with {@code -Dfaults.steps=n}): replays one scenario and prints
 *       its event log;
 *   <li>{@code -Dfaults.disable=a,b}: leaves these fault types out (names as in the summary line);
 *   <li>{@code -Dfaults.parallel=P}: lanes (databases) run side by side, default 3.
 * </ul>
 */
class FaultInjectionTest {
  static final int DEFAULT_SCENARIOS = 2000;

  /**
   * The default run's batch (scenario i has seed B + i); {@code -Dbuildqueue.seed=random} draws
   * one.
   */
  static final long FIXED_BASE_SEED = 230_000_000_000L;

  // Held so the level sticks: java.util.logging keeps loggers weakly.
  private static final Logger QUIET = Logger.getLogger("buildqueue");

  @BeforeAll
  static void quiet() {
    // The queue logs every unknown launch and refused start; under thousands of injected faults
    // that is noise. The event log of a failing scenario says what happened.
    QUIET.setLevel(Level.OFF);
  }

  @Test
  void every_invariant_holds_in_thousands_of_seeded_fault_scenarios() throws IOException {
    Long replay = Long.getLong("faults.seed");
    if (replay != null) {
      replayOne(replay);
      return;
    }
    int scenarios = Integer.getInteger("faults.scenarios", DEFAULT_SCENARIOS);
    int parallel = Integer.getInteger("faults.parallel", 3);
    long base = TestSeeds.seed("fault injection", "faults.baseSeed", FIXED_BASE_SEED);

    FaultRun.Summary summary = FaultRun.run(base, scenarios, parallel, JdbcFaults::new, disabled());

    String line = summary.line() + " (base seed " + base + ")";
    System.out.println(line);
    Path out = Path.of("target", "faults-summary.txt");
    Files.createDirectories(out.getParent());
    Files.writeString(out, line + System.lineSeparator());
    if (summary.failure() != null) {
      String report = summary.failure().report() + summary.replayCheck();
      System.out.println(report);
      Files.writeString(Path.of("target", "faults-failure.txt"), report);
    }
    assertThat(summary.violations())
        .as(() -> summary.failure().report() + summary.replayCheck())
        .isZero();
    assertThat(summary.scenarios()).isEqualTo(scenarios);
    if (scenarios >= DEFAULT_SCENARIOS) {
      // A fault that a changed weight or guard no longer injects would leave its invariants
      // testing nothing while the run still passed.
      assertThat(notInjected(summary, disabled()))
          .as("fault types the run never injected")
          .isEmpty();
      // Idle at zero is checked only where the queue goes idle, and the fallback only where it
      // fires: both must happen.
      assertThat(summary.idle().periods()).as("idle periods").isPositive();
      assertThat(summary.idle().fallbackTicks()).as("fallback ticks while idle").isPositive();
    }
  }

  /** Fault types this run could inject and never did (the Data API's resuming error is not one). */
  static Set<Fault> notInjected(FaultRun.Summary summary, Set<Fault> disabled) {
    Set<Fault> missing = EnumSet.complementOf(EnumSet.of(Fault.NONE, Fault.DATABASE_RESUMING));
    missing.removeAll(disabled);
    summary
        .faults()
        .forEach(
            (f, n) -> {
              if (n > 0) {
                missing.remove(f);
              }
            });
    return missing;
  }

  /** {@code -Dfaults.disable=a,b}: fault types left out, by their summary-line names. */
  static Set<Fault> disabled() {
    Set<Fault> disabled = EnumSet.noneOf(Fault.class);
    Arrays.stream(System.getProperty("faults.disable", "").split(","))
        .filter(s -> !s.isBlank())
        .forEach(
            s ->
                disabled.add(
                    Fault.valueOf(s.trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_'))));
    return disabled;
  }

  private static void replayOne(long seed) {
    Simulation.Options options = Simulation.Options.of(seed);
    if (!Boolean.parseBoolean(System.getProperty("faults.tenants", "true"))) {
      options = options.withoutTenants();
    }
    if (!Boolean.parseBoolean(System.getProperty("faults.schedule", "true"))) {
      options = options.withoutSchedule();
    }
    Integer steps = Integer.getInteger("faults.steps");
    if (steps != null) {
      options = options.withFaultSteps(steps);
    }
    for (Fault f : disabled()) {
      options = options.without(f);
    }
    try (Lane lane = new Lane()) {
      Simulation.Outcome o = Simulation.run(lane, options);
      System.out.println("seed " + seed + " — " + options.replay() + "\n" + o.parameters());
      o.log().forEach(System.out::println);
      System.out.println(o.violation() == null ? "no violation" : "VIOLATION: " + o.violation());
      assertThat(o.violation()).as(o::report).isNull();
    }
  }
}
