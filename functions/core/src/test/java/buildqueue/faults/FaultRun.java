package buildqueue.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Runs many scenarios on a few lanes in parallel (each scenario alone is single-threaded and
 * deterministic), stops at the first violation, shrinks it, and sums up the run in one line.
 */
final class FaultRun {

  /** The run's totals, and the shrunk first failure if there was one. */
  record Summary(
      int scenarios,
      long operations,
      long statements,
      Map<Fault, Integer> faults,
      int outages,
      int jobs,
      int frozenStopped,
      Map<String, Integer> programs,
      Simulation.Idle idle,
      Duration longestRecovery,
      Duration wall,
      int violations,
      Simulation.Outcome failure,
      String replayCheck) {

    String line() {
      String injected =
          faults.entrySet().stream()
              .filter(e -> e.getKey() != Fault.NONE && e.getValue() > 0)
              .map(e -> e.getKey().label() + "=" + e.getValue())
              .collect(Collectors.joining(" "));
      String ran =
          programs.entrySet().stream()
              .map(e -> e.getKey() + "=" + e.getValue())
              .collect(Collectors.joining(", "));
      return String.format(
          "faults: %d scenarios, %d operations (%d statements), %d jobs, faults injected: %s outages=%d;"
              + " frozen workers stopped at the queue's request=%d; programs: %s;"
              + " idle periods=%d (tick statements in them=%d, fallback ticks=%d, arms landed=%d);"
              + " longest recovery %.1f s simulated;"
              + " violations=%d; %.1f s",
          scenarios,
          operations,
          statements,
          jobs,
          injected,
          outages,
          frozenStopped,
          ran.isEmpty() ? "none" : ran,
          idle.periods(),
          idle.tickStatements(),
          idle.fallbackTicks(),
          idle.armsLanded(),
          longestRecovery.toMillis() / 1000.0,
          violations,
          wall.toMillis() / 1000.0);
    }
  }

  private FaultRun() {}

  static long seedOf(long base, int index) {
    return base + index;
  }

  /**
   * Runs {@code count} scenarios with seeds {@code base, base + 1, …} on {@code parallel} lanes.
   */
  static Summary run(long base, int count, int parallel) {
    return run(base, count, parallel, JdbcFaults::new, java.util.EnumSet.noneOf(Fault.class));
  }

  static Summary run(long base, int count, int parallel, DatabaseFaults.Factory faults) {
    return run(base, count, parallel, faults, java.util.EnumSet.noneOf(Fault.class));
  }

  /**
   * {@code disabled}: faults left out of every scenario (to explore what one of them guards
   * against).
   */
  static Summary run(
      long base, int count, int parallel, DatabaseFaults.Factory faults, Set<Fault> disabled) {
    long started = System.nanoTime();
    AtomicInteger next = new AtomicInteger();
    AtomicReference<Simulation.Outcome> failure = new AtomicReference<>();
    List<Simulation.Outcome> done = java.util.Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool =
        Executors.newFixedThreadPool(
            parallel,
            r -> {
              Thread t = new Thread(r, "fault-lane");
              t.setDaemon(true);
              return t;
            });
    List<Future<?>> lanes = new ArrayList<>();
    for (int p = 0; p < parallel; p++) {
      lanes.add(
          pool.submit(
              () -> {
                try (Lane lane = new Lane(faults)) {
                  int i;
                  while (failure.get() == null && (i = next.getAndIncrement()) < count) {
                    Simulation.Options options = Simulation.Options.of(seedOf(base, i));
                    for (Fault f : disabled) {
                      options = options.without(f);
                    }
                    Simulation.Outcome o = Simulation.run(lane, options);
                    done.add(o);
                    if (Boolean.getBoolean("faults.fingerprints")) {
                      System.out.println(
                          "FP "
                              + o.options().seed()
                              + " "
                              + o.operations()
                              + " "
                              + o.statements()
                              + " "
                              + o.log().hashCode());
                    }
                    if (o.violation() != null) {
                      failure.compareAndSet(null, o);
                    }
                  }
                }
              }));
    }
    for (Future<?> f : lanes) {
      try {
        f.get();
      } catch (Exception e) {
        throw new IllegalStateException("a lane failed: " + e, e);
      }
    }
    pool.shutdown();
    Simulation.Outcome shrunk = null;
    String replayCheck = null;
    if (failure.get() != null) {
      try (Lane lane = new Lane(faults)) {
        shrunk = shrink(failure.get(), o -> Simulation.run(lane, o));
        Simulation.Outcome again = Simulation.run(lane, shrunk.options());
        replayCheck =
            again.log().equals(shrunk.log()) && again.violation() != null
                ? "replayed with the same seed and options: identical event log and violation"
                : "replay differed: "
                    + (again.violation() == null ? "no violation" : again.violation());
      }
    }
    return summarize(done, Duration.ofNanos(System.nanoTime() - started), shrunk, replayCheck);
  }

  static Summary summarize(
      List<Simulation.Outcome> done,
      Duration wall,
      Simulation.Outcome failure,
      String replayCheck) {
    Map<Fault, Integer> faults = new EnumMap<>(Fault.class);
    long ops = 0;
    long statements = 0;
    int outages = 0;
    int jobs = 0;
    int frozenStopped = 0;
    Map<String, Integer> programs = new java.util.TreeMap<>();
    Simulation.Idle idle = Simulation.Idle.NONE;
    int violations = 0;
    Duration longest = Duration.ZERO;
    for (Simulation.Outcome o : done) {
      ops += o.operations();
      statements += o.statements();
      outages += o.outages();
      jobs += o.jobs();
      frozenStopped += o.frozenStopped();
      violations += o.violation() == null ? 0 : 1;
      o.faults().forEach((f, n) -> faults.merge(f, n, Integer::sum));
      o.programs().forEach((what, n) -> programs.merge(what, n, Integer::sum));
      idle = idle.plus(o.idle());
      if (o.violation() == null && o.recovery().compareTo(longest) > 0) {
        longest = o.recovery();
      }
    }
    return new Summary(
        done.size(),
        ops,
        statements,
        faults,
        outages,
        jobs,
        frozenStopped,
        programs,
        idle,
        longest,
        wall,
        violations,
        failure,
        replayCheck);
  }

  /**
   * Looks for a shorter event log that shows a violation: the shortest fault phase that still
   * fails, then each injected fault type left out in turn while it still fails.
   */
  static Simulation.Outcome shrink(
      Simulation.Outcome failing, Function<Simulation.Options, Simulation.Outcome> run) {
    Simulation.Outcome best = failing;
    int high = countFaultSteps(failing);
    int low = 0;
    while (low < high) {
      int mid = (low + high) / 2;
      Simulation.Outcome o = run.apply(best.options().withFaultSteps(mid));
      if (o.violation() != null) {
        high = mid;
        best = shorter(best, o);
      } else {
        low = mid + 1;
      }
    }
    Set<Fault> tried = EnumSet.noneOf(Fault.class);
    boolean progress = true;
    while (progress) {
      progress = false;
      List<Fault> candidates =
          best.faults().keySet().stream()
              .filter(f -> f != Fault.NONE && !tried.contains(f))
              .sorted(Comparator.naturalOrder())
              .toList();
      for (Fault f : candidates) {
        tried.add(f);
        Simulation.Outcome o = run.apply(best.options().without(f));
        if (o.violation() != null) {
          best = shorter(best, o);
          progress = true;
          break;
        }
      }
    }
    return best;
  }

  private static int countFaultSteps(Simulation.Outcome o) {
    return o.options().faultSteps() != null ? o.options().faultSteps() : 60;
  }

  private static Simulation.Outcome shorter(Simulation.Outcome a, Simulation.Outcome b) {
    return b.log().size() <= a.log().size() ? b : a;
  }
}
