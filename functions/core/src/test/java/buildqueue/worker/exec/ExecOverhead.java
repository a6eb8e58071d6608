package buildqueue.worker.exec;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.testing.RecordingJobContext;
import buildqueue.worker.JobLog;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Prints what starting a job's program costs the worker, in milliseconds: a bare {@code
 * ProcessBuilder} start of {@code true} (the JVM's own fork and exec), {@link ProcessRunner#run} of
 * a {@code true} job from call to return (directory, setsid, watching, the look for leftovers, the
 * cleanup), and of an {@code echo} job from call to its first line in the log. Not a test: a
 * measurement, run by hand. Arguments: runs (default 50), warm-up runs (default 10).
 */
public final class ExecOverhead {
  private ExecOverhead() {}

  public static void main(String[] args) throws Exception {
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 50;
    int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 10;
    Path base = Files.createTempDirectory("exec-overhead");
    ProcessRunner runner =
        new ProcessRunner(
            base,
            System.getenv(),
            SetsidLauncher.find(System.getenv()),
            MonotonicClock.SYSTEM,
            ProcessRunner.Limits.defaults());
    CommandKind trueKind = kind(List.of("true"));
    CommandKind echoKind = kind(List.of("sh", "-c", "echo first"));

    List<Double> bare = new ArrayList<>();
    List<Double> whole = new ArrayList<>();
    List<Double> firstLine = new ArrayList<>();
    for (int i = 0; i < warmup + runs; i++) {
      long t0 = System.nanoTime();
      new ProcessBuilder("true").start().waitFor();
      double bareMs = (System.nanoTime() - t0) / 1e6;

      long t1 = System.nanoTime();
      runner.run(trueKind, RecordingJobContext.of("shell", "{}"));
      double wholeMs = (System.nanoTime() - t1) / 1e6;

      RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
      long t2 = System.nanoTime();
      runner.run(echoKind, ctx);
      long first =
          ctx.lines().stream()
              .filter(l -> l.stream() == JobLog.Stream.STDOUT)
              .findFirst()
              .orElseThrow()
              .atNanos();
      if (i >= warmup) {
        bare.add(bareMs);
        whole.add(wholeMs);
        firstLine.add((first - t2) / 1e6);
      }
    }
    System.out.printf(
        "runs: %d (after %d warm-up), cores: %d, load average: %.2f%n",
        runs,
        warmup,
        Runtime.getRuntime().availableProcessors(),
        java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    print("ProcessBuilder start + wait of `true` (baseline)", bare);
    print("ProcessRunner.run of a `true` job, call to return", whole);
    print("ProcessRunner.run of `sh -c 'echo first'`, call to its first line", firstLine);
  }

  private static CommandKind kind(List<String> command) {
    return new CommandKind(
        "shell",
        command,
        Duration.ofMinutes(1),
        PayloadSchema.ANY_OBJECT,
        Set.of(),
        Map.of(),
        Duration.ofSeconds(10));
  }

  private static void print(String what, List<Double> ms) {
    List<Double> sorted = new ArrayList<>(ms);
    Collections.sort(sorted);
    System.out.printf(
        "%-70s median %6.1f ms   p90 %6.1f ms   min %6.1f ms%n",
        what,
        sorted.get(sorted.size() / 2),
        sorted.get((int) (sorted.size() * 0.9)),
        sorted.get(0));
  }
}
