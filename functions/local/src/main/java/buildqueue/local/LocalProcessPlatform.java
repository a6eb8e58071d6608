package buildqueue.local;

import buildqueue.core.QueueConfig;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import buildqueue.worker.JobLog;
import buildqueue.worker.WorkerEnvironment;
import buildqueue.worker.exec.JobUser;
import buildqueue.worker.exec.LeftoverJobs;
import buildqueue.worker.exec.LocalJobLogSink;
import buildqueue.worker.exec.ProcessRunner;
import buildqueue.worker.exec.SetsidLauncher;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Workers as child processes on this host, each a JVM running {@link
 * buildqueue.worker.WorkerMain} over JDBC. A task id is {@link LocalTaskId} (host, pid, start
 * time), so a check never mistakes a reused pid for our worker, and a worker on another host is
 * never checked from here ({@link #canCheck}): the lease decides for it.
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
 */
public final class LocalProcessPlatform implements WorkerPlatform, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(LocalProcessPlatform.class.getName());
  static final String LABEL_PROPERTY = "-Dbuildqueue.launch=";
  static final String WORKER_PROPERTY = "-Dbuildqueue.worker=";
  /**
   * Which server's workers these are (a label of its work directory): a server adopts only its own
   * survivors, never the workers of another server on the same host, whose queue is not its own.
   */
  static final String HOME_PROPERTY = "-Dbuildqueue.home=";
  private static final Duration KILL_AFTER_STOP = Duration.ofSeconds(10);
  /** How long SIGKILL is repeated on a dead worker's job processes before its exit is delivered anyway. */
  private static final Duration LEFTOVER_PATIENCE = Duration.ofSeconds(10);

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
   * @param workerLogs each worker's own output (its diagnostics, not its jobs'), {@code worker-<id>.log}
   * @param work each worker's job directories, {@code worker-<id>/} ({@value ProcessRunner#WORK_DIR})
   * @param jobLogs each job's whole log, {@code job-<id>.log} ({@value LocalJobLogSink#JOB_LOG_DIR})
   */
  public record Directories(Path workerLogs, Path work, Path jobLogs) {
    /** {@code workers/}, {@code work/} and {@code jobs/} in the data directory. */
    public static Directories under(Path dataDir) {
      return new Directories(dataDir.resolve("workers"), dataDir.resolve("work"), dataDir.resolve("jobs"));
    }

    Path workOf(long workerId) {
      return work.resolve("worker-" + workerId);
    }
  }

  /** A worker process this platform knows: launched by it, or left running by a previous server. */
  private record Child(LocalTaskId id, Long workerId, UUID token, ProcessHandle handle) {}

  private final WorkerCommand command;
  private final WorkerDatabase database;
  private final QueueConfig config;
  private final Directories dirs;
  private final String host;
  private final Optional<Path> kindsFile;
  private final long maxLogBytes;
  private final Optional<String> jobUser;
  private final Map<UUID, Child> byToken = new ConcurrentHashMap<>();
  private final Map<String, Child> adoptedByLabel;
  private final Map<LocalTaskId, Child> live = new ConcurrentHashMap<>();
  /** Known workers whose process is gone and whose jobs' leftovers are gone too. */
  private final java.util.Set<LocalTaskId> cleared = ConcurrentHashMap.newKeySet();
  private final ExecutorService evidence = Executors.newSingleThreadExecutor(daemon("buildqueue-worker-exits"));
  private final ScheduledExecutorService killer = Executors.newSingleThreadScheduledExecutor(daemon("buildqueue-worker-kill"));
  private volatile StopListener listener = (taskId, workerId, token, reason) -> {};
  private volatile boolean launching = true;
  /** util-linux's {@code setsid}, checked to run a program in place; none where there is no such thing. */
  private final Optional<Path> setsid = findSetsid();

  /** @param kindsFile the kind catalogue each worker loads (an absolute path), or none: only {@code demo} */
  public LocalProcessPlatform(WorkerCommand command, WorkerDatabase database, QueueConfig config, Directories dirs,
      String host, Optional<Path> kindsFile) {
    this(command, database, config, dirs, host, kindsFile, JobLog.DEFAULT_MAX_LOG_BYTES, Optional.empty());
  }

  /**
   * @param maxLogBytes each job attempt's output its worker keeps at most ({@link JobLog})
   * @param jobUser the user the workers run their jobs' programs as ({@link JobUser}); none: their own
   */
  public LocalProcessPlatform(WorkerCommand command, WorkerDatabase database, QueueConfig config, Directories dirs,
      String host, Optional<Path> kindsFile, long maxLogBytes, Optional<String> jobUser) {
    this.maxLogBytes = maxLogBytes;
    this.jobUser = jobUser;
    this.command = command;
    this.database = database;
    this.config = config;
    this.dirs = dirs;
    this.host = host;
    this.kindsFile = kindsFile.map(Path::toAbsolutePath);
    this.adoptedByLabel = adoptSurvivors();
    clearDeadWorkersJobs();
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
    this.listener = listener;
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
    Child known = byToken.get(launch.token());
    if (known == null) {
      known = adoptedByLabel.get(label(launch.token()));
    }
    if (known != null) {
      return new LaunchOutcome.Started(known.id().toString());
    }
    if (!launching) {
      return new LaunchOutcome.Unknown("the local server is shutting down; its next start launches this worker");
    }
    Process process;
    Path log = dirs.workerLogs().resolve("worker-" + launch.workerId() + ".log");
    try {
      if (setsid.isPresent() && !runnable(command.java())) {
        // setsid would start and then fail to exec it: say so now, as starting it directly would.
        throw new IOException("Cannot run program \"" + command.java() + "\": not an executable file");
      }
      Files.createDirectories(dirs.workerLogs());
      ProcessBuilder builder = new ProcessBuilder(commandLine(launch))
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
      Map<String, String> env = builder.environment();
      // Never the server's whole environment (an operator's AWS keys, PGPASSWORD): what a JVM and
      // its jobs' programs need, then the worker's own settings.
      Map<String, String> inherited = Map.copyOf(env);
      env.clear();
      inherited.forEach((name, value) -> {
        if (passedToWorkers(name)) {
          env.put(name, value);
        }
      });
      jobUser.ifPresent(u -> env.put(JobUser.VARIABLE, u));
      env.put(WorkerEnvironment.WORKER_ID, Long.toString(launch.workerId()));
      env.put(WorkerEnvironment.WORKER_TOKEN, launch.token().toString());
      env.put(WorkerEnvironment.DATABASE_URL, database.url());
      putOrRemove(env, WorkerEnvironment.DATABASE_USER, database.user());
      putOrRemove(env, WorkerEnvironment.DATABASE_PASSWORD, database.password());
      env.put(WorkerEnvironment.CHAIN_WINDOW_MS, Long.toString(config.chainWindow().toMillis()));
      env.put(WorkerEnvironment.DEADLINE_MARGIN_MS, Long.toString(config.deadlineMargin().toMillis()));
      env.put(WorkerEnvironment.WORKER_LIFETIME_MS, Long.toString(config.workerLifetime().toMillis()));
      env.put(WorkerEnvironment.SHARED_ORDER, config.sharedOrder().label());
      // Removed when there is none, so a variable the server inherited cannot give workers other kinds than the API's.
      putOrRemove(env, WorkerEnvironment.KINDS_FILE, kindsFile.map(Path::toString).orElse(null));
      env.put(ProcessRunner.WORK_DIR, dirs.workOf(launch.workerId()).toAbsolutePath().toString());
      // What stop() gives a worker between SIGTERM and SIGKILL: it stops its job within that.
      env.put(WorkerEnvironment.STOP_TIMEOUT_SECONDS, Long.toString(KILL_AFTER_STOP.toSeconds()));
      env.put(LocalJobLogSink.JOB_LOG_DIR, dirs.jobLogs().toAbsolutePath().toString());
      env.put(WorkerEnvironment.MAX_LOG_BYTES, Long.toString(maxLogBytes));
      process = builder.start();
    } catch (IOException | RuntimeException e) {
      return new LaunchOutcome.NotStarted(
          "The local worker process could not be started (" + e.getMessage() + "); check that " + command.java()
              + " runs and that " + dirs.workerLogs() + " is writable, then resubmit.", false);
    }
    Optional<Instant> start = process.info().startInstant();
    if (start.isEmpty()) {
      // Without a start time a reused pid could pass for this worker later: do not run it.
      process.destroyForcibly();
      return new LaunchOutcome.NotStarted("could not read the start time of worker process " + process.pid(), true);
    }
    Child child = new Child(LocalTaskId.of(host, process.toHandle(), start.get()), launch.workerId(), launch.token(),
        process.toHandle());
    byToken.put(launch.token(), child);
    live.put(child.id(), child);
    process.onExit().thenAcceptAsync(p -> exited(child, describeExit(p.exitValue())), evidence);
    LOG.log(Level.INFO, "worker {0} started as process {1} in slot {2}; log {3}",
        launch.workerId(), Long.toString(process.pid()), launch.slot(), log);
    return new LaunchOutcome.Started(child.id().toString());
  }

  /**
   * The server's variables a worker gets: {@code PATH} (its jobs' programs are found on it), the
   * locale ({@code LANG}, {@code LC_*}) and {@code TZ} (jobs' output and times read as the
   * operator's), {@code JAVA_HOME} (a job kind may run a JDK tool), {@code HOME} and {@code USER}
   * (the JVM's defaults; a job gets its own {@code HOME}). Every {@code BUILDQUEUE_*} setting a
   * worker reads is set by {@link #launch} itself, so none is inherited.
   */
  static boolean passedToWorkers(String name) {
    return name.equals("PATH") || name.equals("LANG") || name.startsWith("LC_") || name.equals("TZ")
        || name.equals("JAVA_HOME") || name.equals("HOME") || name.equals("USER");
  }

  private List<String> commandLine(WorkerLaunch launch) {
    List<String> cmd = new ArrayList<>();
    // A session of its own: a terminal's Ctrl-C to the server's process group does not reach it.
    setsid.ifPresent(s -> cmd.add(s.toString()));
    cmd.add(command.java());
    cmd.addAll(command.jvmFlags());
    cmd.add("-Djava.util.logging.SimpleFormatter.format=%1$tF %1$tT %4$s %5$s%6$s%n");
    // Labels for ps and for a restarted server; the token itself stays out of the command line,
    // which every local user can read.
    cmd.add(WORKER_PROPERTY + launch.workerId());
    cmd.add(LABEL_PROPERTY + label(launch.token()));
    cmd.add(HOME_PROPERTY + home());
    cmd.add("-cp");
    cmd.add(command.classpath());
    cmd.add(command.mainClass());
    return cmd;
  }

  /** Whether {@code program} names an executable file, as {@code execvp} would find it. */
  private static boolean runnable(String program) {
    if (program.contains("/")) {
      return Files.isExecutable(Path.of(program));
    }
    String path = Optional.ofNullable(System.getenv("PATH")).orElse("");
    return Stream.of(path.split(java.io.File.pathSeparator))
        .filter(d -> !d.isEmpty())
        .anyMatch(d -> Files.isExecutable(Path.of(d, program)));
  }

  private static Optional<Path> findSetsid() {
    try {
      return Optional.of(SetsidLauncher.find(System.getenv()).setsid());
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "workers start in the server's process group, so a terminal's Ctrl-C reaches them too: "
          + e.getMessage());
      return Optional.empty();
    }
  }

  private static String describeExit(int code) {
    if (code == 0) {
      return "worker process exited (code 0)";
    }
    if (code > 128) {
      // A worker that halts itself (its deadline, a demo crash) uses 137 too, like SIGKILL.
      return "worker process ended with code " + code + " (signal " + (code - 128) + ", or it halted itself)";
    }
    return "worker process failed (code " + code + "); see its log";
  }

  private void exited(Child child, String reason) {
    try {
      if (child.workerId() != null) {
        // The slot must not be freed while programs of the worker's jobs may still run.
        clearJobsOf(child.workerId());
      }
      cleared.add(child.id()); // from now on a check reports it stopped too
      listener.stopped(child.id().toString(), child.workerId(), child.token(), reason);
    } catch (RuntimeException e) {
      // The tick's liveness check finds the process gone and delivers the evidence again.
      LOG.log(Level.WARNING, "exit of " + child.id() + " not recorded yet (" + e.getMessage()
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
   * Kills what the jobs of a worker whose process is gone left running, and deletes its work
   * directory. Waits for them to die (bounded): the caller delivers the exit next.
   */
  private void clearJobsOf(long workerId) {
    Path work = dirs.workOf(workerId);
    try {
      LeftoverJobs.Cleared cleared = LeftoverJobs.clear(work, LEFTOVER_PATIENCE);
      if (cleared.killed() > 0) {
        LOG.log(Level.WARNING, "worker {0} left {1} job processes running; sent them SIGKILL{2}", workerId,
            cleared.killed(), cleared.survivors() == 0 ? "" : " (" + cleared.survivors() + " still alive)");
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
      entries.forEach(p -> {
        String name = p.getFileName().toString();
        if (name.matches("worker-[0-9]{1,18}") && !alive.contains(Long.valueOf(name.substring(7)))) {
          dead.add(Long.valueOf(name.substring(7)));
        }
      });
    } catch (IOException e) {
      return; // no work directory yet
    }
    dead.forEach(this::clearJobsOf);
  }

  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    Map<String, TaskState> states = new LinkedHashMap<>();
    for (String taskId : taskIds) {
      TaskState state = LocalTaskId.parse(taskId)
          .filter(id -> id.host().equals(host))
          .map(LocalProcessPlatform::stateOf)
          .orElse(new TaskState.Missing());
      Optional<LocalTaskId> id = LocalTaskId.parse(taskId);
      if (state instanceof TaskState.Stopped && id.isPresent() && live.containsKey(id.get())
          && !cleared.contains(id.get())) {
        // Its exit is being handled: its jobs' programs are being killed, then the exit is delivered.
        state = new TaskState.Running();
      }
      states.put(taskId, state);
    }
    return states;
  }

  static TaskState stateOf(LocalTaskId id) {
    Optional<ProcessHandle> handle = ProcessHandle.of(id.pid());
    if (handle.isEmpty() || !handle.get().isAlive()) {
      return new TaskState.Stopped("worker process " + id.pid() + " is gone");
    }
    Optional<Instant> start = handle.get().info().startInstant();
    if (start.isPresent() && start.get().toEpochMilli() != id.startMillis()) {
      return new TaskState.Stopped("worker process " + id.pid() + " is gone (its pid now belongs to another process)");
    }
    if (isZombie(id.pid())) {
      return new TaskState.Stopped("worker process " + id.pid() + " has exited (not yet reaped)");
    }
    return new TaskState.Running();
  }

  /** An exited process its parent has not reaped still has a pid: it is not running. */
  private static boolean isZombie(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
      int close = stat.lastIndexOf(')');
      char state = close >= 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : '?';
      return state == 'Z' || state == 'X';
    } catch (IOException e) {
      return false; // no /proc (macOS): the pid and start time are the check
    }
  }

  @Override
  public boolean canCheck(String taskId) {
    return LocalTaskId.parse(taskId).map(id -> id.host().equals(host)).orElse(false);
  }

  @Override
  public void stop(String taskId, String reason) {
    Optional<LocalTaskId> id = LocalTaskId.parse(taskId).filter(t -> t.host().equals(host));
    if (id.isEmpty() || !(stateOf(id.get()) instanceof TaskState.Running)) {
      return;
    }
    LOG.log(Level.INFO, "stopping worker process {0}: {1}", Long.toString(id.get().pid()), reason);
    ProcessHandle.of(id.get().pid()).ifPresent(ProcessHandle::destroy);
    killer.schedule(() -> {
      if (stateOf(id.get()) instanceof TaskState.Running) {
        ProcessHandle.of(id.get().pid()).ifPresent(ProcessHandle::destroyForcibly);
      }
    }, KILL_AFTER_STOP.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The worker processes this platform knows to be running. */
  public List<LocalTaskId> liveWorkers() {
    return live.values().stream().filter(c -> c.handle().isAlive()).map(Child::id).toList();
  }

  /** The ids of the worker processes this platform knows, running or with their exit not yet delivered. */
  public java.util.Set<Long> knownWorkerIds() {
    java.util.Set<Long> ids = new java.util.HashSet<>();
    live.values().forEach(c -> ids.add(c.workerId()));
    return ids;
  }

  /**
   * Waits up to {@code timeout} for every known worker process to exit and its evidence to be
   * delivered; true if they all did.
   */
  public boolean awaitWorkersExited(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!live.isEmpty()) {
      if (System.nanoTime() >= deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }

  /**
   * Stops every known worker process the way the platform's {@link #stop} does, all at once: SIGTERM
   * (each stops its job within its stop timeout, records an interruption that keeps the job's
   * progress, takes no next job and exits), up to {@code grace} for them to exit, then SIGKILL to
   * those left; returns once every exit has been delivered (each after its jobs' leftovers are
   * killed), or after a bounded wait, false if some were not. For a server that shuts down: call
   * {@link #stopLaunching} first.
   */
  public boolean stopWorkers(Duration grace) throws InterruptedException {
    List<Child> running = live.values().stream().filter(c -> c.handle().isAlive()).toList();
    for (Child c : running) {
      LOG.log(Level.INFO, "stopping worker process {0} (worker {1}): the server is shutting down",
          Long.toString(c.handle().pid()), c.workerId());
      c.handle().destroy();
    }
    if (awaitWorkersExited(grace)) {
      return true;
    }
    List<Child> left = live.values().stream().filter(c -> c.handle().isAlive()).toList();
    for (Child c : left) {
      LOG.log(Level.WARNING, "worker process {0} did not stop within {1} s; SIGKILL (its job is recovered at the next"
          + " start)", Long.toString(c.handle().pid()), grace.toSeconds());
      c.handle().destroyForcibly();
    }
    // Each exit kills what its jobs left (bounded by LEFTOVER_PATIENCE) before it is delivered.
    return awaitWorkersExited(LEFTOVER_PATIENCE.plusSeconds(5));
  }

  /**
   * Worker processes left by a previous server on this host, found by their label. A relaunch of
   * one of their tokens answers with the running process instead of starting a second one, and
   * their exits are evidence as soon as they happen rather than at the next liveness check.
   */
  private Map<String, Child> adoptSurvivors() {
    Map<String, Child> found = new ConcurrentHashMap<>();
    ProcessHandle.allProcesses().forEach(p -> {
      Optional<String[]> args = arguments(p);
      Optional<Instant> start = p.info().startInstant();
      if (args.isEmpty() || start.isEmpty()) {
        return;
      }
      String label = valueOf(args.get(), LABEL_PROPERTY);
      String worker = valueOf(args.get(), WORKER_PROPERTY);
      if (label == null || worker == null || !worker.matches("[0-9]{1,18}")
          || !home().equals(valueOf(args.get(), HOME_PROPERTY))) {
        return;
      }
      Child child = new Child(LocalTaskId.of(host, p, start.get()), Long.valueOf(worker), null, p);
      found.put(label, child);
      live.put(child.id(), child);
      p.onExit().thenAcceptAsync(gone -> exited(child, "worker process exited (seen after a server restart)"), evidence);
      LOG.log(Level.INFO, "worker {0} (process {1}) is still running from before this server started",
          worker, Long.toString(p.pid()));
    });
    return found;
  }

  /**
   * A process's arguments: from {@code /proc/<pid>/cmdline} where there is one, because the JDK
   * gives up on command lines longer than 4 KiB (a worker's classpath easily is); elsewhere from
   * the JDK.
   */
  static Optional<String[]> arguments(ProcessHandle p) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline"));
      if (raw.length > 0) {
        return Optional.of(new String(raw, StandardCharsets.UTF_8).split("\0"));
      }
    } catch (IOException | RuntimeException e) {
      // no /proc, or the process is gone
    }
    return p.info().arguments();
  }

  private static String valueOf(String[] args, String prefix) {
    for (String a : args) {
      if (a.startsWith(prefix)) {
        return a.substring(prefix.length());
      }
    }
    return null;
  }

  /** This server's label on its workers: its work directory's, so two servers never share one. */
  private String home() {
    return label(dirs.work().toAbsolutePath().normalize().toString());
  }

  /** A label that names a launch without revealing its token. */
  static String label(UUID token) {
    return label(token.toString());
  }

  private static String label(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }

  private static void putOrRemove(Map<String, String> env, String name, String value) {
    if (value == null) {
      env.remove(name);
    } else {
      env.put(name, value);
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  /** Stops delivering evidence; worker processes not stopped by {@link #stopWorkers} are left running. */
  @Override
  public void close() {
    stopLaunching();
    evidence.shutdown();
    killer.shutdownNow();
  }
}
