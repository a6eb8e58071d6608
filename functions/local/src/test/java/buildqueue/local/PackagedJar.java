package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the tests that run the packaged jar as a user would ({@link LocalJarIT}, {@link
 * LocalDiskIT}, {@link LocalShutdownIT}) share: the jar, a port, the JVM to run it with, the CLI in
 * a JVM of its own, and stopping the servers they started.
 */
final class PackagedJar {
  static final String JAR =
      System.getProperty("buildqueue.local.jar", "target/buildqueue-local.jar");

  private PackagedJar() {}

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** This JVM's own executable, so the jar runs on the JDK the build runs on. */
  static String java() {
    return ProcessHandle.current().info().command().orElse("java");
  }

  /** A server's log so far; empty while it has none. */
  static String read(Path p) {
    try {
      return Files.exists(p) ? Files.readString(p) : "";
    } catch (IOException e) {
      return "";
    }
  }

  /**
   * Runs a CLI command in its own JVM against a server; returns its standard output, asserting exit
   * 0. The failure names the command's standard error too (where the CLI says why, e.g. a 404).
   */
  static String cli(int port, Path dataDir, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(java(), "-jar", JAR));
    cmd.addAll(List.of(args));
    cmd.addAll(List.of("--port", Integer.toString(port), "--data-dir", dataDir.toString()));
    Path err = Files.createTempFile("bq-cli", ".err");
    try {
      Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as("exit code of %s: %s%s", cmd, out, read(err)).isZero();
      return out;
    } finally {
      Files.deleteIfExists(err);
    }
  }

  /**
   * Starts {@code serve} on {@code port} with its data in {@code dir}/data and its output in a log
   * of its own there, adds it to {@code servers} (for {@link #stop}) and returns it once it says it
   * is running. {@code args} are serve's further options (the tick interval, a kinds file, …).
   */
  static Process serve(Path dir, List<Process> servers, int port, String... args)
      throws IOException {
    Path log = dir.resolve("server-" + servers.size() + ".log");
    List<String> cmd =
        new ArrayList<>(
            List.of(
                java(),
                "-jar",
                JAR,
                "serve",
                "--port",
                Integer.toString(port),
                "--data-dir",
                dir.resolve("data").toString()));
    cmd.addAll(List.of(args));
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    servers.add(p);
    Await.until(
        "the server to say it is running",
        Duration.ofSeconds(90),
        () -> read(log).contains("buildqueue is running"));
    return p;
  }

  /**
   * Servers stop as SIGTERM stops them; anything left (a killed server's PostgreSQL) is stopped
   * too.
   */
  static void stop(List<Process> servers, Path dataDir) throws InterruptedException {
    for (Process p : servers) {
      p.destroy();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }
    LocalDatabase.LeftRunning.find(dataDir.resolve("postgres"))
        .ifPresent(LocalDatabase.LeftRunning::stop);
  }
}
