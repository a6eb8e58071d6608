package buildqueue.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Path;

/** Peak memory of this JVM: heap pools' peaks since the last reset, and the process's VmHWM. */
final class Memory {
  private Memory() {}

  static void resetPeaks() {
    System.gc();
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      pool.resetPeakUsage();
    }
  }

  static long peakHeapMiB() {
    long bytes = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) {
        bytes += pool.getPeakUsage().getUsed();
      }
    }
    return bytes / (1024 * 1024);
  }

  static long peakRssMiB() {
    for (String line : BenchMain.lines(BenchMain.read(Path.of("/proc/self/status")))) {
      if (line.startsWith("VmHWM:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
      }
    }
    return -1;
  }
}
