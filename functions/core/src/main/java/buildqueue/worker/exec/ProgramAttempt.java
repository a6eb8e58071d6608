package buildqueue.worker.exec;

import static buildqueue.worker.exec.ProcessRunner.human;
import static buildqueue.worker.exec.ProcessRunner.show;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.RunningJobs;
import buildqueue.worker.WorkerFencedOffException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One attempt of one job, from its program's start to the last of its processes: it watches the
 * program (its control lines, its timeout, the queue's check-in), ends it through {@link
 * JobTermination}, reads its output through two {@link OutputPump}s, and says what the attempt came
 * to as a {@link JobOutcome}. The {@link ProcessRunner} makes and deletes its directory.
 */
final class ProgramAttempt {
  private final CommandKind kind;
  private final JobContext context;
  private final JobDirectory dir;
  private final Map<String, String> workerEnvironment;
  private final ProcessLauncher launcher;
  private final MonotonicClock clock;
  private final ProcessRunner.Limits limits;
  private final JobLog log;
  private final ControlFile control;
  private JobProcess process;
  private JobTermination termination;
  private OutputPump stdout;
  private OutputPump stderr;
  private boolean exited;
  private Integer latestProgress;
  private String jobError;
  private int followUps;

  /**
   * Why the worker stopped the program, as the job's error; null if it did not (or for a cancel).
   */
  private String stopFailure;

  private boolean cancelled;

  /** The worker was told to stop: the job is interrupted unless the program succeeds first. */
  private boolean stopping;

  ProgramAttempt(
      CommandKind kind,
      JobContext context,
      JobDirectory dir,
      Map<String, String> workerEnvironment,
      ProcessLauncher launcher,
      MonotonicClock clock,
      ProcessRunner.Limits limits) {
    this.kind = kind;
    this.context = context;
    this.dir = dir;
    this.workerEnvironment = workerEnvironment;
    this.launcher = launcher;
    this.clock = clock;
    this.limits = limits;
    this.log = context.log();
    this.control = new ControlFile(dir.control(), limits.maxControlLineBytes());
  }

  JobOutcome run() throws InterruptedException {
    Map<String, String> env = JobEnvironment.of(workerEnvironment, kind, context, dir);
    // Registered before the start: a halt while the program starts finds it by its session file.
    AtomicReference<JobProcess> started = new AtomicReference<>();
    try (RunningJobs.Registration ignored =
        RunningJobs.add(
            () -> {
              JobProcess p = started.get();
              if (p != null) {
                p.kill();
              } else {
                JobSession.readFrom(dir.session())
                    .ifPresent(s -> JobSession.signal(s.members(), true));
              }
            })) {
      try {
        process =
            launcher.start(
                new ProcessLauncher.Spec(kind.command(), dir.work(), env, dir.session()));
        started.set(process);
      } catch (IOException | RuntimeException e) {
        String why = "the worker could not start " + show(kind.command()) + ": " + e.getMessage();
        say(why);
        return JobOutcome.interrupted(why);
      }
      termination = new JobTermination(process, context.jobId(), log, clock, limits);
      say("started: " + show(kind.command()) + " (attempt " + context.attempt() + ")");
      String name = "job-" + context.jobId() + "-";
      stdout =
          new OutputPump(
                  process.stdout(),
                  log,
                  JobLog.Stream.STDOUT,
                  name + "stdout",
                  limits.errorLines(),
                  limits.errorChars())
              .start();
      stderr =
          new OutputPump(
                  process.stderr(),
                  log,
                  JobLog.Stream.STDERR,
                  name + "stderr",
                  limits.errorLines(),
                  limits.errorChars())
              .start();
      try {
        watch();
        ProgramExit exit = process.exit();
        say(exit.describe());
        termination.endLeftovers(kind.cancelGracePeriod());
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
    if (context.stopRequested()) {
      // The stop came while the program was being started (its trace context is read first): it
      // gets SIGTERM before the first poll, and the check-in after it, as if it had come during it.
      checkIn();
    }
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
      if (!termination.terminated() && now - startedAt >= kind.timeout().toNanos()) {
        stopFailure = "timed out after " + human(kind.timeout());
        terminate(stopFailure);
      }
      checkIn();
      termination.killWhenGraceIsOver();
    }
  }

  /**
   * A stop's SIGTERM, then the check-in: the first one after a stop reads the cancel flag, so that
   * a cancelled job whose program exits 0 in its grace still ends cancelled.
   */
  private void checkIn() {
    if (context.stopRequested()) {
      // Before the check-in's statement, which may wait: a cancel arrives as this stop, and
      // the program is signalled as soon as the worker sees it.
      stopForTheWorker();
    }
    JobContext.CheckIn said = context.checkIn(latestProgress);
    if (said == JobContext.CheckIn.CANCEL_REQUESTED && !cancelled) {
      cancelled = true;
      if (!termination.terminated()) {
        terminate("cancel requested");
      }
    } else if (said == JobContext.CheckIn.STOP_REQUESTED) {
      stopForTheWorker();
    }
  }

  /** The worker was told to stop: SIGTERM (once), and the grace cut to what the stop leaves. */
  private void stopForTheWorker() {
    if (stopping) {
      return;
    }
    stopping = true;
    Duration left = context.stopTimeLeft();
    if (!termination.terminated()) {
      terminate("the worker is stopping");
    }
    termination.cutGraceTo(left);
  }

  private void handle(List<ControlMessage> messages) {
    for (ControlMessage m : messages) {
      if (m instanceof ControlMessage.Progress p) {
        latestProgress = p.progress();
      } else if (m instanceof ControlMessage.Error e) {
        jobError = ProcessRunner.cut(e.message(), limits.errorChars());
      } else if (m instanceof ControlMessage.FollowUp f) {
        followUp(f);
      } else if (m instanceof ControlMessage.BadFollowUp b) {
        refuse("follow-up refused", "control line " + b.line() + ": " + b.reason());
      } else if (m instanceof ControlMessage.Ignored i) {
        say(
            "control line "
                + i.line()
                + " ignored ("
                + i.reason()
                + ")"
                + (i.text().isEmpty() ? "" : ": " + i.text()));
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
      refuse(
          "too many follow-ups",
          "the job submitted more than "
              + limits.maxFollowUps()
              + " follow-up jobs (control line "
              + f.line()
              + "); a job may submit at most "
              + limits.maxFollowUps());
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
    stopFailure =
        ProcessRunner.cut(
            "The job's follow-up could not be submitted: " + why, limits.errorChars());
    say(what + ": " + why);
    if (!exited) {
      terminate(what);
    }
  }

  private void terminate(String why) {
    termination.terminate(why, kind.cancelGracePeriod());
  }

  /**
   * The worker must stop now (it lost the job, it failed): SIGKILL and no grace; the output is no
   * longer read.
   */
  private void killAtOnce() {
    try {
      termination.killAtOnce();
    } finally {
      if (stdout != null) {
        stdout.detach();
        stderr.detach();
      }
    }
  }

  /** The rest of the output, now that no process of the job can write more. */
  private void drainOutput() throws InterruptedException {
    boolean done = stdout.awaitEnd(limits.outputDrain()) & stderr.awaitEnd(limits.outputDrain());
    if (!done) {
      stdout.detach();
      stderr.detach();
      say(
          "the job's output is still held open by a process outside its session; it is no longer read");
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
      // The prefix tells the database this is a stop's interruption (a reclaim on Spot, V012).
      return interrupted(
          buildqueue.worker.WorkerStop.INTERRUPTION_REASON_PREFIX
              + "the worker was told to stop ("
              + exit.describe()
              + ")");
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
      return interrupted(
          "exit code "
              + (128 + s.signal())
              + " ("
              + s.describe()
              + "), a retry code of kind "
              + kind.name());
    }
    return JobOutcome.failed(jobError != null ? s.describe() + ": " + jobError : s.describe());
  }

  /**
   * The job goes back to its lane. Its latest progress, which it passed to every check-in, goes
   * with the interruption's statement: where the next attempt resumes, and what resets its count of
   * interruptions without progress.
   */
  private JobOutcome interrupted(String reason) {
    return JobOutcome.interrupted(reason);
  }

  private Optional<String> stderrTail() {
    List<String> lines = stderr.lastLines();
    if (lines.isEmpty()) {
      return Optional.empty();
    }
    StringBuilder tail = new StringBuilder();
    for (int i = lines.size() - 1; i >= 0; i--) {
      String line = lines.get(i);
      if (tail.length() + line.length() + 1 > limits.errorChars()) {
        if (tail.length() == 0) {
          tail.append("…")
              .append(line, Math.max(0, line.length() - limits.errorChars() + 1), line.length());
        }
        break;
      }
      tail.insert(0, tail.length() == 0 ? line : line + "\n");
    }
    String text = tail.toString().strip();
    return text.isEmpty() ? Optional.empty() : Optional.of(text);
  }

  private void say(String text) {
    log.line(JobLog.Stream.WORKER, text);
  }
}
