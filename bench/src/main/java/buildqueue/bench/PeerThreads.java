package buildqueue.bench;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The threads a JVM peer started and left running after its shutdown. The rest of the benchmark
 * runs in the same JVM, so a peer must leave nothing behind that could take CPU from later figures.
 */
final class PeerThreads {
  private final Set<Thread> before = Thread.getAllStackTraces().keySet();

  /** Threads started since this was made that are still alive after up to five seconds. */
  List<String> leftRunning() {
    long deadline = System.nanoTime() + 5_000_000_000L;
    List<Thread> left;
    do {
      left =
          Thread.getAllStackTraces().keySet().stream()
              .filter(t -> !before.contains(t) && t.isAlive() && t != Thread.currentThread())
              .toList();
      if (left.isEmpty()) {
        return List.of();
      }
      BenchPostgres.sleep(50);
    } while (System.nanoTime() < deadline);
    return left.stream()
        .map(t -> t.getName() + (t.isDaemon() ? " (daemon)" : ""))
        .sorted()
        .collect(Collectors.toList());
  }
}
