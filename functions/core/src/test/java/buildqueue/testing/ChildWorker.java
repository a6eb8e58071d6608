package buildqueue.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A worker process that a test starts in a child JVM, as a platform starts one, and stops with
 * SIGTERM, as the platform's stop does. The programs its jobs run append their pids to {@link
 * #pids()} (give it to them as {@code $PIDS}). Register it as an extension
 * ({@code @RegisterExtension final ChildWorker child = new ChildWorker();}): after each test it
 * kills the worker and every program still alive, and deletes its directory.
 */
public final class ChildWorker implements AfterEachCallback {
  private final Path dir;
  private Process process;

  public ChildWorker() {
    try {
      dir = Files.createTempDirectory("child-worker");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The file the jobs' programs append their pids to. */
  public Path pids() {
    return dir.resolve("pids");
  }

  /**
   * Starts {@code main} in a child JVM on this test's class path, with at most {@code maxHeap}, the
   * environment {@code env} and none of this JVM's {@code BUILDQUEUE_} or {@code AWS_} variables.
   */
  public Process start(Class<?> main, String maxHeap, Map<String, String> env) throws IOException {
    String java = ProcessHandle.current().info().command().orElse("java");
    ProcessBuilder builder =
        new ProcessBuilder(
                java,
                "-Xmx" + maxHeap,
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                main.getName())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("worker.out").toFile());
    builder
        .environment()
        .keySet()
        .removeIf(k -> k.startsWith("BUILDQUEUE_") || k.startsWith("AWS_"));
    builder.environment().putAll(env);
    process = builder.start();
    return process;
  }

  /** Whether a job's program has started (and written its pid). */
  public boolean programStarted() {
    return !Procs.pidsIn(pids()).isEmpty();
  }

  /** The first program a job started. */
  public long firstProgram() {
    return Procs.pidsIn(pids()).get(0);
  }

  /**
   * Sends the worker SIGTERM and waits up to {@code wait} for it to exit, which it must; returns
   * how long it took, and prints it beside the stop timeout the worker was given.
   */
  public Duration sigterm(Duration wait, Duration stopTimeout) throws InterruptedException {
    long sentAt = System.nanoTime();
    process.destroy();
    if (!process.waitFor(wait.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError(
          "the worker did not exit within " + wait + " of SIGTERM; output:\n" + output());
    }
    Duration took = Duration.ofNanos(System.nanoTime() - sentAt);
    System.out.printf(
        "SIGTERM to exit: %d ms (stop timeout %d s)%n", took.toMillis(), stopTimeout.toSeconds());
    return took;
  }

  /** What the worker wrote to its standard output and error. */
  public String output() {
    try {
      return Files.readString(dir.resolve("worker.out"));
    } catch (IOException e) {
      return "(no output: " + e + ")";
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws IOException {
    if (process != null) {
      process.destroyForcibly();
    }
    Procs.pidsIn(pids())
        .forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }
}
