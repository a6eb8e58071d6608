package buildqueue.faults;

import java.util.EnumMap;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * The scenario's fault decisions, drawn from its random stream (and a second one for the faults of
 * {@link Fault#SECOND_STREAM}, a third for those of {@link Fault#PROGRAMS}, a fourth for {@link
 * Fault#DEPLOYS}, a fifth for {@link Fault#STOPS}, a sixth for {@link Fault#ARMING}, a seventh for
 * {@link Fault#ARTIFACTS}). A decision always draws, even when its fault is switched off (after the
 * fault phase, or by a shrinking replay), so that switching one fault off leaves every other
 * decision of the replay where it was.
 */
final class Faults {
  private final Random random;
  private final Random second;
  private final Random third;
  private final Random fourth;
  private final Random fifth;
  private final Random sixth;
  private final Random seventh;
  private final Set<Fault> disabled;
  private final Map<Fault, Double> rates = new EnumMap<>(Fault.class);
  private final Map<Fault, Integer> injected = new EnumMap<>(Fault.class);
  private boolean active = true;

  Faults(
      Random random,
      Random second,
      Random third,
      Random fourth,
      Random fifth,
      Random sixth,
      Random seventh,
      Set<Fault> disabled) {
    this.random = random;
    this.second = second;
    this.third = third;
    this.fourth = fourth;
    this.fifth = fifth;
    this.sixth = sixth;
    this.seventh = seventh;
    this.disabled = disabled;
    // Each family is on in about half the scenarios, at a rate drawn per scenario: some scenarios
    // are calm, some are storms, and every combination turns up over a run.
    family(0.35, 0.5, Fault.WORKER_CRASH);
    family(0.5, 0.06, Fault.WORKER_KILLED);
    family(0.5, 0.3, Fault.LAUNCH_FAILED, Fault.LAUNCH_FAILED_RETRYABLE);
    family(0.5, 0.3, Fault.LAUNCH_UNKNOWN_STARTED, Fault.LAUNCH_UNKNOWN_NOT_STARTED);
    family(0.35, 0.3, Fault.LAUNCH_LATE);
    family(0.4, 0.25, Fault.CALLER_DIED_BEFORE_LAUNCH, Fault.CALLER_DIED_AFTER_LAUNCH);
    family(0.5, 0.4, Fault.EVIDENCE_DUPLICATED, Fault.EVIDENCE_DELAYED, Fault.EVIDENCE_REORDERED);
    family(0.4, 0.4, Fault.EVIDENCE_LOST);
    family(0.4, 0.05, Fault.EVIDENCE_FORGED);
    family(0.5, 0.04, Fault.KILL_MID_STATEMENT, Fault.KILL_AFTER_COMMIT);
    family(0.5, 0.35, Fault.KILL_MID_TRANSACTION);
    family(0.3, 0.03, Fault.DATABASE_UNREACHABLE);
    family(0.5, 0.6, Fault.WORKER_FROZEN);
    family(0.4, 0.5, Fault.WORKER_FORGED);
    family(0.15, 0.2, Fault.JOB_KILLS_WORKER);
    // PROGRAM's rate is the share of jobs that run a program; the four ways it ends are drawn as
    // one
    // choice, so their rate is shared among them.
    family(0.5, 0.5, Fault.PROGRAM);
    family(
        0.7,
        0.6,
        Fault.PROGRAM_CRASHES,
        Fault.PROGRAM_SIGNALLED,
        Fault.PROGRAM_RETRY_CODE,
        Fault.PROGRAM_HANGS);
    family(0.6, 0.5, Fault.PROGRAM_IGNORES_SIGTERM);
    family(0.5, 0.4, Fault.PROGRAM_LEAVES_CHILD);
    family(0.7, 0.8, Fault.PROGRAM_CANCELLED);
    family(0.6, 0.8, Fault.PROGRAM_CANCELLED_IN_GRACE);
    // On or off per scenario: one deploy window when on (Simulation draws when, and how long).
    family(0.5, 1.0, Fault.DEPLOY_WINDOW, Fault.LAUNCH_REFUSED_BY_DEPLOY);
    // Stops that are lost or late; the other two stop faults are counted as they happen.
    family(0.5, 0.4, Fault.STOP_LOST);
    family(0.7, 0.8, Fault.STOP_DELAYED);
    // The arm after an enqueue that found the tick disarmed: lost, twice, or late, as one choice.
    family(0.6, 0.9, Fault.ARM_LOST, Fault.ARM_DUPLICATED, Fault.ARM_LATE);
    // The share of program jobs whose program writes artifacts; what befalls a worker between its
    // uploads and its end, drawn as one choice per such job (so their rate is shared between them).
    family(0.8, 1.0, Fault.PROGRAM_WRITES_ARTIFACTS);
    family(0.8, 1.0, Fault.WORKER_KILLED_AFTER_UPLOAD, Fault.WORKER_PAUSED_AFTER_UPLOAD);
  }

  private void family(double chance, double maxRate, Fault... members) {
    Random r = streamOf(members[0]);
    boolean on = r.nextDouble() < chance;
    double rate = maxRate * (0.2 + 0.8 * r.nextDouble());
    for (Fault f : members) {
      rates.put(f, on ? rate : 0.0);
    }
  }

  /** Faults stop: the recovery phase runs with none. */
  void stop() {
    active = false;
  }

  boolean active() {
    return active;
  }

  /** Whether a shrinking replay left this fault out (faults that are conditions, not draws). */
  boolean enabled(Fault f) {
    return !disabled.contains(f);
  }

  double rate(Fault f) {
    return active && !disabled.contains(f) ? rates.getOrDefault(f, 0.0) : 0.0;
  }

  /**
   * The stream {@code f}'s decisions draw from (see {@link Fault#SECOND_STREAM}, {@link
   * Fault#PROGRAMS}, {@link Fault#DEPLOYS}, {@link Fault#STOPS}, {@link Fault#ARMING}, {@link
   * Fault#ARTIFACTS}).
   */
  Random streamOf(Fault f) {
    return Fault.ARTIFACTS.contains(f)
        ? seventh
        : Fault.ARMING.contains(f)
            ? sixth
            : Fault.STOPS.contains(f)
                ? fifth
                : Fault.DEPLOYS.contains(f)
                    ? fourth
                    : Fault.PROGRAMS.contains(f)
                        ? third
                        : Fault.SECOND_STREAM.contains(f) ? second : random;
  }

  /** One decision: does {@code f} happen now? Counts it when it does. */
  boolean roll(Fault f) {
    double draw = streamOf(f).nextDouble();
    if (draw < rate(f)) {
      count(f);
      return true;
    }
    return false;
  }

  /**
   * The first of {@code choices} that happens, or {@link Fault#NONE}; draws once, from their
   * stream.
   */
  Fault pick(Fault... choices) {
    double draw = streamOf(choices[0]).nextDouble();
    double edge = 0;
    for (Fault f : choices) {
      edge += rate(f) / choices.length;
      if (draw < edge) {
        count(f);
        return f;
      }
    }
    return Fault.NONE;
  }

  Fault statementFault() {
    return pick(Fault.KILL_MID_STATEMENT, Fault.KILL_AFTER_COMMIT);
  }

  boolean transactionFault() {
    return roll(Fault.KILL_MID_TRANSACTION);
  }

  void count(Fault f) {
    injected.merge(f, 1, Integer::sum);
  }

  Map<Fault, Integer> injected() {
    return injected;
  }

  Map<Fault, Double> rates() {
    return rates;
  }
}
