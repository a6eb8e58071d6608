package buildqueue.faults;

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
  EVIDENCE_DUPLICATED,
  EVIDENCE_DELAYED,
  EVIDENCE_REORDERED,
  EVIDENCE_LOST,
  EVIDENCE_FORGED,
  KILL_MID_STATEMENT,
  KILL_AFTER_COMMIT,
  KILL_MID_TRANSACTION,
  DATABASE_UNREACHABLE;

  String label() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }
}
