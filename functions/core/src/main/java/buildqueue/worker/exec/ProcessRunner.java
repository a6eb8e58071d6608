package buildqueue.worker.exec;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.worker.CommandRunner;
import buildqueue.worker.JobCancelledException;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.RunningJobs;
import buildqueue.worker.WorkerFencedOffException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs a command kind's job as a program on this worker (docs/architecture.md §10.1), the way a Buildkite agent
 * runs a step:
 *
 * <ul>
 *   <li><b>Start</b>: a fresh {@link JobDirectory} per attempt under the base directory; the
 *       program in a session and process group of its own ({@link SetsidLauncher}), in {@code
 *       work/}, stdin from {@code /dev/null}, with an allowlisted environment ({@link
 *       JobEnvironment}): no token, no credentials. The payload is a file, never an argument.
 *   <li><b>While it runs</b>, every {@link Limits#pollInterval}: its stdout and stderr, line by
 *       line, into the job's log (two threads); new lines of its control file ({@link
 *       ControlFile}): progress, follow-ups, an error message; {@link JobContext#checkIn}, which
 *       writes what is due and says whether the owner cancelled.
 *   <li><b>Outcome</b>: exit 0 succeeds; one of the kind's {@code retryExitCodes} is an
 *       interruption; any other exit fails with the job's {@code error}, else the last lines of its
 *       stderr, else the exit code; a signal fails naming it. A timeout or a cancel sends SIGTERM to
 *       every process of the job, waits the kind's {@code cancelGracePeriod}, then sends SIGKILL.
 *       A worker told to stop ({@link JobContext.CheckIn#STOP_REQUESTED}, its SIGTERM) does the same
 *       with the grace cut to {@link JobContext#stopTimeLeft}, and the job is interrupted unless
 *       its program exits 0 meanwhile. A worker that lost the job kills it at once.
 *   <li><b>Nothing outlives it</b>: before {@link #run} returns, every process of the job's session
 *       (daemons it started included) is gone, and its directory is deleted.
 * </ul>
 *
 * <p>What the worker did is written to the job's log as {@link JobLog.Stream#WORKER} lines.
 */
public final class ProcessRunner implements CommandRunner {
  private static final System.Logger LOG = System.getLogger(ProcessRunner.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Where job directories are made; default {@code java.io.tmpdir}. */
  public static final String WORK_DIR = "BUILDQUEUE_WORK_DIR";

  /**
   * What the runner allows a job and how closely it watches it.
   *
   * @param pollInterval how often the runner looks at the program, its control file and the queue
   *     (default 100 ms; {@link JobContext#checkIn} paces the statements itself)
   * @param maxFollowUps follow-up jobs one job may submit; one more fails it (default 100)
   * @param maxControlLineBytes a longer control line is ignored, not kept (default 64 KiB)
   * @param errorLines the last lines of stderr that become a failed job's error (default 10)
   * @param errorChars the longest error message a job gets (default 2,000 characters)
   * @param outputDrain how long to wait, once the job's processes are gone, for the rest of their
   *     output (default 2 s); a process outside the session that holds the output open is not
   *     waited for longer
   * @param killPatience how long SIGKILL is repeated until the last process of the job is gone
   *     (default 30 s; only a process stuck in the kernel takes long)
   */
  public record Limits(
      Duration pollInterval, int maxFollowUps, int maxControlLineBytes, int errorLines, int errorChars,
      Duration outputDrain, Duration killPatience) {

    public Limits {
      requirePositive(pollInterval, "pollInterval");
      requirePositive(outputDrain, "outputDrain");
      requirePositive(killPatience, "killPatience");
      if (maxFollowUps < 0) {
        throw new IllegalArgumentException("maxFollowUps must be 0 or more, was " + maxFollowUps);
      }
      if (maxControlLineBytes < 1024) {
        throw new IllegalArgumentException("maxControlLineBytes must be at least 1024, was " + maxControlLineBytes);
      }
      if (errorLines < 1 || errorChars < 100) {
        throw new IllegalArgumentException("errorLines must be at least 1 and errorChars at least 100, were "
            + errorLines + " and " + errorChars);
      }
    }

    public static Limits defaults() {
      return new Limits(Duration.ofMillis(100), 100, 64 * 1024, 10, 2_000, Duration.ofSeconds(2),
          Duration.ofSeconds(30));
    }

    public Limits withMaxFollowUps(int n) {
      return new Limits(pollInterval, n, maxControlLineBytes, errorLines, errorChars, outputDrain, killPatience);
    }

    private static void requirePositive(Duration d, String name) {
      if (d == null || d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be a positive duration, was " + d);
      }
    }
  }

  private final Path baseDir;
  private final Map<String, String> workerEnvironment;
  private final ProcessLauncher launcher;
  private final MonotonicClock clock;
  private final Limits limits;

  /**
   * @param baseDir where each attempt's directory is made
   * @param workerEnvironment the worker's own environment, of which a job gets only the allowlisted
   *     variables ({@link JobEnvironment#FROM_WORKER})
   */
  public ProcessRunner(
      Path baseDir, Map<String, String> workerEnvironment, ProcessLauncher launcher, MonotonicClock clock, Limits limits) {
    this.baseDir = baseDir.toAbsolutePath();
    this.workerEnvironment = Map.copyOf(workerEnvironment);
    this.launcher = Objects.requireNonNull(launcher, "launcher");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.limits = Objects.requireNonNull(limits, "limits");
  }

  /**
   * The runner of a worker process (local or Fargate): job directories under {@value #WORK_DIR}
   * (default {@code java.io.tmpdir}), programs started through {@code setsid}.
   *
   * @throws buildqueue.BuildQueueException {@code setsid} is missing or does not behave as needed
   */
  public static ProcessRunner forThisWorker(Map<String, String> env) {
    String dir = env.get(WORK_DIR);
    Path base = dir == null || dir.isBlank() ? Path.of(System.getProperty("java.io.tmpdir")) : Path.of(dir.strip());
    return new ProcessRunner(base, env, SetsidLauncher.find(env), MonotonicClock.SYSTEM, Limits.defaults());
  }

  @Override
  public JobOutcome run(CommandKind kind, JobContext context) throws InterruptedException {
    JobLog log = context.log();
    JobDirectory dir;
    try {
      dir = JobDirectory.create(baseDir, context.jobId(), context.attempt(), payloadJson(context.payload()));
      try {
        launcher.prepare(dir);
      } catch (IOException | RuntimeException e) {
        dir.delete();
        throw new IOException("cannot hand it to the job's user (" + e.getMessage() + ")", e);
      }
    } catch (IOException e) {
      String why = "the worker could not make the job's directory under " + baseDir + ": " + e.getMessage();
      log.line(JobLog.Stream.WORKER, why);
      return JobOutcome.interrupted(why);
    }
    try {
      return new Attempt(kind, context, dir).run();
    } finally {
      if (!dir.delete()) {
        LOG.log(Level.WARNING, "job {0}: could not delete all of {1}", context.jobId(), dir.root());
        log.line(JobLog.Stream.WORKER, "could not delete all of the job's directory " + dir.root());
      }
    }
  }

  private static byte[] payloadJson(JsonNode payload) {
    try {
      return JSON.writeValueAsBytes(payload == null ? JSON.createObjectNode() : payload);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a parsed payload is always writable", e);
    }
  }

  /** One attempt of one job: its program from start to the last of its processes. */
  private final class Attempt {
    private final CommandKind kind;
    private final JobContext context;
    private final JobDirectory dir;
    private final JobLog log;
    private final ControlFile control;
    private JobProcess process;
    private OutputPump stdout;
    private OutputPump stderr;
    private boolean exited;
    private Integer latestProgress;
    private String jobError;
    private int followUps;
    /** Why the worker stopped the program, as the job's error; null if it did not (or for a cancel). */
    private String stopFailure;
    private boolean cancelled;
    /** The worker was told to stop: the job is interrupted unless the program succeeds first. */
    private boolean stopping;
    private long terminatedAt = -1;
    /** When SIGKILL follows the SIGTERM: the kind's grace after it, or sooner for a worker's stop. */
    private long killAt = Long.MAX_VALUE;
    private boolean killed;

    Attempt(CommandKind kind, JobContext context, JobDirectory dir) {
      this.kind = kind;
      this.context = context;
      this.dir = dir;
      this.log = context.log();
      this.control = new ControlFile(dir.control(), limits.maxControlLineBytes());
    }

    JobOutcome run() throws InterruptedException {
      Map<String, String> env = JobEnvironment.of(workerEnvironment, kind, context, dir);
      // Registered before the start: a halt while the program starts finds it by its session file.
      AtomicReference<JobProcess> started = new AtomicReference<>();
      try (RunningJobs.Registration ignored = RunningJobs.add(() -> {
        JobProcess p = started.get();
        if (p != null) {
          p.kill();
        } else {
          JobSession.readFrom(dir.session()).ifPresent(s -> JobSession.signal(s.members(), true));
        }
      })) {
        try {
          process = launcher.start(new ProcessLauncher.Spec(kind.command(), dir.work(), env, dir.session()));
          started.set(process);
        } catch (IOException | RuntimeException e) {
          String why = "the worker could not start " + show(kind.command()) + ": " + e.getMessage();
          say(why);
          return JobOutcome.interrupted(why);
        }
        say("started: " + show(kind.command()) + " (attempt " + context.attempt() + ")");
        String name = "job-" + context.jobId() + "-";
        stdout = new OutputPump(process.stdout(), log, JobLog.Stream.STDOUT, name + "stdout", limits.errorLines(),
            limits.errorChars()).start();
        stderr = new OutputPump(process.stderr(), log, JobLog.Stream.STDERR, name + "stderr", limits.errorLines(),
            limits.errorChars()).start();
        try {
          watch();
          ProgramExit exit = process.exit();
          say(exit.describe());
          endLeftovers();
          handle(control.read(true));
          if (latestProgress != null) {
            context.finalProgress(latestProgress); // a last line read only now counts too
          }
          drainOutput();
          return outcome(exit);
        } catch (WorkerFencedOffException e) {
          say("this worker no longer owns the job: SIGKILL sent to the job's processes");
          killAtOnce();
          throw e;
        } catch (InterruptedException | RuntimeException | Error e) {
          killAtOnce();
          throw e;
        }
      }
    }

    /** Until the program exits: its control lines, the timeout, the queue's check-in. */
    private void watch() throws InterruptedException {
      long startedAt = clock.nanoTime();
      while (true) {
        exited = process.awaitExit(limits.pollInterval());
        handle(control.read(false));
        if (exited) {
          if (latestProgress != null) {
            context.finalProgress(latestProgress);
          }
          return;
        }
        long now = clock.nanoTime();
        if (terminatedAt < 0 && now - startedAt >= kind.timeout().toNanos()) {
          stopFailure = "timed out after " + human(kind.timeout());
          terminate(stopFailure);
        }
        JobContext.CheckIn said = context.checkIn(latestProgress);
        if (said == JobContext.CheckIn.CANCEL_REQUESTED && !cancelled) {
          cancelled = true;
          if (terminatedAt < 0) {
            terminate("cancel requested");
          }
        } else if (said == JobContext.CheckIn.STOP_REQUESTED && !stopping) {
          stopping = true;
          Duration left = context.stopTimeLeft();
          if (terminatedAt < 0) {
            terminate("the worker is stopping");
          }
          long stopKillAt = clock.nanoTime() + left.toNanos();
          if (stopKillAt < killAt) {
            killAt = stopKillAt;
            say("the worker must be gone within its stop timeout: SIGKILL in " + human(left) + " at the latest");
          }
        }
        if (terminatedAt >= 0 && !killed && clock.nanoTime() >= killAt) {
          say("SIGKILL after " + human(Duration.ofMillis((killAt - terminatedAt) / 1_000_000)) + " grace");
          process.kill();
          killed = true;
        }
      }
    }

    private void handle(List<ControlMessage> messages) {
      for (ControlMessage m : messages) {
        if (m instanceof ControlMessage.Progress p) {
          latestProgress = p.progress();
        } else if (m instanceof ControlMessage.Error e) {
          jobError = cut(e.message(), limits.errorChars());
        } else if (m instanceof ControlMessage.FollowUp f) {
          followUp(f);
        } else if (m instanceof ControlMessage.BadFollowUp b) {
          refuse("follow-up refused", "control line " + b.line() + ": " + b.reason());
        } else if (m instanceof ControlMessage.Ignored i) {
          say("control line " + i.line() + " ignored (" + i.reason() + ")" + (i.text().isEmpty() ? "" : ": " + i.text()));
        } else if (m instanceof ControlMessage.Notice n) {
          say(n.message());
        }
      }
    }

    private void followUp(ControlMessage.FollowUp f) {
      if (stopFailure != null || cancelled) {
        say("control line " + f.line() + ": follow-up not submitted: the job is being stopped");
        return;
      }
      if (followUps >= limits.maxFollowUps()) {
        refuse("too many follow-ups", "the job submitted more than " + limits.maxFollowUps()
            + " follow-up jobs (control line " + f.line() + "); a job may submit at most " + limits.maxFollowUps());
        return;
      }
      try {
        context.enqueueFollowUp(f.kind(), f.payload());
        followUps++;
      } catch (IllegalArgumentException e) {
        refuse("follow-up refused", "control line " + f.line() + ": " + e.getMessage());
      }
    }

    /** A follow-up the job meant but cannot have: the job fails with why, after its program stops. */
    private void refuse(String what, String why) {
      if (stopFailure != null) {
        return;
      }
      stopFailure = cut("The job's follow-up could not be submitted: " + why, limits.errorChars());
      say(what + ": " + why);
      if (!exited) {
        terminate(what);
      }
    }

    private void terminate(String why) {
      process.terminate();
      terminatedAt = clock.nanoTime();
      killAt = terminatedAt + kind.cancelGracePeriod().toNanos();
      say(why + ": SIGTERM sent to the job's processes");
    }

    /**
     * The program has exited; what it left running (a daemon, a {@code sleep &}) is ended the same
     * way: SIGTERM, the grace period, SIGKILL.
     */
    private void endLeftovers() throws InterruptedException {
      int left = process.remaining();
      if (left == 0) {
        return;
      }
      if (terminatedAt < 0) {
        process.terminate();
        terminatedAt = clock.nanoTime();
        killAt = terminatedAt + kind.cancelGracePeriod().toNanos();
        say(left + (left == 1 ? " process" : " processes") + " the job left running: SIGTERM sent");
      }
      while (process.remaining() > 0 && clock.nanoTime() < killAt) {
        clock.sleep(limits.pollInterval());
      }
      if (process.remaining() > 0) {
        if (!killed) {
          say("SIGKILL after " + human(Duration.ofMillis((killAt - terminatedAt) / 1_000_000)) + " grace");
        }
        killed = true;
        awaitKilled();
      }
    }

    /** SIGKILL, repeated (a process may fork meanwhile) until none is left or patience runs out. */
    private void awaitKilled() throws InterruptedException {
      long end = clock.nanoTime() + limits.killPatience().toNanos();
      while (process.kill() > 0 || process.remaining() > 0) {
        if (clock.nanoTime() >= end) {
          int left = process.remaining();
          if (left > 0) {
            say(left + " of the job's processes did not die of SIGKILL within " + human(limits.killPatience()));
            LOG.log(Level.ERROR, "job {0}: {1} processes survived SIGKILL", context.jobId(), left);
          }
          return;
        }
        clock.sleep(Duration.ofMillis(10));
      }
    }

    /** The worker must stop now (it lost the job, it failed): SIGKILL and no grace. */
    private void killAtOnce() {
      boolean interrupted = Thread.interrupted();
      try {
        killed = true;
        awaitKilled();
      } catch (InterruptedException e) {
        interrupted = true;
        process.kill();
      } finally {
        if (stdout != null) {
          stdout.detach();
          stderr.detach();
        }
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }

    /** The rest of the output, now that no process of the job can write more. */
    private void drainOutput() throws InterruptedException {
      boolean done = stdout.awaitEnd(limits.outputDrain()) & stderr.awaitEnd(limits.outputDrain());
      if (!done) {
        stdout.detach();
        stderr.detach();
        say("the job's output is still held open by a process outside its session; it is no longer read");
      }
    }

    private JobOutcome outcome(ProgramExit exit) {
      if (cancelled) {
        return JobOutcome.failed("cancelled by its owner"); // the worker loop ends it cancelled
      }
      if (stopFailure != null) {
        return JobOutcome.failed(stopFailure);
      }
      if (stopping && !(exit instanceof ProgramExit.Exited e0 && e0.code() == 0)) {
        return interrupted("the worker was told to stop (" + exit.describe() + ")");
      }
      if (exit instanceof ProgramExit.Exited e) {
        if (e.code() == 0) {
          return JobOutcome.succeeded();
        }
        if (kind.retryExitCodes().contains(e.code())) {
          return interrupted("exit code " + e.code() + ", a retry code of kind " + kind.name());
        }
        return JobOutcome.failed(jobError != null ? jobError : stderrTail().orElse(exit.describe()));
      }
      ProgramExit.Signalled s = (ProgramExit.Signalled) exit;
      if (kind.retryExitCodes().contains(128 + s.signal())) {
        return interrupted("exit code " + (128 + s.signal()) + " (" + s.describe() + "), a retry code of kind "
            + kind.name());
      }
      return JobOutcome.failed(jobError != null ? s.describe() + ": " + jobError : s.describe());
    }

    /**
     * The job goes back to its lane. Its latest progress, which it passed to every check-in, goes
     * with the interruption's statement: where the next attempt resumes, and what resets its count
     * of interruptions without progress.
     */
    private JobOutcome interrupted(String reason) {
      return JobOutcome.interrupted(reason);
    }

    private java.util.Optional<String> stderrTail() {
      List<String> lines = stderr.lastLines();
      if (lines.isEmpty()) {
        return java.util.Optional.empty();
      }
      StringBuilder tail = new StringBuilder();
      for (int i = lines.size() - 1; i >= 0; i--) {
        String line = lines.get(i);
        if (tail.length() + line.length() + 1 > limits.errorChars()) {
          if (tail.length() == 0) {
            tail.append("…").append(line, Math.max(0, line.length() - limits.errorChars() + 1), line.length());
          }
          break;
        }
        tail.insert(0, tail.length() == 0 ? line : line + "\n");
      }
      String text = tail.toString().strip();
      return text.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(text);
    }

    private void say(String text) {
      log.line(JobLog.Stream.WORKER, text);
    }
  }

  /** A command as a person would type it. */
  static String show(List<String> command) {
    StringBuilder b = new StringBuilder();
    for (String arg : command) {
      if (b.length() > 0) {
        b.append(' ');
      }
      b.append(arg.isEmpty() || arg.matches(".*[\\s'\"\\\\$`].*") ? "'" + arg.replace("'", "'\\''") + "'" : arg);
    }
    return b.toString();
  }

  /** "15m", "10s", "1h30m", "1.5s", "300ms". */
  static String human(Duration d) {
    long millis = d.toMillis();
    if (millis < 1000) {
      return millis + "ms";
    }
    StringBuilder b = new StringBuilder();
    if (d.toHours() > 0) {
      b.append(d.toHours()).append('h');
    }
    if (d.toMinutesPart() > 0) {
      b.append(d.toMinutesPart()).append('m');
    }
    if (d.toSecondsPart() > 0 || d.toMillisPart() > 0) {
      b.append(d.toSecondsPart());
      if (d.toMillisPart() > 0) {
        b.append('.').append(String.format("%03d", d.toMillisPart()).replaceAll("0+$", ""));
      }
      b.append('s');
    }
    return b.toString();
  }

  private static String cut(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max - 1) + "…";
  }
}
