package buildqueue.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A fresh JVM started as the Lambda Java runtime starts one (its JIT flags, only the given
 * environment), timed from spawn to the {@code HANDLED} line the cold-start launcher prints once
 * the first event is handled.
 */
final class LambdaJvm {
  /** The JVM flags the Lambda Java runtimes start with (tiered compilation stopped at C1). */
  static final List<String> LAMBDA_JVM_FLAGS =
      List.of(
          "-XX:+TieredCompilation",
          "-XX:TieredStopAtLevel=1",
          "-XX:+UseSerialGC",
          "-Xshare:auto",
          "-Xmx512m");

  private static final Pattern HANDLED =
      Pattern.compile(
          "HANDLED construct_ms=([0-9.]+) handle_ms=([0-9.]+)(?: warm_ms=([0-9.]+))? jvm_uptime_ms=([0-9]+) classes=([0-9]+)");

  /**
   * One cold start: wall time from spawn to the handled line, and the child's own split; {@code
   * warmMs}, for a primed case, the same event handled again right after (else NaN).
   */
  record Start(double wallMs, double constructMs, double handleMs, double warmMs, long classes) {}

  private LambdaJvm() {}

  /**
   * Starts {@code mainAndArgs} in a JVM with the Lambda flags and {@code jvmFlags}, and times it.
   */
  static Start start(
      String classpath,
      Map<String, String> env,
      String name,
      List<String> jvmFlags,
      List<String> mainAndArgs)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(LAMBDA_JVM_FLAGS);
    cmd.addAll(jvmFlags);
    cmd.addAll(List.of("-cp", classpath));
    cmd.addAll(mainAndArgs);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().clear();
    pb.environment().putAll(env);
    long t0 = System.nanoTime();
    Process p = pb.start();
    StringBuilder out = new StringBuilder();
    Double wall = null;
    Matcher m = null;
    try (java.io.BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        Matcher found = HANDLED.matcher(line);
        if (found.find() && wall == null) {
          wall = (System.nanoTime() - t0) / 1e6;
          m = found;
        } else if (out.length() < 4000) {
          out.append(line).append('\n');
        }
      }
    }
    if (!p.waitFor(60, TimeUnit.SECONDS) || wall == null) {
      p.destroyForcibly();
      throw new IllegalStateException(name + " did not handle its event: " + out);
    }
    return new Start(
        wall,
        Double.parseDouble(m.group(1)),
        Double.parseDouble(m.group(2)),
        m.group(3) == null ? Double.NaN : Double.parseDouble(m.group(3)),
        Long.parseLong(m.group(5)));
  }
}
