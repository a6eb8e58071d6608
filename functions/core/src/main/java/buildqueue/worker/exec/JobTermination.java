package buildqueue.worker.exec;

import static buildqueue.worker.exec.ProcessRunner.human;

import buildqueue.core.MonotonicClock;
import buildqueue.worker.JobLog;
import java.lang.System.Logger.Level;
import java.time.Duration;

/**
 * How one attempt's processes are ended, the way a Buildkite agent cancels a step: SIGTERM to every
 * process of the job, a grace period, then SIGKILL, repeated (a process may fork meanwhile) until
 * none is left. What the worker does is written to the job's log as {@link JobLog.Stream#WORKER}
 * lines.
 */
final class JobTermination {
  private static final System.Logger LOG = System.getLogger(ProcessRunner.class.getName());

  private final JobProcess process;
  private final long jobId;
  private final JobLog log;
  private final MonotonicClock clock;
  private final ProcessRunner.Limits limits;
  private long terminatedAt = -1;

  /** When SIGKILL follows the SIGTERM: the kind's grace after it, or sooner for a worker's stop. */
  private long killAt = Long.MAX_VALUE;

  private boolean killed;

  JobTermination(
      JobProcess process,
      long jobId,
      JobLog log,
      MonotonicClock clock,
      ProcessRunner.Limits limits) {
    this.process = process;
    this.jobId = jobId;
    this.log = log;
    this.clock = clock;
    this.limits = limits;
  }

  /** Whether SIGTERM was sent. */
  boolean terminated() {
    return terminatedAt >= 0;
  }

  /**
   * SIGTERM to every process of the job; SIGKILL follows after {@code grace} ({@link
   * #killWhenGraceIsOver}).
   */
  void terminate(String why, Duration grace) {
    process.terminate();
    terminatedAt = clock.nanoTime();
    killAt = terminatedAt + grace.toNanos();
    say(why + ": SIGTERM sent to the job's processes");
  }

  /**
   * The worker must be gone within {@code left}: SIGKILL then at the latest, whatever the grace.
   */
  void cutGraceTo(Duration left) {
    long stopKillAt = clock.nanoTime() + left.toNanos();
    if (stopKillAt < killAt) {
      killAt = stopKillAt;
      say(
          "the worker must be gone within its stop timeout: SIGKILL in "
              + human(left)
              + " at the latest");
    }
  }

  /** SIGKILL once the grace after the SIGTERM is over; called while the program runs. */
  void killWhenGraceIsOver() {
    if (terminatedAt >= 0 && !killed && clock.nanoTime() >= killAt) {
      say(
          "SIGKILL after "
              + human(Duration.ofMillis((killAt - terminatedAt) / 1_000_000))
              + " grace");
      process.kill();
      killed = true;
    }
  }

  /**
   * The program has exited; what it left running (a daemon, a {@code sleep &}) is ended the same
   * way: SIGTERM, the grace period, SIGKILL.
   */
  void endLeftovers(Duration grace) throws InterruptedException {
    int left = process.remaining();
    if (left == 0) {
      return;
    }
    if (terminatedAt < 0) {
      process.terminate();
      terminatedAt = clock.nanoTime();
      killAt = terminatedAt + grace.toNanos();
      say(left + (left == 1 ? " process" : " processes") + " the job left running: SIGTERM sent");
    }
    while (process.remaining() > 0 && clock.nanoTime() < killAt) {
      clock.sleep(limits.pollInterval());
    }
    if (process.remaining() > 0) {
      if (!killed) {
        say(
            "SIGKILL after "
                + human(Duration.ofMillis((killAt - terminatedAt) / 1_000_000))
                + " grace");
      }
      killed = true;
      awaitKilled();
    }
  }

  /**
   * The worker must stop now (it lost the job, it failed): SIGKILL and no grace. An interrupt
   * meanwhile sends one last SIGKILL and is kept for the caller.
   */
  void killAtOnce() {
    boolean interrupted = Thread.interrupted();
    try {
      killed = true;
      awaitKilled();
    } catch (InterruptedException e) {
      interrupted = true;
      process.kill();
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** SIGKILL, repeated (a process may fork meanwhile) until none is left or patience runs out. */
  private void awaitKilled() throws InterruptedException {
    long end = clock.nanoTime() + limits.killPatience().toNanos();
    while (process.kill() > 0 || process.remaining() > 0) {
      if (clock.nanoTime() >= end) {
        int left = process.remaining();
        if (left > 0) {
          say(
              left
                  + " of the job's processes did not die of SIGKILL within "
                  + human(limits.killPatience()));
          LOG.log(Level.ERROR, "job {0}: {1} processes survived SIGKILL", jobId, left);
        }
        return;
      }
      clock.sleep(Duration.ofMillis(10));
    }
  }

  private void say(String text) {
    log.line(JobLog.Stream.WORKER, text);
  }
}
