package buildqueue.worker;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A worker told to stop: SIGTERM from ECS (StopTask for an expired lease or a cancel, a Spot
 * reclaim, a scale-in, a deploy), which sends SIGKILL {@code stopTimeout} later, or from the local
 * platform. The worker then stops its job's program the way a cancel does (SIGTERM to its process
 * group, the kind's {@code cancelGracePeriod}, SIGKILL) but within {@link #programTimeLeft},
 * records an interruption that keeps the job's progress and its log tail, takes no further job, and
 * exits before the SIGKILL.
 *
 * <p>The JVM turns SIGTERM into its shutdown, which runs the hook {@link #onSigterm} installs
 * concurrently with the worker's own thread: the hook only asks for the stop and waits, bounded by
 * the stop timeout, for the worker's thread to say it is done ({@link Hook#close}); every write is
 * the worker's own thread's, fenced by its token like any other. If the worker is not done in time,
 * the hook kills its jobs' programs ({@link RunningJobs}) and lets the JVM end: the job is then
 * recovered on the stop's evidence, from its last check-in.
 *
 * <p>Thread-safe. A fresh instance is not requested; {@link #request} is idempotent.
 */
public final class WorkerStop {
  private static final System.Logger LOG = System.getLogger(WorkerStop.class.getName());

  /**
   * How long the platform waits after SIGTERM before SIGKILL, in whole seconds: on ECS the worker
   * container's {@code StopTimeout}, which the task definition sets to the same value.
   */
  public static final String STOP_TIMEOUT_VARIABLE = "BUILDQUEUE_STOP_TIMEOUT_SECONDS";

  /**
   * How the reason of a job interrupted by its worker's stop begins. On a Spot worker the database
   * takes such an interruption for a reclaim ({@code build_stop_is_reclaim}, V012): a worker cannot
   * tell a reclaim's SIGTERM from any other.
   */
  public static final String INTERRUPTION_REASON_PREFIX = "stopped with its worker: ";

  /** ECS's own default {@code stopTimeout}. */
  public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(30);

  /** Fargate's largest {@code stopTimeout}. */
  public static final Duration MAX_FARGATE_STOP_TIMEOUT = Duration.ofSeconds(120);

  /**
   * Of the stop timeout, what the programs may not use: the time to record the interruption (one
   * statement) and exit. At most this, and at most half the stop timeout.
   */
  static final Duration RECORD_RESERVE = Duration.ofSeconds(5);

  /** Of the stop timeout, what the hook leaves the JVM to end in: at most this, at most a tenth. */
  static final Duration EXIT_RESERVE = Duration.ofSeconds(2);

  private static final long NOT_REQUESTED = Long.MIN_VALUE;

  private final Duration stopTimeout;
  private final LongSupplier nanoTime;
  private final AtomicLong requestedAt = new AtomicLong(NOT_REQUESTED);
  private final CountDownLatch done = new CountDownLatch(1);
  private volatile String reason = "";

  /**
   * @param stopTimeout the time from SIGTERM to SIGKILL; positive
   */
  public WorkerStop(Duration stopTimeout) {
    this(stopTimeout, System::nanoTime);
  }

  /**
   * As {@link #WorkerStop(Duration)}, timing the stop on {@code nanoTime}: an in-process platform
   * on a simulated clock gives its own.
   */
  public WorkerStop(Duration stopTimeout, LongSupplier nanoTime) {
    if (stopTimeout == null || stopTimeout.isNegative() || stopTimeout.isZero()) {
      throw new IllegalArgumentException(
          "stopTimeout must be a positive duration, was " + stopTimeout);
    }
    this.stopTimeout = stopTimeout;
    this.nanoTime = nanoTime;
  }

  /** One that is never requested unless a caller does: for workers with no process of their own. */
  public static WorkerStop none() {
    return new WorkerStop(DEFAULT_STOP_TIMEOUT);
  }

  public Duration stopTimeout() {
    return stopTimeout;
  }

  /** Asks the worker to stop, from now; a second request changes nothing. */
  public void request(String why) {
    if (requestedAt.compareAndSet(NOT_REQUESTED, nanoTime.getAsLong())) {
      reason = why;
    }
  }

  public boolean requested() {
    return requestedAt.get() != NOT_REQUESTED;
  }

  /** Why the worker was asked to stop; empty if it was not. */
  public String reason() {
    return reason;
  }

  /**
   * How long, from now, a job's programs may still run before they must be gone: the stop timeout
   * from the request, less {@link #RECORD_RESERVE} (at most half of it). Zero once that has passed;
   * the whole of it while no stop is requested.
   */
  public Duration programTimeLeft() {
    Duration programs = stopTimeout.minus(min(RECORD_RESERVE, stopTimeout.dividedBy(2)));
    return left(programs);
  }

  /**
   * How long the hook still waits for the worker to be done: the stop timeout less {@link
   * #EXIT_RESERVE}.
   */
  Duration hookTimeLeft() {
    return left(stopTimeout.minus(min(EXIT_RESERVE, stopTimeout.dividedBy(10))));
  }

  private Duration left(Duration ofBudget) {
    long at = requestedAt.get();
    if (at == NOT_REQUESTED) {
      return ofBudget;
    }
    Duration rest = ofBudget.minusNanos(nanoTime.getAsLong() - at);
    return rest.isNegative() ? Duration.ZERO : rest;
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /** What {@link #onSigterm} returns: closing it says the worker is done, and removes the hook. */
  public interface Hook extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * Installs the JVM shutdown hook that turns SIGTERM into a stop request and waits for the worker
   * to be done ({@link Hook#close}), at most {@link #hookTimeLeft}. Close the hook when the
   * worker's loop has returned, before {@link System#exit}.
   */
  public Hook onSigterm() {
    Thread hook = new Thread(this::stopAndWait, "buildqueue-worker-sigterm");
    try {
      Runtime.getRuntime().addShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // SIGTERM came before the worker started: it does not start.
      request("its JVM was already ending when the worker was about to start");
      return done::countDown;
    }
    return () -> {
      done.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // The hook is running, or has run: it returns now that the worker is done.
      }
    };
  }

  private void stopAndWait() {
    if (done.getCount() == 0) {
      return; // the worker was done before the JVM began to shut down (its own exit)
    }
    request("its JVM was told to end (SIGTERM: the platform stops it)");
    // Logged to stderr, not through System.Logger: the JDK's logging resets itself in a hook of its
    // own.
    System.err.println(
        "buildqueue worker: SIGTERM: stopping its job within "
            + programTimeLeft().toMillis()
            + " ms, then exiting");
    try {
      if (!done.await(hookTimeLeft().toNanos(), TimeUnit.NANOSECONDS)) {
        System.err.println(
            "buildqueue worker: not done within the stop timeout of "
                + stopTimeout.toSeconds()
                + " s; killing its jobs' programs and exiting (the job is recovered on the stop's evidence)");
        RunningJobs.killAllNow();
      }
    } catch (InterruptedException e) {
      RunningJobs.killAllNow();
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      LOG.log(Level.ERROR, "the stop hook failed", e);
      RunningJobs.killAllNow();
    }
  }
}
