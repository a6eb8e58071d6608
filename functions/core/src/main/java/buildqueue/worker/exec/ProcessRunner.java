package buildqueue.worker.exec;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.worker.CommandRunner;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobOutcome;
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

/**
 * Runs a command kind's job as a program on this worker (docs/architecture.md §10.1), the way a
 * Buildkite agent runs a step:
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
 *       stderr, else the exit code; a signal fails naming it. A timeout or a cancel sends SIGTERM
 *       to every process of the job, waits the kind's {@code cancelGracePeriod}, then sends
 *       SIGKILL. A worker told to stop ({@link JobContext.CheckIn#STOP_REQUESTED}, its SIGTERM)
 *       does the same with the grace cut to {@link JobContext#stopTimeLeft}, and the job is
 *       interrupted unless its program exits 0 meanwhile. A worker that lost the job kills it at
 *       once.
 *   <li><b>Nothing outlives it</b>: before {@link #run} returns, every process of the job's session
 *       (daemons it started included) is gone, and its directory is deleted.
 * </ul>
 *
 * <p>What the worker did is written to the job's log as {@link JobLog.Stream#WORKER} lines. This
 * class makes and deletes the attempt's directory; {@link ProgramAttempt} watches the program,
 * {@link JobTermination} ends its processes, {@link OutputPump} reads its output.
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
      Duration pollInterval,
      int maxFollowUps,
      int maxControlLineBytes,
      int errorLines,
      int errorChars,
      Duration outputDrain,
      Duration killPatience) {

    public Limits {
      requirePositive(pollInterval, "pollInterval");
      requirePositive(outputDrain, "outputDrain");
      requirePositive(killPatience, "killPatience");
      if (maxFollowUps < 0) {
        throw new IllegalArgumentException("maxFollowUps must be 0 or more, was " + maxFollowUps);
      }
      if (maxControlLineBytes < 1024) {
        throw new IllegalArgumentException(
            "maxControlLineBytes must be at least 1024, was " + maxControlLineBytes);
      }
      if (errorLines < 1 || errorChars < 100) {
        throw new IllegalArgumentException(
            "errorLines must be at least 1 and errorChars at least 100, were "
                + errorLines
                + " and "
                + errorChars);
      }
    }

    public static Limits defaults() {
      return new Limits(
          Duration.ofMillis(100),
          100,
          64 * 1024,
          10,
          2_000,
          Duration.ofSeconds(2),
          Duration.ofSeconds(30));
    }

    public Limits withMaxFollowUps(int n) {
      return new Limits(
          pollInterval, n, maxControlLineBytes, errorLines, errorChars, outputDrain, killPatience);
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
      Path baseDir,
      Map<String, String> workerEnvironment,
      ProcessLauncher launcher,
      MonotonicClock clock,
      Limits limits) {
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
    Path base =
        dir == null || dir.isBlank()
            ? Path.of(System.getProperty("java.io.tmpdir"))
            : Path.of(dir.strip());
    return new ProcessRunner(
        base, env, SetsidLauncher.find(env), MonotonicClock.SYSTEM, Limits.defaults());
  }

  @Override
  public JobOutcome run(CommandKind kind, JobContext context) throws InterruptedException {
    JobLog log = context.log();
    JobDirectory dir;
    try {
      dir =
          JobDirectory.create(
              baseDir, context.jobId(), context.attempt(), payloadJson(context.payload()));
      try {
        launcher.prepare(dir);
      } catch (IOException | RuntimeException e) {
        dir.delete();
        throw new IOException("cannot hand it to the job's user (" + e.getMessage() + ")", e);
      }
    } catch (IOException e) {
      String why =
          "the worker could not make the job's directory under " + baseDir + ": " + e.getMessage();
      log.line(JobLog.Stream.WORKER, why);
      return JobOutcome.interrupted(why);
    }
    try {
      JsonNode parent = context.payload() == null ? null : context.payload().get(ARTIFACTS_OF);
      if (parent != null) {
        String refused = fetchParent(context, dir, parent);
        if (refused != null) {
          log.line(JobLog.Stream.WORKER, refused);
          return JobOutcome.failed(refused);
        }
      }
      JobOutcome outcome =
          new ProgramAttempt(kind, context, dir, workerEnvironment, launcher, clock, limits).run();
      return outcome instanceof JobOutcome.Succeeded
          ? upload(kind, context, dir, outcome)
          : outcome;
    } finally {
      if (!dir.delete()) {
        LOG.log(Level.WARNING, "job {0}: could not delete all of {1}", context.jobId(), dir.root());
        log.line(JobLog.Stream.WORKER, "could not delete all of the job's directory " + dir.root());
      }
    }
  }

  /** The payload key of a follow-up that takes a parent's artifacts (a job id of the same user). */
  public static final String ARTIFACTS_OF = "artifactsOf";

  /**
   * Copies the artifacts the payload's {@value #ARTIFACTS_OF} names before the program starts;
   * answers why not, or null.
   */
  private static String fetchParent(JobContext context, JobDirectory dir, JsonNode parent) {
    if (!parent.canConvertToLong() || !parent.isIntegralNumber() || parent.longValue() < 1) {
      return "the payload's " + ARTIFACTS_OF + " must be a job id (a whole number), not " + parent;
    }
    try {
      java.nio.file.Files.createDirectory(dir.parentArtifacts());
      java.nio.file.Files.setPosixFilePermissions(
          dir.parentArtifacts(),
          java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
      return context.fetchParentArtifacts(parent.longValue(), dir.parentArtifacts());
    } catch (IOException e) {
      return "the worker could not fetch the artifacts of job " + parent + ": " + e.getMessage();
    }
  }

  /**
   * A program that exited 0 has its artifacts uploaded before its directory goes: past a limit the
   * job fails naming it; a store that fails interrupts the attempt (the store's fault, not the
   * job's), and its next attempt runs the program again.
   */
  private static JobOutcome upload(
      CommandKind kind, JobContext context, JobDirectory dir, JobOutcome succeeded) {
    try {
      String refused = context.uploadArtifacts(dir.artifacts(), kind.artifacts());
      if (refused != null) {
        context.log().line(JobLog.Stream.WORKER, refused);
        return JobOutcome.failed(refused);
      }
      return succeeded;
    } catch (IOException e) {
      String why = "the worker could not upload the job's artifacts: " + e.getMessage();
      context.log().line(JobLog.Stream.WORKER, why);
      return JobOutcome.interrupted(why);
    }
  }

  private static byte[] payloadJson(JsonNode payload) {
    try {
      return JSON.writeValueAsBytes(payload == null ? JSON.createObjectNode() : payload);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a parsed payload is always writable", e);
    }
  }

  /** A command as a person would type it. */
  static String show(List<String> command) {
    StringBuilder b = new StringBuilder();
    for (String arg : command) {
      if (b.length() > 0) {
        b.append(' ');
      }
      b.append(
          arg.isEmpty() || arg.matches(".*[\\s'\"\\\\$`].*")
              ? "'" + arg.replace("'", "'\\''") + "'"
              : arg);
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

  static String cut(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max - 1) + "…";
  }
}
