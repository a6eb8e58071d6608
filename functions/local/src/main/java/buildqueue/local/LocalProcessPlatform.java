package buildqueue.local;

import buildqueue.core.QueueConfig;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import buildqueue.worker.JobLog;
import buildqueue.worker.exec.JobUser;
import buildqueue.worker.exec.LeftoverJobs;
import buildqueue.worker.exec.LocalJobLogSink;
import buildqueue.worker.exec.ProcessRunner;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Workers as child processes on this host, each a JVM running {@link buildqueue.worker.WorkerMain}
 * over JDBC. A task id is {@link LocalTaskId} (host, pid, start time), so a check never mistakes a
 * reused pid for our worker, and a worker on another host is never checked from here ({@link
 * #canCheck}): the lease decides for it.
 *
 * <p>A child's exit is termination evidence and goes to the {@link StopListener} (in production
 * {@code BuildQueue#taskStopped}), the same stop path as an ECS STOPPED event. Launching is
 * idempotent per token, across server restarts too: each child carries a label derived from its
 * token on its command line, and the children a previous server left running are found by it.
 *
 * <p>A worker's jobs run programs in sessions of their own ({@link ProcessRunner}), which a worker
 * killed outright leaves running. So before a worker's exit is delivered, whatever its jobs left is
 * killed ({@link LeftoverJobs}): each worker keeps its job directories in a work directory of its
 * own, {@code <work>/worker-<id>}, where each job records its session; and until that is done the
 * worker still counts as running. A new server clears the work directories of workers that died
 * while no server watched.
 *
 * <p>Each worker starts in a session of its own (util-linux {@code setsid}, which runs it in place:
 * its pid is the one the JDK watches), so a signal to the server's process group (a terminal's
 * Ctrl-C) reaches only the server, which then stops its workers itself ({@link #stopWorkers}).
 *
 * <p>A worker's process is started by {@link WorkerProcessStarter} (its command line and
 * environment); what the host says of a process (alive, its arguments, its labels) is read by
 * {@link WorkerProcesses}.
 */
public final class LocalProcessPlatform implements WorkerPlatform, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(LocalProcessPlatform.class.getName());
  private static final Duration KILL_AFTER_STOP = WorkerProcessStarter.KILL_AFTER_STOP;

  /** Where termination evidence goes. */
  @FunctionalInterface
  public interface StopListener {
    /** {@code workerId} and {@code token} are null for a child adopted from a previous server. */
    void stopped(String taskId, Long workerId, UUID token, String reason);
  }

  /** Where a worker's database is, as the worker process must be told. */
  public record WorkerDatabase(String url, String user, String password) {
    @Override
    public String toString() {
      return "WorkerDatabase[" + LocalDatabase.redacted(url) + ", user=" + user + "]";
    }
  }

  /**
   * Where workers keep their files.
   *
   * @param workerLogs each worker's own output (its diagnostics, not its jobs'), {@code
   *     worker-<id>.log}
   * @param work each worker's job directories, {@code worker-<id>/} ({@value
   *     ProcessRunner#WORK_DIR})
   * @param jobLogs each job's whole log, {@code job-<id>.log} ({@value
   *     LocalJobLogSink#JOB_LOG_DIR})
   * @param artifacts the artifact store ({@link buildqueue.artifacts.DirectoryArtifactStore},
   *     {@value buildqueue.worker.WorkerEnvironment#ARTIFACT_DIR})
   */
  public record Directories(Path workerLogs, Path work, Path jobLogs, Path artifacts) {
    /**
     * {@code workers/}, {@code work/}, {@code jobs/} and {@code artifacts/} in the data directory.
     */
    public static Directories under(Path dataDir) {
      return new Directories(
          dataDir.resolve("workers"),
          dataDir.resolve("work"),
          dataDir.resolve("jobs"),
          dataDir.resolve("artifacts"));
    }

    Path workOf(long workerId) {
      return work.resolve("worker-" + workerId);
    }
  }

  private final WorkerCommand command;
  private final Directories dirs;
  private final String host;
  private final WorkerProcessStarter starter;
  private final KnownWorkers known;
  private final ScheduledExecutorService killer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "buildqueue-worker-kill");
            t.setDaemon(true);
            return t;
          });
  private volatile boolean launching = true;

  /**
   * @param kindsFile the kind catalogue each worker loads (an absolute path), or none: only {@code
   *     demo}
   */
  public LocalProcessPlatform(
      WorkerCommand command,
      WorkerDatabase database,
      QueueConfig config,
      Directories dirs,
      String host,
      Optional<Path> kindsFile) {
    this(
        command,
        database,
        config,
        dirs,
        host,
        kindsFile,
        JobLog.DEFAULT_MAX_LOG_BYTES,
        Optional.empty());
  }

  /**
   * @param maxLogBytes each job attempt's output its worker keeps at most ({@link JobLog})
   * @param jobUser the user the workers run their jobs' programs as ({@link JobUser}); none: their
   *     own
   */
  public LocalProcessPlatform(
      WorkerCommand command,
      WorkerDatabase database,
      QueueConfig config,
      Directories dirs,
      String host,
      Optional<Path> kindsFile,
      long maxLogBytes,
      Optional<String> jobUser) {
    this.command = command;
    this.dirs = dirs;
    this.host = host;
    // This server's label on its workers: its work directory's, so two servers never share one.
    String home = WorkerProcesses.label(dirs.work().toAbsolutePath().normalize().toString());
    this.starter =
        new WorkerProcessStarter(
            command,
            database,
            config,
            dirs,
            kindsFile.map(Path::toAbsolutePath),
            maxLogBytes,
            jobUser,
            home,
            WorkerProcessStarter.findSetsid());
    this.known = new KnownWorkers(dirs, host, home);
  }

  /** This host's name as task ids carry it. */
  public static String thisHost() {
    String name;
    try {
      name = InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      name = Optional.ofNullable(System.getenv("HOSTNAME")).orElse("localhost");
    }
    return name.replace(':', '_');
  }

  public void onStopped(StopListener listener) {
    known.onStopped(listener);
  }

  /**
   * From now on, launches start nothing and answer "unknown": the worker keeps its slot and the
   * next server's tick launches it with the same token. Used while the server shuts down. Waits for
   * a launch under way: once this returns, every worker process this platform will ever have
   * started is among the {@link #liveWorkers}.
   */
  public synchronized void stopLaunching() {
    launching = false;
  }

  @Override
  public synchronized LaunchOutcome launch(WorkerLaunch launch) {
    Optional<LocalTaskId> launched = known.launched(launch.token());
    if (launched.isPresent()) {
      return new LaunchOutcome.Started(launched.get().toString());
    }
    if (!launching) {
      return new LaunchOutcome.Unknown(
          "the local server is shutting down; its next start launches this worker");
    }
    Process process;
    Path log = dirs.workerLogs().resolve("worker-" + launch.workerId() + ".log");
    try {
      process = starter.start(launch, log);
    } catch (IOException | RuntimeException e) {
      return new LaunchOutcome.NotStarted(
          "The local worker process could not be started ("
              + e.getMessage()
              + "); check that "
              + command.java()
              + " runs and that "
              + dirs.workerLogs()
              + " is writable, then resubmit.",
          false);
    }
    Optional<Instant> start = process.info().startInstant();
    if (start.isEmpty()) {
      // Without a start time a reused pid could pass for this worker later: do not run it.
      process.destroyForcibly();
      return new LaunchOutcome.NotStarted(
          "could not read the start time of worker process " + process.pid(), true);
    }
    LocalTaskId id = LocalTaskId.of(host, process.toHandle(), start.get());
    known.add(id, launch.workerId(), launch.token(), process);
    // Spot is a label here, never short of capacity: the queue recorded it (chooseCapacity), the
    // ledger bills it at Spot prices, and only such a worker can be reclaimed (bq reclaim).
    LOG.log(
        Level.INFO,
        "worker {0} started as process {1} in slot {2} on {3}; log {4}",
        launch.workerId(),
        Long.toString(process.pid()),
        launch.slot(),
        launch.capacity().spot() ? "spot" : "on-demand",
        log);
    return new LaunchOutcome.Started(id.toString());
  }

  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    Map<String, TaskState> states = new LinkedHashMap<>();
    for (String taskId : taskIds) {
      TaskState state =
          LocalTaskId.parse(taskId)
              .filter(id -> id.host().equals(host))
              .map(WorkerProcesses::stateOf)
              .orElse(new TaskState.Missing());
      Optional<LocalTaskId> id = LocalTaskId.parse(taskId);
      if (state instanceof TaskState.Stopped && id.isPresent() && known.exiting(id.get())) {
        // Its exit is being handled: its jobs' programs are being killed, then the exit is
        // delivered.
        state = new TaskState.Running();
      } else if (state instanceof TaskState.Stopped stopped
          && id.isPresent()
          && known.wasReclaimed(id.get())) {
        state = new TaskState.Stopped(KnownWorkers.reclaimEvidence(stopped.reason()));
      }
      states.put(taskId, state);
    }
    return states;
  }

  @Override
  public boolean canCheck(String taskId) {
    return LocalTaskId.parse(taskId).map(id -> id.host().equals(host)).orElse(false);
  }

  @Override
  public void stop(String taskId, String reason) {
    running(taskId).ifPresent(id -> terminate(id, "stopping", reason, KILL_AFTER_STOP));
  }

  /**
   * A simulated Fargate Spot reclaim, what AWS does to a Spot task: SIGTERM now (the two-minute
   * warning, which the worker passes to its job's program like any stop), SIGKILL after {@code
   * grace} if the worker still runs, and its exit's evidence carries the stop code {@value
   * TaskState#SPOT_INTERRUPTION} first, as an ECS reclaim's does ({@code build_stop_is_reclaim}).
   * Whether the worker runs on Spot is the caller's to check (the worker's row says). False if the
   * task is not a process running on this host: nothing was sent.
   */
  public boolean reclaim(String taskId, Duration grace) {
    Optional<LocalTaskId> id = running(taskId);
    // Marked before the signal: a worker that exits at once still leaves a reclaim's evidence.
    id.ifPresent(
        t -> {
          known.reclaimed(t);
          terminate(t, "reclaiming", "a simulated Spot reclaim", grace);
        });
    return id.isPresent();
  }

  private Optional<LocalTaskId> running(String taskId) {
    return LocalTaskId.parse(taskId)
        .filter(t -> t.host().equals(host))
        .filter(t -> WorkerProcesses.stateOf(t) instanceof TaskState.Running);
  }

  /** SIGTERM, and SIGKILL after {@code killAfter} if the same process still runs. */
  private void terminate(LocalTaskId id, String doing, String reason, Duration killAfter) {
    LOG.log(
        Level.INFO,
        "{0} worker process {1}: {2}; SIGKILL in {3} ms if it still runs",
        doing,
        Long.toString(id.pid()),
        reason,
        killAfter.toMillis());
    ProcessHandle.of(id.pid()).ifPresent(ProcessHandle::destroy);
    killer.schedule(
        () -> {
          if (WorkerProcesses.stateOf(id) instanceof TaskState.Running) {
            ProcessHandle.of(id.pid()).ifPresent(ProcessHandle::destroyForcibly);
          }
        },
        killAfter.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** The worker processes this platform knows to be running. */
  public List<LocalTaskId> liveWorkers() {
    return known.running();
  }

  /**
   * The ids of the worker processes this platform knows, running or with their exit not yet
   * delivered.
   */
  public java.util.Set<Long> knownWorkerIds() {
    return known.workerIds();
  }

  /**
   * Waits up to {@code timeout} for every known worker process to exit and its evidence to be
   * delivered; true if they all did.
   */
  public boolean awaitWorkersExited(Duration timeout) throws InterruptedException {
    return known.awaitExited(timeout);
  }

  /**
   * Stops every known worker process the way the platform's {@link #stop} does, all at once:
   * SIGTERM (each stops its job within its stop timeout, records an interruption that keeps the
   * job's progress, takes no next job and exits), up to {@code grace} for them to exit, then
   * SIGKILL to those left; returns once every exit has been delivered (each after its jobs'
   * leftovers are killed), or after a bounded wait, false if some were not. For a server that shuts
   * down: call {@link #stopLaunching} first.
   */
  public boolean stopWorkers(Duration grace) throws InterruptedException {
    return known.stopAll(grace);
  }

  /**
   * Stops delivering evidence; worker processes not stopped by {@link #stopWorkers} are left
   * running.
   */
  @Override
  public void close() {
    stopLaunching();
    known.close();
    killer.shutdownNow();
  }
}
