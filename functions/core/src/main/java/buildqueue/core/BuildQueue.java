package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.UniqueViolationException;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The queue as its callers see it: the enqueue API, the tick and the stop-event handler all go
 * through here. Each method is a few transitions in a fixed order; none holds state between calls,
 * so any number of Lambdas (or threads) may call it at once and any of them may die between two
 * transitions: the next tick finds the worker in the state the last committed statement left.
 */
public final class BuildQueue {
  private static final System.Logger LOG = System.getLogger(BuildQueue.class.getName());

  /**
   * Told of every worker exit this queue records, whichever caller found the evidence (a stop
   * event, the tick's liveness check, lease expiry). Runs on the caller's thread after the exit
   * committed; for metrics, so it must not throw.
   */
  @FunctionalInterface
  public interface ExitListener {
    void exited(ExitTransitions.Exited exited);

    ExitListener NONE = exited -> {};
  }

  private final WorkerPlatform platform;
  private final ExitListener exitListener;
  private final QueueConfig config;
  private final JobTransitions jobs;
  private final DispatchTransitions dispatch;
  private final ExitTransitions exits;
  private final TickTransitions tick;
  private volatile boolean dispatching = true;

  public BuildQueue(Database db, WorkerPlatform platform, QueueConfig config, QueueClock clock) {
    this(db, platform, config, clock, ExitListener.NONE);
  }

  public BuildQueue(
      Database db,
      WorkerPlatform platform,
      QueueConfig config,
      QueueClock clock,
      ExitListener exitListener) {
    this.platform = platform;
    this.exitListener = exitListener;
    this.config = config;
    this.jobs = new JobTransitions(db, config, clock);
    this.dispatch = new DispatchTransitions(db, config, clock);
    this.exits = new ExitTransitions(db, config, clock);
    this.tick = new TickTransitions(db, config, clock);
  }

  public QueueConfig config() {
    return config;
  }

  /**
   * From now on this queue dispatches nothing: no job gets a worker or an attempt here, whether an
   * enqueue, an exit or a tick asks. For a server that is shutting down: what would have been
   * dispatched stays queued, with its progress, for the next server's tick. Irreversible.
   */
  public void stopDispatching() {
    dispatching = false;
  }

  /** Enqueues a job and, if its lane has a free slot, dispatches the lane. */
  public JobTransitions.Enqueued enqueue(
      String userId, String kind, Json payload, String idempotencyKey) {
    return enqueue(userId, kind, payload, idempotencyKey, null);
  }

  /**
   * Enqueues a job that supersedes the user's unfinished jobs with {@code supersedeKey} (null:
   * none) and, if its lane has a free slot, dispatches the lane.
   *
   * @throws QueueFullException when the user's queued jobs are at their quota; nothing is written
   */
  public JobTransitions.Enqueued enqueue(
      String userId, String kind, Json payload, String idempotencyKey, String supersedeKey) {
    JobTransitions.Enqueued enqueued =
        jobs.enqueue(userId, kind, payload, idempotencyKey, supersedeKey);
    enqueued
        .cancelRequestedTaskIds()
        .forEach(t -> stopForCancel(t, "job superseded by job " + enqueued.jobId()));
    if (enqueued.created() && enqueued.laneHasRoom()) {
      dispatchAfterCommit(enqueued.lane());
    }
    return enqueued;
  }

  /**
   * Cancels a job ({@code userId} null: an admin). A job on a worker has its worker stopped (see
   * {@link #stopForCancel}).
   */
  public JobTransitions.Cancelled cancel(long jobId, String userId) {
    JobTransitions.Cancelled cancelled = jobs.cancel(jobId, userId);
    if (cancelled instanceof JobTransitions.Cancelled.Requested r && r.taskId() != null) {
      stopForCancel(
          r.taskId(),
          WorkerStatus.LAUNCHING.sql().equals(r.workerStatus())
              ? "job " + jobId + " cancelled before its worker started"
              : "job " + jobId + " cancelled");
    }
    return cancelled;
  }

  /**
   * A cancel is pushed, not polled: the worker of a job whose cancel was just requested is stopped
   * (StopTask: SIGTERM; locally the process's SIGTERM). The worker stops the program as for any
   * stop (SIGTERM to its group, the kind's grace, SIGKILL) and records an interruption, which ends
   * a job with {@code cancel_requested} as {@code cancelled}; a worker still launching never runs
   * it, and its stop evidence ends it so. The worker then exits: a cancel costs the lane its warm
   * worker, which is what lets a running build cost no statement for its cancel check.
   *
   * <p>Best effort, after the cancel committed. A stop that reaches a worker already gone changes
   * nothing. A stop that is lost is covered by the worker's heartbeat, which reads the flag about
   * once a minute ({@code JobContext.HEARTBEAT_INTERVAL}). A stop that arrives after the job ended
   * (it finished first) and its worker chained the next job of its lane interrupts that job: it
   * goes back to the head of its lane with its progress, as after a Spot reclaim, and a fresh
   * worker runs it; only a cancel that races a job's last moments can cause it.
   */
  private void stopForCancel(String taskId, String reason) {
    try {
      platform.stop(taskId, reason);
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "stop of task {0} ({1}) failed ({2}); its worker sees the cancel at its heartbeat",
          taskId,
          reason,
          e.toString());
    }
  }

  /** Gives or takes a user's dedicated worker, moves their queued jobs, dispatches the new lane. */
  public JobTransitions.LaneChange setDedicated(String userId, boolean dedicated) {
    return updateUser(userId, JobTransitions.UserChange.dedicated(dedicated));
  }

  /** Changes a user's dedicated worker and quota; moved jobs are dispatched in their new lane. */
  public JobTransitions.LaneChange updateUser(String userId, JobTransitions.UserChange userChange) {
    JobTransitions.LaneChange change = jobs.updateUser(userId, userChange);
    if (change.movedCount() > 0) {
      dispatchAfterCommit(change.lane());
    }
    return change;
  }

  /**
   * Fills the lane's free slots with workers for its oldest queued jobs and launches them. Returns
   * the dispatches made. A unique violation on the slot means another dispatcher won the race.
   */
  public List<DispatchTransitions.Dispatched> dispatchLane(String lane) {
    return dispatchLane(lane, LaunchGate.OPEN);
  }

  /**
   * What a caller that makes many launches (the tick) puts between the queue and the platform: it
   * is asked before each dispatch (and may wait for the platform's request rate, or refuse, which
   * leaves the lane's job queued) and told each launch's outcome.
   */
  interface LaunchGate {
    boolean mayLaunch();

    void launched(LaunchOutcome outcome);

    LaunchGate OPEN =
        new LaunchGate() {
          @Override
          public boolean mayLaunch() {
            return true;
          }

          @Override
          public void launched(LaunchOutcome outcome) {}
        };
  }

  List<DispatchTransitions.Dispatched> dispatchLane(String lane, LaunchGate gate) {
    List<DispatchTransitions.Dispatched> done = new ArrayList<>();
    int races = 0;
    while (true) {
      if (!dispatching || !gate.mayLaunch()) {
        return done;
      }
      Optional<DispatchTransitions.Dispatched> next;
      try {
        next = dispatch.dispatch(lane);
      } catch (UniqueViolationException anotherDispatcherWon) {
        // With one slot the winner launches and we are done; with more, a free one may remain.
        if (++races >= Lanes.capacity(lane, config)) {
          return done;
        }
        continue;
      }
      if (next.isEmpty()) {
        return done;
      }
      done.add(next.get());
      gate.launched(launch(next.get().launch()));
      if (!next.get().moreToDo()) {
        return done;
      }
    }
  }

  /**
   * Dispatches a lane after the caller's own transition committed. A failure here (a deadlock with
   * another dispatcher, a lost connection) must not fail the caller: its job or exit is already
   * safely recorded, and the next tick dispatches every lane with queued jobs and a free slot.
   */
  private void dispatchAfterCommit(String lane) {
    dispatchAfterCommit(lane, LaunchGate.OPEN);
  }

  private void dispatchAfterCommit(String lane, LaunchGate gate) {
    try {
      dispatchLane(lane, gate);
    } catch (DatabaseException e) {
      LOG.log(
          Level.WARNING,
          "dispatch of lane {0} failed ({1}); the next tick dispatches it",
          lane,
          e.getMessage());
    }
  }

  /** Starts the task for a dispatched worker and records the outcome. */
  LaunchOutcome launch(WorkerLaunch launch) {
    return launch(launch, false);
  }

  /**
   * Launches again a worker whose launch outcome was never recorded, with the same token, and
   * records the outcome. A refusal made before the platform looked at the token ({@link
   * LaunchOutcome.NotStarted#beforeToken}: IAM denying the call mid-deploy) says nothing of the
   * earlier request, which may have started the task: it is unknown, and the slot stays held.
   */
  LaunchOutcome relaunch(WorkerLaunch launch) {
    return launch(launch, true);
  }

  private LaunchOutcome launch(WorkerLaunch launch, boolean relaunch) {
    LaunchOutcome outcome;
    try {
      outcome = platform.launch(launch);
    } catch (RuntimeException e) {
      outcome = new LaunchOutcome.Unknown(e.toString());
    }
    if (relaunch && outcome instanceof LaunchOutcome.NotStarted n && n.beforeToken()) {
      outcome =
          new LaunchOutcome.Unknown(
              "relaunch refused before the platform looked at its token, so an earlier"
                  + " request may have started the task: "
                  + n.reason());
    }
    record(launch, outcome);
    return outcome;
  }

  private void record(WorkerLaunch launch, LaunchOutcome outcome) {
    if (outcome instanceof LaunchOutcome.Started s) {
      dispatch.recordStarted(launch, s.taskId());
    } else if (outcome instanceof LaunchOutcome.NotStarted n) {
      LOG.log(
          Level.WARNING,
          "worker {0} in {1} not started: {2}",
          launch.workerId(),
          launch.slot(),
          n.reason());
      exits.launchFailed(launch, n.reason(), n.retryable());
    } else if (outcome instanceof LaunchOutcome.Unknown u) {
      // Keep the slot: the task may be starting. The tick retries with the same token.
      LOG.log(
          Level.WARNING,
          "worker {0} in {1}: launch outcome unknown ({2}); slot held until the tick resolves it",
          launch.workerId(),
          launch.slot(),
          u.reason());
    }
  }

  /**
   * Termination evidence for a task (an ECS STOPPED event, a local process seen gone): the worker
   * exits, its job is recovered (or, if the worker never started, counted as a launch failure), and
   * its lane is dispatched. Duplicates change nothing.
   *
   * @param workerId from the task's {@code startedBy}, when known (covers an event that arrives
   *     before the launch recorded the task id)
   * @param token from the task's environment, when known; must then match
   */
  public Optional<ExitTransitions.Exited> taskStopped(
      String taskId, Long workerId, UUID token, String reason) {
    return taskStopped(taskId, workerId, token, reason, LaunchGate.OPEN);
  }

  Optional<ExitTransitions.Exited> taskStopped(
      String taskId, Long workerId, UUID token, String reason, LaunchGate gate) {
    Optional<ExitTransitions.Exited> exited = exits.exited(taskId, workerId, token, reason);
    if (exited.isEmpty()) {
      // Rare, so a second statement here costs nothing on the common path: the worker never
      // started (its task failed to start, its process died first), or this is a duplicate.
      exited =
          exits
              .exitedBeforeStart(taskId, workerId, token, reason)
              .map(ExitTransitions.NotStarted::exited);
    }
    exited.ifPresent(exitListener::exited);
    // Always a fresh statement, never the exit's own view of the lane: an enqueue that saw this
    // worker still live (and so skipped its dispatch) may commit while the exit runs, and only a
    // statement that starts after both sees its job. The enqueue's share lock on the live workers
    // guarantees that either it sees this exit or this dispatch sees its job.
    exited.ifPresent(e -> dispatchAfterCommit(e.lane(), gate));
    return exited;
  }

  /**
   * What one tick did. {@code cutShort} names each part that stopped before everything due was
   * done, and why ("out of time", the platform throttled it); empty when the tick caught up.
   */
  public record TickReport(
      int checked,
      int exited,
      int relaunched,
      int reclaimed,
      int stopRequests,
      int dispatched,
      long housekeptWorkers,
      long housekeptJobs,
      List<String> cutShort) {}

  /**
   * The most one tick may run, whatever its caller allows: half the launch grace (see {@link
   * TickBudget}).
   */
  public Duration maxTickBudget() {
    return config.launchGrace().dividedBy(2);
  }

  /** The scheduled pass with the longest budget the queue allows ({@link #maxTickBudget}). */
  public TickReport tick() {
    return tick(TickBudget.of(maxTickBudget()));
  }

  /**
   * The scheduled pass: liveness checks, resolution of unknown launches, lease reclaim of workers
   * that cannot be checked, dispatch of every lane with queued jobs and a free slot, housekeeping;
   * each worked through in batches until done or until the budget (at most {@link #maxTickBudget})
   * is spent, at the pace the platform allows ({@link TickPass}).
   */
  public TickReport tick(TickBudget budget) {
    return new TickPass(this, platform, tick, dispatch, budget.atMost(maxTickBudget())).run();
  }
}
