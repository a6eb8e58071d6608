package buildqueue.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.List;

/**
 * How busy the machine's CPUs were over a stretch of a run, from {@code /proc/stat}, and how much
 * of it was this JVM: the evidence for "what limits this figure". A machine whose cores are all
 * busy is CPU-bound; one that idles is waiting (on fsync, a poll, a sleep).
 */
final class CpuBusy {
  /** Counters at one moment. */
  record Snapshot(
      long busyTicks, long totalTicks, long postgresTicks, long jvmCpuNanos, long wallNanos) {}

  /** Over a stretch: the share of all cores that was busy, PostgreSQL's share and this JVM's. */
  record Share(double machine, double postgres, double jvm) {
    String describe() {
      return "CPU busy "
          + Report.format(machine * 100, 0)
          + " % of "
          + CORES
          + " cores: PostgreSQL "
          + Report.format(postgres * 100, 0)
          + " %, this JVM "
          + Report.format(jvm * 100, 0)
          + " %";
    }
  }

  static final int CORES = Runtime.getRuntime().availableProcessors();

  private CpuBusy() {}

  static Snapshot now() {
    long busy = 0;
    long total = 0;
    List<String> lines = BenchMain.lines(BenchMain.read(Path.of("/proc/stat")));
    if (!lines.isEmpty() && lines.get(0).startsWith("cpu ")) {
      String[] f = lines.get(0).trim().split("\\s+");
      // user nice system idle iowait irq softirq steal (guest time is already in user)
      for (int i = 1; i <= Math.min(8, f.length - 1); i++) {
        long v = Long.parseLong(f[i]);
        total += v;
        if (i != 4 && i != 5) {
          busy += v;
        }
      }
    }
    long jvm =
        ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os
            ? os.getProcessCpuTime()
            : 0;
    return new Snapshot(busy, total, postgresTicks(), jvm, System.nanoTime());
  }

  /**
   * User + system time of every process named postgres (the benchmark's server and its backends),
   * in the same clock ticks as {@code /proc/stat}. A backend that exits within the stretch takes
   * its time with it, so the pools are opened before a measurement and closed after it.
   */
  private static long postgresTicks() {
    return ProcessStat.all().stream()
        .filter(p -> p.name().equals("postgres"))
        .mapToLong(ProcessStat::cpuTicks)
        .sum();
  }

  static Share since(Snapshot start) {
    Snapshot end = now();
    long total = end.totalTicks() - start.totalTicks();
    double machine =
        total <= 0 ? Double.NaN : (double) (end.busyTicks() - start.busyTicks()) / total;
    double postgres =
        total <= 0 ? Double.NaN : (double) (end.postgresTicks() - start.postgresTicks()) / total;
    double jvm =
        (double) (end.jvmCpuNanos() - start.jvmCpuNanos())
            / ((end.wallNanos() - start.wallNanos()) * (double) CORES);
    return new Share(machine, postgres, jvm);
  }
}
