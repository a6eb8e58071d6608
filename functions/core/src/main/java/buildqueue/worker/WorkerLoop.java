package buildqueue.worker;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.NoArtifactStore;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.RowLimits;
import buildqueue.core.WorkerTransitions;
import buildqueue.core.WorkerTransitions.AssignedJob;
import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.db.Database;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * A worker's life: start with its token, run its job, chain further jobs of its lane while the
 * window is open, then leave its slot {@code draining} and return so the process can exit. The slot
 * is freed by the evidence of that exit, never here. A hard deadline before the lease kills the
 * worker wherever it is, so it can never run past the point where its slot may be reclaimed.
 *
 * <p>A worker told to stop ({@link WorkerStop}, SIGTERM) stops its job (a program gets its grace,
 * cut to the stop timeout), records an interruption that keeps the job's progress and log tail (or
 * the job's end, if it finished meanwhile), takes no further job, drains and returns {@link
 * Exit#STOPPED}.
 */
public final class WorkerLoop {
  private static final System.Logger LOG = System.getLogger(WorkerLoop.class.getName());
  private static final ScheduledExecutorService DEADLINES =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "buildqueue-worker-deadline");
            t.setDaemon(true);
            return t;
          });

  /** The boundaries between a worker's writes: where a real process could die. */
  public enum Point {
    BEFORE_START,
    AFTER_START,
    AFTER_PROGRESS,
    AFTER_JOB_BEFORE_END,
    WHILE_DRAINING
  }

  /**
   * Told of each {@link Point} on the worker's own thread, before the worker goes on; production
   * workers pass {@link #NONE}. An observer may end the worker there through its {@link
   * WorkerProcess} (the test kit's in-process platform does, to crash it between two writes).
   */
  @FunctionalInterface
  public interface Listener {
    void at(Point point, long workerId);

    Listener NONE = (point, workerId) -> {};
  }

  /**
   * Arms the hard deadline and returns what disarms it. The default is a wall-clock timer; a
   * simulation that moves a virtual {@link QueueClock} supplies its own, so the deadline falls at
   * the same virtual instant as the lease it protects.
   */
  @FunctionalInterface
  public interface DeadlineTimer {
    Runnable arm(Duration after, Runnable kill);

    DeadlineTimer WALL_CLOCK =
        (after, kill) -> {
          ScheduledFuture<?> f =
              DEADLINES.schedule(kill, Math.max(0, after.toMillis()), TimeUnit.MILLISECONDS);
          return () -> f.cancel(false);
        };
  }

  /** How the loop ended. */
  public enum Exit {
    /** The start was refused (wrong token, already started, too late): nothing ran. */
    NOT_STARTED,
    /** All work done; the worker is {@code draining} and should exit now. */
    DRAINED,
    /** A fenced write changed nothing: the worker was fenced off and stopped at once. */
    FENCED_OFF,
    /**
     * Told to stop ({@link WorkerStop}): its job was interrupted with its progress (or ended, if it
     * finished first), no further job was taken, and the worker is {@code draining}.
     */
    STOPPED
  }

  /** The bytes of a job's output the queue keeps with the job (the rest is in the worker's log). */
  public static final int LOG_TAIL_BYTES = RowLimits.MAX_LOG_TAIL_BYTES;

  /**
   * A program's progress is written at most this often; the latest value wins. The log tail's
   * cadence too, so a build that reports and prints costs one statement per 2 s, not two.
   */
  static final Duration PROGRESS_INTERVAL = Duration.ofSeconds(2);

  /** A program's log tail is written at most this often while it prints. */
  static final Duration LOG_INTERVAL = Duration.ofSeconds(2);

  private final WorkerTransitions transitions;
  private final QueueConfig config;
  private final JobHandlers handlers;
  private final WorkerProcess process;
  private final Listener listener;
  private final DeadlineTimer deadlines;
  private final JobLogSink logSink;
  private final LongSupplier nanoTime;
  private final WorkerStop stop;
  private final long maxLogBytes;
  private final Duration heartbeat;
  private final ArtifactStore artifacts;

  public WorkerLoop(
      Database db,
      QueueConfig config,
      QueueClock clock,
      JobHandlers handlers,
      WorkerProcess process,
      Listener listener) {
    this(db, config, clock, handlers, process, listener, DeadlineTimer.WALL_CLOCK);
  }

  public WorkerLoop(
      Database db,
      QueueConfig config,
      QueueClock clock,
      JobHandlers handlers,
      WorkerProcess process,
      Listener listener,
      DeadlineTimer deadlines) {
    this(
        new WorkerTransitions(db, config, clock),
        config,
        handlers,
        process,
        listener,
        deadlines,
        JobLogSink.NONE,
        System::nanoTime,
        WorkerStop.none(),
        JobLog.DEFAULT_MAX_LOG_BYTES,
        JobContext.HEARTBEAT_INTERVAL,
        NoArtifactStore.NONE);
  }

  private WorkerLoop(
      WorkerTransitions transitions,
      QueueConfig config,
      JobHandlers handlers,
      WorkerProcess process,
      Listener listener,
      DeadlineTimer deadlines,
      JobLogSink logSink,
      LongSupplier nanoTime,
      WorkerStop stop,
      long maxLogBytes,
      Duration heartbeat,
      ArtifactStore artifacts) {
    this.transitions = transitions;
    this.config = config;
    this.handlers = handlers;
    this.process = process;
    this.listener = listener;
    this.deadlines = deadlines;
    this.logSink = logSink;
    this.nanoTime = nanoTime;
    this.stop = stop;
    this.maxLogBytes = maxLogBytes;
    this.heartbeat = heartbeat;
    this.artifacts = artifacts;
  }

  /** The same loop, sending each line of a job's output to {@code sink} too. */
  public WorkerLoop withLogSink(JobLogSink sink) {
    return new WorkerLoop(
        transitions,
        config,
        handlers,
        process,
        listener,
        deadlines,
        sink,
        nanoTime,
        stop,
        maxLogBytes,
        heartbeat,
        artifacts);
  }

  /**
   * The same loop on another monotonic clock (nanoseconds, as {@link System#nanoTime}), which paces
   * {@link JobContext#checkIn}: a simulation moves it by hand.
   */
  public WorkerLoop withNanoTime(LongSupplier clock) {
    return new WorkerLoop(
        transitions,
        config,
        handlers,
        process,
        listener,
        deadlines,
        logSink,
        clock,
        stop,
        maxLogBytes,
        heartbeat,
        artifacts);
  }

  /**
   * The same loop, keeping at most {@code bytes} of each job attempt's output (default {@link
   * JobLog#DEFAULT_MAX_LOG_BYTES}); the rest is dropped and counted in one line ({@link JobLog}).
   */
  public WorkerLoop withMaxLogBytes(long bytes) {
    return new WorkerLoop(
        transitions,
        config,
        handlers,
        process,
        listener,
        deadlines,
        logSink,
        nanoTime,
        stop,
        bytes,
        heartbeat,
        artifacts);
  }

  /** The same loop, stopping gracefully when {@code stop} is requested (the process's SIGTERM). */
  public WorkerLoop withStop(WorkerStop stop) {
    return new WorkerLoop(
        transitions,
        config,
        handlers,
        process,
        listener,
        deadlines,
        logSink,
        nanoTime,
        stop,
        maxLogBytes,
        heartbeat,
        artifacts);
  }

  /**
   * The same loop, with a running job's heartbeat (the check-in statement made when nothing else is
   * due, which reads the cancel flag) every {@code interval} instead of {@link
   * JobContext#HEARTBEAT_INTERVAL}: for tests of the fallback for a lost stop.
   */
  public WorkerLoop withHeartbeat(Duration interval) {
    if (interval == null || interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("heartbeat must be a positive duration, was " + interval);
    }
    return new WorkerLoop(
        transitions,
        config,
        handlers,
        process,
        listener,
        deadlines,
        logSink,
        nanoTime,
        stop,
        maxLogBytes,
        interval,
        artifacts);
  }

  /**
   * The same loop, uploading each succeeding job's artifacts ({@code $BUILDQUEUE_ARTIFACTS}) to
   * {@code store} (docs/architecture.md, Artifacts): the place a worker gets its store. Without it,
   * {@link NoArtifactStore#NONE}: a job that leaves files there fails saying so.
   */
  public WorkerLoop withArtifacts(ArtifactStore store) {
    return new WorkerLoop(
        transitions,
        config,
        handlers,
        process,
        listener,
        deadlines,
        logSink,
        nanoTime,
        stop,
        maxLogBytes,
        heartbeat,
        java.util.Objects.requireNonNull(store, "store"));
  }

  public Exit run(long workerId, UUID token) {
    listener.at(Point.BEFORE_START, workerId);
    if (stop.requested()) {
      // Its job never ran here: the stop's evidence finds the worker not started (a retryable
      // launch failure).
      LOG.log(
          Level.INFO,
          "worker {0}: told to stop before it started; exiting without starting",
          workerId);
      return Exit.NOT_STARTED;
    }
    Optional<WorkerTransitions.Started> started = transitions.start(workerId, token);
    if (started.isEmpty()) {
      LOG.log(
          Level.INFO,
          "worker {0}: start refused (wrong token, already started, or past its lease); exiting",
          workerId);
      return Exit.NOT_STARTED;
    }
    WorkerTransitions.Started s = started.get();
    Duration untilDeadline =
        Duration.between(s.databaseNow(), s.expiresAt()).minus(config.deadlineMargin());
    Runnable disarm =
        deadlines.arm(
            untilDeadline,
            () ->
                process.kill("worker " + workerId + " reached its hard deadline before the lease"));
    try {
      listener.at(Point.AFTER_START, workerId);
      Optional<AssignedJob> job = s.job();
      if (job.isEmpty()) {
        transitions.drain(workerId, token);
        listener.at(Point.WHILE_DRAINING, workerId);
        return Exit.DRAINED;
      }
      while (true) {
        Ended ended = runOne(workerId, token, job.get());
        if (ended instanceof Ended.Idle) {
          ended = linger(workerId, token);
        }
        if (ended instanceof Ended.Chained chained) {
          job = Optional.of(chained.next());
        } else if (ended instanceof Ended.Drained) {
          listener.at(Point.WHILE_DRAINING, workerId);
          return stop.requested() ? Exit.STOPPED : Exit.DRAINED;
        } else {
          LOG.log(
              Level.WARNING, "worker {0}: fenced off; stopping without further writes", workerId);
          return Exit.FENCED_OFF;
        }
      }
    } finally {
      disarm.run();
    }
  }

  /**
   * The lane ran empty and the config says linger: poll it until a job comes, the window closes, or
   * the linger is over, then drain. A job enqueued after the last poll is not lost: the lane looked
   * full to its enqueue, and this worker's exit dispatches the lane.
   */
  private Ended linger(long workerId, UUID token) {
    long until = nanoTime.getAsLong() + config.linger().toNanos();
    while (nanoTime.getAsLong() < until && !stop.requested()) {
      try {
        Thread.sleep(config.lingerPoll().toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      Ended polled = transitions.takeNext(workerId, token);
      if (!(polled instanceof Ended.Idle)) {
        return polled;
      }
    }
    return transitions.drain(workerId, token) ? new Ended.Drained() : new Ended.FencedOff();
  }

  private Ended runOne(long workerId, UUID token, AssignedJob job) {
    return new JobRun(
            transitions,
            handlers,
            process,
            listener,
            logSink,
            nanoTime,
            stop,
            maxLogBytes,
            heartbeat,
            artifacts)
        .run(workerId, token, job);
  }
}
