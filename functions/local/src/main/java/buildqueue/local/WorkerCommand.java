package buildqueue.local;

import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * How a worker process is started: {@code <java> <jvmFlags> -cp <classpath> <mainClass>}. The
 * default runs {@link #WORKER_MAIN} with the same java and classpath as this server (the runnable
 * jar, or the test classpath in tests) and flags for a small, fast-starting JVM.
 */
public record WorkerCommand(
    String java, String classpath, List<String> jvmFlags, String mainClass) {
  public static final String WORKER_MAIN = "buildqueue.worker.WorkerMain";

  /**
   * A worker does little CPU work and holds one job at a time: a 48 MiB heap, the serial collector,
   * the C1 compiler only (it starts fast and a worker never runs long enough to repay C2), and the
   * shared class archive.
   */
  public static final List<String> SMALL_FAST_JVM =
      List.of(
          "-Xmx48m",
          "-Xss512k",
          "-XX:TieredStopAtLevel=1",
          "-XX:+UseSerialGC",
          "-Xshare:auto",
          "-XX:ReservedCodeCacheSize=16m",
          "-XX:MaxMetaspaceSize=64m");

  public WorkerCommand {
    jvmFlags = List.copyOf(jvmFlags);
  }

  /** The same command with another main class (tests run stand-ins for the worker). */
  public WorkerCommand withMainClass(String name) {
    return new WorkerCommand(java, classpath, jvmFlags, name);
  }

  public static WorkerCommand forThisJvm() {
    String java =
        ProcessHandle.current()
            .info()
            .command()
            .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    // Absolute, so a worker does not depend on the directory it is started from.
    String classpath =
        Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(s -> !s.isEmpty())
            .map(s -> Path.of(s).toAbsolutePath().toString())
            .collect(Collectors.joining(File.pathSeparator));
    return new WorkerCommand(java, classpath, SMALL_FAST_JVM, WORKER_MAIN);
  }
}
