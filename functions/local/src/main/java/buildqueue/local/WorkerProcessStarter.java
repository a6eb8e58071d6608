package buildqueue.local;

import buildqueue.core.QueueConfig;
import buildqueue.platform.WorkerLaunch;
import buildqueue.worker.WorkerEnvironment;
import buildqueue.worker.exec.JobUser;
import buildqueue.worker.exec.LocalJobLogSink;
import buildqueue.worker.exec.ProcessRunner;
import buildqueue.worker.exec.SetsidLauncher;
import java.io.File;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Starts a worker's process: its command line (in a session of its own where util-linux {@code
 * setsid} is found, labelled for a restarted server) and its environment (what a JVM and its jobs'
 * programs need of the server's, then the worker's own settings; never the rest).
 *
 * @param home the label of the server's work directory, on each of its workers' command lines
 * @param setsid util-linux's {@code setsid}, checked to run a program in place ({@link
 *     #findSetsid}); none where there is no such thing
 */
record WorkerProcessStarter(
    WorkerCommand command,
    LocalProcessPlatform.WorkerDatabase database,
    QueueConfig config,
    LocalProcessPlatform.Directories dirs,
    Optional<Path> kindsFile,
    long maxLogBytes,
    Optional<String> jobUser,
    String home,
    Optional<Path> setsid) {
  private static final System.Logger LOG = System.getLogger(WorkerProcessStarter.class.getName());

  /**
   * What a worker gets between SIGTERM and SIGKILL when it is stopped: it stops its job within
   * that.
   */
  static final Duration KILL_AFTER_STOP = Duration.ofSeconds(10);

  /** Starts {@code launch}'s worker, its output appended to {@code log}. */
  Process start(WorkerLaunch launch, Path log) throws IOException {
    if (setsid.isPresent() && !runnable(command.java())) {
      // setsid would start and then fail to exec it: say so now, as starting it directly would.
      throw new IOException(
          "Cannot run program \"" + command.java() + "\": not an executable file");
    }
    Files.createDirectories(dirs.workerLogs());
    ProcessBuilder builder =
        new ProcessBuilder(commandLine(launch))
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    Map<String, String> env = builder.environment();
    // Never the server's whole environment (an operator's AWS keys, PGPASSWORD): what a JVM and
    // its jobs' programs need, then the worker's own settings.
    Map<String, String> inherited = Map.copyOf(env);
    env.clear();
    inherited.forEach(
        (name, value) -> {
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
    env.put(
        WorkerEnvironment.DEADLINE_MARGIN_MS, Long.toString(config.deadlineMargin().toMillis()));
    env.put(
        WorkerEnvironment.WORKER_LIFETIME_MS, Long.toString(config.workerLifetime().toMillis()));
    env.put(WorkerEnvironment.SHARED_ORDER, config.sharedOrder().label());
    // Removed when there is none, so a variable the server inherited cannot give workers other
    // kinds than the API's.
    putOrRemove(env, WorkerEnvironment.KINDS_FILE, kindsFile.map(Path::toString).orElse(null));
    env.put(ProcessRunner.WORK_DIR, dirs.workOf(launch.workerId()).toAbsolutePath().toString());
    // What stop() gives a worker between SIGTERM and SIGKILL: it stops its job within that.
    env.put(WorkerEnvironment.STOP_TIMEOUT_SECONDS, Long.toString(KILL_AFTER_STOP.toSeconds()));
    env.put(LocalJobLogSink.JOB_LOG_DIR, dirs.jobLogs().toAbsolutePath().toString());
    env.put(WorkerEnvironment.ARTIFACT_DIR, dirs.artifacts().toAbsolutePath().toString());
    env.put(WorkerEnvironment.MAX_LOG_BYTES, Long.toString(maxLogBytes));
    return builder.start();
  }

  /**
   * The server's variables a worker gets: {@code PATH} (its jobs' programs are found on it), the
   * locale ({@code LANG}, {@code LC_*}) and {@code TZ} (jobs' output and times read as the
   * operator's), {@code JAVA_HOME} (a job kind may run a JDK tool), {@code HOME} and {@code USER}
   * (the JVM's defaults; a job gets its own {@code HOME}). Every {@code BUILDQUEUE_*} setting a
   * worker reads is set by {@link #start} itself, so none is inherited.
   */
  static boolean passedToWorkers(String name) {
    return name.equals("PATH")
        || name.equals("LANG")
        || name.startsWith("LC_")
        || name.equals("TZ")
        || name.equals("JAVA_HOME")
        || name.equals("HOME")
        || name.equals("USER");
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
    cmd.add(WorkerProcesses.WORKER_PROPERTY + launch.workerId());
    cmd.add(WorkerProcesses.LABEL_PROPERTY + WorkerProcesses.label(launch.token()));
    cmd.add(WorkerProcesses.HOME_PROPERTY + home);
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
    return Stream.of(path.split(File.pathSeparator))
        .filter(d -> !d.isEmpty())
        .anyMatch(d -> Files.isExecutable(Path.of(d, program)));
  }

  static Optional<Path> findSetsid() {
    try {
      return Optional.of(SetsidLauncher.find(System.getenv()).setsid());
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "workers start in the server's process group, so a terminal's Ctrl-C reaches them too: "
              + e.getMessage());
      return Optional.empty();
    }
  }

  private static void putOrRemove(Map<String, String> env, String name, String value) {
    if (value == null) {
      env.remove(name);
    } else {
      env.put(name, value);
    }
  }
}
