package buildqueue.local;

import buildqueue.platform.TaskState;
import buildqueue.worker.exec.LeftoverJobs;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;

/**
 * The worker processes a {@link LocalProcessPlatform} knows, launched by it or left running by a
 * previous server (adopted by their labels), and the delivery of their exits: before an exit goes
 * to the {@link LocalProcessPlatform.StopListener}, whatever the worker's jobs left running is
 * killed ({@link LeftoverJobs}), and until then the worker counts as running.
 */
final class KnownWorkers {
  private static final System.Logger LOG = System.getLogger(KnownWorkers.class.getName());

  /**
   * How long SIGKILL is repeated on a dead worker's job processes before its exit is delivered
   * anyway.
   */
  private static final Duration LEFTOVER_PATIENCE = Duration.ofSeconds(10);

  /** A worker process this platform knows: launched by it, or left running by a previous server. */
  private record Child(LocalTaskId id, Long workerId, UUID token, ProcessHandle handle) {}

  private final LocalProcessPlatform.Directories dirs;
  private final String host;
  private final Map<UUID, Child> byToken = new ConcurrentHashMap<>();
  private final Map<String, Child> adoptedByLabel;
  private final Map<LocalTaskId, Child> live = new ConcurrentHashMap<>();

  /**
   * Workers a simulated Spot reclaim stopped ({@link LocalProcessPlatform#reclaim}), until their
   * exit's evidence has been delivered: it says {@value TaskState#SPOT_INTERRUPTION} first.
   */
  private final Set<LocalTaskId> reclaimed = ConcurrentHashMap.newKeySet();

  /** Known workers whose process is gone and whose jobs' leftovers are gone too. */
  private final Set<LocalTaskId> cleared = ConcurrentHashMap.newKeySet();

  private final ExecutorService evidence =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "buildqueue-worker-exits");
            t.setDaemon(true);
            return t;
          });
  private volatile LocalProcessPlatform.StopListener listener =
      (taskId, workerId, token, reason) -> {};

  /**
   * Adopts the workers a previous server with the same {@code home} label left running, and clears
   * what the jobs of those that died while no server watched left behind.
   */
  KnownWorkers(LocalProcessPlatform.Directories dirs, String host, String home) {
    this.dirs = dirs;
    this.host = host;
    this.adoptedByLabel = adoptSurvivors(home);
    clearDeadWorkersJobs();
  }

  void onStopped(LocalProcessPlatform.StopListener listener) {
    this.listener = listener;
  }

  /** The worker process already launched with {@code token}, by this server or a previous one. */
  Optional<LocalTaskId> launched(UUID token) {
    Child known = byToken.get(token);
    if (known == null) {
      known = adoptedByLabel.get(WorkerProcesses.label(token));
    }
    return Optional.ofNullable(known).map(Child::id);
  }

  /** A worker process just started: its exit will be delivered. */
  void add(LocalTaskId id, long workerId, UUID token, Process process) {
    Child child = new Child(id, workerId, token, process.toHandle());
    byToken.put(token, child);
    live.put(child.id(), child);
    process.onExit().thenAcceptAsync(p -> exited(child, describeExit(p.exitValue())), evidence);
  }

  /**
   * Whether a known worker's process is gone but its exit not yet delivered (its jobs' leftovers
   * are being killed).
   */
  boolean exiting(LocalTaskId id) {
    return live.containsKey(id) && !cleared.contains(id);
  }

  /** A reclaim is under way: the worker's exit is a reclaim's evidence. */
  void reclaimed(LocalTaskId id) {
    reclaimed.add(id);
  }

  /** Whether the worker was reclaimed and its exit's evidence is not delivered yet. */
  boolean wasReclaimed(LocalTaskId id) {
    return reclaimed.contains(id);
  }

  /**
   * A reclaimed worker's exit as ECS describes a reclaimed task's stop: the stop code first, then
   * the stopped reason, then what the process said.
   */
  static String reclaimEvidence(String exit) {
    return TaskState.SPOT_INTERRUPTION + ": " + TaskState.SPOT_INTERRUPTED_REASON + "; " + exit;
  }

  List<LocalTaskId> running() {
    return live.values().stream().filter(c -> c.handle().isAlive()).map(Child::id).toList();
  }

  Set<Long> workerIds() {
    Set<Long> ids = new HashSet<>();
    live.values().forEach(c -> ids.add(c.workerId()));
    return ids;
  }

  boolean awaitExited(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!live.isEmpty()) {
      if (System.nanoTime() >= deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }

  /** See {@link LocalProcessPlatform#stopWorkers}. */
  boolean stopAll(Duration grace) throws InterruptedException {
    List<Child> running = live.values().stream().filter(c -> c.handle().isAlive()).toList();
    for (Child c : running) {
      LOG.log(
          Level.INFO,
          "stopping worker process {0} (worker {1}): the server is shutting down",
          Long.toString(c.handle().pid()),
          c.workerId());
      c.handle().destroy();
    }
    if (awaitExited(grace)) {
      return true;
    }
    List<Child> left = live.values().stream().filter(c -> c.handle().isAlive()).toList();
    for (Child c : left) {
      LOG.log(
          Level.WARNING,
          "worker process {0} did not stop within {1} s; SIGKILL (its job is recovered at the next"
              + " start)",
          Long.toString(c.handle().pid()),
          grace.toSeconds());
      c.handle().destroyForcibly();
    }
    // Each exit kills what its jobs left (bounded by LEFTOVER_PATIENCE) before it is delivered.
    return awaitExited(LEFTOVER_PATIENCE.plusSeconds(5));
  }

  /** Stops delivering exits. */
  void close() {
    evidence.shutdown();
  }

  private static String describeExit(int code) {
    if (code == 0) {
      return "worker process exited (code 0)";
    }
    if (code > 128) {
      // A worker that halts itself (its deadline, a demo crash) uses 137 too, like SIGKILL.
      return "worker process ended with code "
          + code
          + " (signal "
          + (code - 128)
          + ", or it halted itself)";
    }
    return "worker process failed (code " + code + "); see its log";
  }

  private void exited(Child child, String exit) {
    try {
      if (child.workerId() != null) {
        // The slot must not be freed while programs of the worker's jobs may still run.
        clearJobsOf(child.workerId());
      }
      cleared.add(child.id()); // from now on a check reports it stopped too
      String reason = reclaimed.contains(child.id()) ? reclaimEvidence(exit) : exit;
      listener.stopped(child.id().toString(), child.workerId(), child.token(), reason);
      // Delivered; if not, the tick's liveness check delivers it, still as a reclaim's.
      reclaimed.remove(child.id());
    } catch (RuntimeException e) {
      // The tick's liveness check finds the process gone and delivers the evidence again.
      LOG.log(
          Level.WARNING,
          "exit of "
              + child.id()
              + " not recorded yet ("
              + e.getMessage()
              + "); the next tick's liveness check records it");
    } finally {
      if (child.token() != null) {
        byToken.remove(child.token());
      }
      live.remove(child.id());
      cleared.remove(child.id());
    }
  }

  /**
   * Worker processes left by a previous server on this host, found by their label. A relaunch of
   * one of their tokens answers with the running process instead of starting a second one, and
   * their exits are evidence as soon as they happen rather than at the next liveness check.
   */
  private Map<String, Child> adoptSurvivors(String home) {
    Map<String, Child> found = new ConcurrentHashMap<>();
    for (WorkerProcesses.Survivor s : WorkerProcesses.survivors(home)) {
      Child child =
          new Child(LocalTaskId.of(host, s.handle(), s.start()), s.workerId(), null, s.handle());
      found.put(s.label(), child);
      live.put(child.id(), child);
      s.handle()
          .onExit()
          .thenAcceptAsync(
              gone -> exited(child, "worker process exited (seen after a server restart)"),
              evidence);
      LOG.log(
          Level.INFO,
          "worker {0} (process {1}) is still running from before this server started",
          Long.toString(s.workerId()),
          Long.toString(s.handle().pid()));
    }
    return found;
  }

  /**
   * Kills what the jobs of a worker whose process is gone left running, and deletes its work
   * directory. Waits for them to die (bounded): the caller delivers the exit next.
   */
  private void clearJobsOf(long workerId) {
    Path work = dirs.workOf(workerId);
    try {
      LeftoverJobs.Cleared cleared = LeftoverJobs.clear(work, LEFTOVER_PATIENCE);
      if (cleared.killed() > 0) {
        LOG.log(
            Level.WARNING,
            "worker {0} left {1} job processes running; sent them SIGKILL{2}",
            workerId,
            cleared.killed(),
            cleared.survivors() == 0 ? "" : " (" + cleared.survivors() + " still alive)");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "could not clear " + work + ": " + e.getMessage());
    }
  }

  /** Workers whose process died while no server watched: clears their jobs' leftovers at start. */
  private void clearDeadWorkersJobs() {
    java.util.Set<Long> alive = new java.util.HashSet<>();
    live.values().forEach(c -> alive.add(c.workerId()));
    List<Long> dead = new ArrayList<>();
    try (Stream<Path> entries = Files.list(dirs.work())) {
      entries.forEach(
          p -> {
            String name = p.getFileName().toString();
            if (name.matches("worker-[0-9]{1,18}")
                && !alive.contains(Long.valueOf(name.substring(7)))) {
              dead.add(Long.valueOf(name.substring(7)));
            }
          });
    } catch (IOException e) {
      return; // no work directory yet
    }
    dead.forEach(this::clearJobsOf);
  }
}
