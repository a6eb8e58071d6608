package buildqueue.worker;

import buildqueue.core.WorkerTransitions;
import java.util.function.LongSupplier;

/**
 * When a running job's check-in costs a statement, and what it has not saved yet: its progress at
 * most every {@link WorkerLoop#PROGRESS_INTERVAL} (the latest value wins), its log tail at most
 * every {@link WorkerLoop#LOG_INTERVAL} and only when there is new output, else a heartbeat once
 * the heartbeat interval ({@link JobContext#HEARTBEAT_INTERVAL} by default) passed without a
 * statement. A cancel is pushed (the worker is stopped), so the heartbeat's read of the cancel flag
 * is only the fallback for a lost stop. On the loop's monotonic clock. Not thread-safe: its {@link
 * JobContext} holds its lock around every call.
 */
final class CheckInPacing {
  /** What a check-in would write now. */
  record Due(boolean progress, boolean log, boolean heartbeat) {
    boolean any() {
      return progress || log || heartbeat;
    }
  }

  private final LongSupplier nanoTime;
  private final JobLog log;
  private final long heartbeatNanos;
  private long lastStatementNanos;
  private long lastLogNanos;
  private Integer savedProgress;

  /** The latest progress the job reported, written or not. */
  private Integer latestProgress;

  private long savedLogVersion;
  private String savedLogLocation;

  /** {@code savedProgress}: what the queue holds already, where this attempt resumed. */
  CheckInPacing(LongSupplier nanoTime, JobLog log, int savedProgress) {
    this(nanoTime, log, savedProgress, JobContext.HEARTBEAT_INTERVAL);
  }

  /** As above, with a heartbeat every {@code heartbeat} without another statement. */
  CheckInPacing(
      LongSupplier nanoTime, JobLog log, int savedProgress, java.time.Duration heartbeat) {
    this.nanoTime = nanoTime;
    this.log = log;
    this.heartbeatNanos = heartbeat.toNanos();
    this.lastStatementNanos = nanoTime.getAsLong();
    this.lastLogNanos = lastStatementNanos;
    this.savedProgress = savedProgress;
  }

  /** Whether the log tail may go with a progress report the job makes itself. */
  boolean logDue() {
    return nanoTime.getAsLong() - lastLogNanos >= WorkerLoop.LOG_INTERVAL.toNanos();
  }

  /** What is due at a check-in that reports {@code latest} (null: no progress this time). */
  Due due(Integer latest) {
    if (latest != null) {
      latestProgress = latest;
    }
    long now = nanoTime.getAsLong();
    long since = now - lastStatementNanos;
    boolean progressDue =
        latest != null
            && !latest.equals(savedProgress)
            && since >= WorkerLoop.PROGRESS_INTERVAL.toNanos();
    boolean logDue =
        log.snapshot().version() != savedLogVersion
            && now - lastLogNanos >= WorkerLoop.LOG_INTERVAL.toNanos();
    return new Due(progressDue, logDue, since >= heartbeatNanos);
  }

  /** The latest progress, as a check-in would write it. */
  Integer latestProgress() {
    return latestProgress;
  }

  /** A check-in statement ran now, with the log tail or without. */
  void wrote(boolean withLog) {
    lastStatementNanos = nanoTime.getAsLong();
    if (withLog) {
      lastLogNanos = lastStatementNanos;
    }
  }

  /** A statement saved {@code progress}. */
  void saved(int progress) {
    savedProgress = progress;
  }

  /** The program's last progress, read after it exited; the job's end or interruption writes it. */
  void finalProgress(int progress) {
    latestProgress = progress;
  }

  /** The latest progress the job reported if no statement has written it yet, else null. */
  Integer unsavedProgress() {
    return latestProgress != null && !latestProgress.equals(savedProgress) ? latestProgress : null;
  }

  /** The log tail if it changed since it was last saved (and marks it saved), else null. */
  WorkerTransitions.LogWrite unsavedLog() {
    JobLog.Snapshot snapshot = log.snapshot();
    if (snapshot.version() == savedLogVersion) {
      return null;
    }
    savedLogVersion = snapshot.version();
    String location = log.location();
    String newLocation = location != null && !location.equals(savedLogLocation) ? location : null;
    savedLogLocation = location;
    return new WorkerTransitions.LogWrite(snapshot.tail(), snapshot.totalBytes(), newLocation);
  }
}
