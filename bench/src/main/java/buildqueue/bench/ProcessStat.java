package buildqueue.bench;

import java.io.File;
import java.util.ArrayList;
import java.util.List;

/**
 * What the benchmark reads of a process's {@code /proc/PID/stat}: its name, parent and the CPU it
 * has used (user + system, in clock ticks, the unit of {@code /proc/stat}). A process that ends
 * between the listing and the read is left out.
 */
record ProcessStat(long pid, String name, long ppid, long cpuTicks) {
  static List<ProcessStat> all() {
    List<ProcessStat> all = new ArrayList<>();
    File[] procs =
        new File("/proc").listFiles(f -> f.getName().chars().allMatch(Character::isDigit));
    for (File p : procs == null ? new File[0] : procs) {
      String stat = BenchMain.read(p.toPath().resolve("stat"));
      int open = stat.indexOf('(');
      int close = stat.lastIndexOf(')');
      if (open < 0 || close < open) {
        continue;
      }
      try {
        // Fields after the name: state ppid … utime is the 14th field of the line, stime the 15th.
        String[] f = stat.substring(close + 2).split(" ");
        all.add(
            new ProcessStat(
                Long.parseLong(p.getName()),
                stat.substring(open + 1, close),
                Long.parseLong(f[1]),
                Long.parseLong(f[11]) + Long.parseLong(f[12])));
      } catch (RuntimeException torn) {
        // a line cut short by the process's end
      }
    }
    return all;
  }
}
