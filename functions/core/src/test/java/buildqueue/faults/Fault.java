package buildqueue.faults;

import java.util.EnumSet;
import java.util.Set;

/** Every kind of fault the simulation injects; the summary line counts each. */
enum Fault {
  NONE,
  WORKER_CRASH,
  WORKER_KILLED,
  LAUNCH_FAILED,
  LAUNCH_FAILED_RETRYABLE,
  LAUNCH_UNKNOWN_STARTED,
  LAUNCH_UNKNOWN_NOT_STARTED,
  LAUNCH_LATE,
  CALLER_DIED_BEFORE_LAUNCH,
  CALLER_DIED_AFTER_LAUNCH,
  CALLER_TIMED_OUT,
  EVIDENCE_DUPLICATED,
  EVIDENCE_DELAYED,
  EVIDENCE_REORDERED,
  EVIDENCE_LOST,
  EVIDENCE_FORGED,
  KILL_MID_STATEMENT,
  KILL_AFTER_COMMIT,
  KILL_MID_TRANSACTION,
  DATABASE_UNREACHABLE,
  DATABASE_RESUMING,
  /** A worker stops dead, alive to the platform but silent (SIGSTOP, a host that hangs). */
  WORKER_FROZEN,
  /** A process claims a live worker's id with a wrong token and makes the worker's writes. */
  WORKER_FORGED,
  /** A job kills its worker at the same step on every attempt (out of memory, a crashing tool). */
  JOB_KILLS_WORKER,
  /**
   * A job is of the command kind {@code prog}: the real ProcessRunner runs its program (a {@link
   * SimProgram}), which reports progress and exits 0 unless one of the program faults below
   * strikes.
   */
  PROGRAM,
  /**
   * The program exits with a code that is neither 0 nor a retry code, with or without an error
   * line.
   */
  PROGRAM_CRASHES,
  /** The program dies of a signal (SIGSEGV, SIGABRT). */
  PROGRAM_SIGNALLED,
  /** The program exits with its kind's retry code on its first attempts. */
  PROGRAM_RETRY_CODE,
  /**
   * The program never ends by itself: only its timeout (or a cancel, or its worker's end) ends it.
   */
  PROGRAM_HANGS,
  /** The program ignores SIGTERM: only SIGKILL after the grace ends it. */
  PROGRAM_IGNORES_SIGTERM,
  /** The program leaves a child behind that outlives it (and may ignore SIGTERM). */
  PROGRAM_LEAVES_CHILD,
  /** The owner cancels a job while its program runs. */
  PROGRAM_CANCELLED,
  /** The owner's cancel lands after a timeout's SIGTERM and before the SIGKILL. */
  PROGRAM_CANCELLED_IN_GRACE,
  /**
   * A redeploy mid-scenario (docs/architecture.md §4.4): the worker's task definition gets a new
   * revision and the one in use is deregistered, and IAM denies RunTask while the new policy
   * propagates. For a window shorter than the launch backoff's budget every launch is refused as
   * ECS refuses it then: retryable, and before the platform looks at the token. Counted per window.
   */
  DEPLOY_WINDOW,
  /**
   * A launch refused in a deploy window (denied, or its revision INACTIVE), first launch or
   * relaunch.
   */
  LAUNCH_REFUSED_BY_DEPLOY,
  /**
   * A stop the queue asks of the platform (a cancel's, a supersede's, the tick's) never reaches the
   * worker: StopTask throttled or failed, a lost signal. The worker's heartbeat is the fallback.
   */
  STOP_LOST,
  /** A stop reaches the worker late, a drawn while after it was asked for. */
  STOP_DELAYED,
  /**
   * A stop reaches a worker that is already gone (it ended, or died): nothing happens. Counted when
   * it happens, not drawn.
   */
  STOP_TO_GONE_WORKER,
  /**
   * A cancel's stop reaches a live worker whose cancelled job has already ended (it finished first,
   * and the worker may have chained the next job, which the stop then interrupts). Counted when it
   * happens, not drawn.
   */
  STOP_RACES_JOB_END,
  /**
   * The arm of the tick's schedule after an enqueue's commit never lands: the caller dies between
   * its commit and the call (docs/architecture.md §4.5, "What a lost arm can delay").
   */
  ARM_LOST,
  /** The arm lands, and lands again a while later (a retried call whose first try got through). */
  ARM_DUPLICATED,
  /** The arm lands a drawn while late, after a disarm that raced it, or with work waiting. */
  ARM_LATE,
  /**
   * A program job's program writes 1 to 3 files under {@code $BUILDQUEUE_ARTIFACTS}, whose contents
   * name its attempt (job, attempt, worker, pid), as it reaches its own end (exit 0 or not); on
   * exit 0 its worker uploads them to the scenario's store and its end publishes them
   * (docs/architecture.md §4.10). Its rate is the share of program jobs that write artifacts.
   */
  PROGRAM_WRITES_ARTIFACTS,
  /**
   * A worker is killed (SIGKILL) between its uploads and its end statement: the files and the
   * upload record stay, the job is retried as a new attempt, and the sweep removes them once the
   * worker has exited. Drawn with the job (its first one or two attempts), counted when it happens.
   */
  WORKER_KILLED_AFTER_UPLOAD,
  /**
   * A worker pauses between its uploads and its end statement (a long GC pause, a suspended VM, a
   * statement stalled in the network) until its lease is over, its deadline timer paused with it,
   * then goes on: its end is refused (the lease fences it), it publishes nothing and removes its
   * uploads. Only a worker the queue can check (its task id recorded). Drawn with the job (its
   * first one or two attempts), counted when it happens.
   */
  WORKER_PAUSED_AFTER_UPLOAD,
  /**
   * An attempt that uploaded files has its end refused (fenced off) and removes its own uploads.
   * Counted when it happens, not drawn.
   */
  UPLOADED_END_FENCED_OFF;

  /**
   * Faults added after {@link FaultSeedRegressionTest} pinned its seeds: they draw from the
   * scenario's second random stream, so a scenario with them left out replays exactly as it did
   * before they existed.
   */
  static final Set<Fault> SECOND_STREAM =
      EnumSet.of(WORKER_FROZEN, WORKER_FORGED, JOB_KILLS_WORKER);

  /**
   * The program faults, added later still: they draw from a third stream of their own, so with them
   * left out (no program jobs at all) a scenario takes the path it took before they existed.
   */
  static final Set<Fault> PROGRAMS = EnumSet.range(PROGRAM, PROGRAM_CANCELLED_IN_GRACE);

  /**
   * The deploy, added after the program faults: a fourth stream of its own, so with it left out a
   * scenario takes the path it took before it existed.
   */
  static final Set<Fault> DEPLOYS = EnumSet.of(DEPLOY_WINDOW, LAUNCH_REFUSED_BY_DEPLOY);

  /**
   * Cancel by signal (issue 24), added after the deploy: a fifth stream of its own, so with it left
   * out a scenario draws as it did before it existed.
   */
  static final Set<Fault> STOPS =
      EnumSet.of(STOP_LOST, STOP_DELAYED, STOP_TO_GONE_WORKER, STOP_RACES_JOB_END);

  /**
   * The tick's arming (issue 25), added after the stops: a sixth stream of its own. A scenario run
   * {@code withoutSchedule()} neither arms nor draws any of these, and ticks as it did before.
   */
  static final Set<Fault> ARMING = EnumSet.of(ARM_LOST, ARM_DUPLICATED, ARM_LATE);

  /**
   * Artifacts (issue 26), added after the arming: a seventh stream of its own, so with them left
   * out no program writes a file, nothing is uploaded or swept, and a scenario takes the path it
   * took before they existed.
   */
  static final Set<Fault> ARTIFACTS =
      EnumSet.of(
          PROGRAM_WRITES_ARTIFACTS,
          WORKER_KILLED_AFTER_UPLOAD,
          WORKER_PAUSED_AFTER_UPLOAD,
          UPLOADED_END_FENCED_OFF);

  String label() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }
}
