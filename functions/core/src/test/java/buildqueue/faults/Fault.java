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
  JOB_KILLS_WORKER;

  /**
   * Faults added after {@link FaultSeedRegressionTest} pinned its seeds: they draw from the
   * scenario's second random stream, so a scenario with them left out replays exactly as it did
   * before they existed.
   */
  static final Set<Fault> SECOND_STREAM = EnumSet.of(WORKER_FROZEN, WORKER_FORGED, JOB_KILLS_WORKER);

  String label() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }
}
