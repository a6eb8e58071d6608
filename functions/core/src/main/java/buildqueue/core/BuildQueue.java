package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.UniqueViolationException;
import buildqueue.platform.Capacity;
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

  private final Database db;
  private final QueueClock clock;
  private final OutboxTransitions.Sender sender;
  private final WorkerPlatform platform;
  private final ExitListener exitListener;
  private final QueueConfig config;
  private final JobTransitions jobs;
  private final DispatchTransitions dispatch;
  private final ExitTransitions exits;
  private final TickTransitions tick;
  private final TickSchedule schedule;
  private final OrderTransitions order;
  private final OperatorTransitions operators;
  private final WebhookEndpoints webhooks;
  private volatile boolean dispatching = true;
  private volatile Capacities capacities = Capacities.ON_DEMAND;

  public BuildQueue(Database db, WorkerPlatform platform, QueueConfig config, QueueClock clock) {
    this(db, platform, config, clock, ExitListener.NONE);
  }

  public BuildQueue(
      Database db,
      WorkerPlatform platform,
      QueueConfig config,
      QueueClock clock,
      ExitListener exitListener) {
    this(db, platform, config, clock, exitListener, null);
  }

  /**
   * @param sender where a request sends the job events its own statements claim (EventBridge); a
   *     submission and a stop then publish what they wrote without a statement of their own for it.
   *     Null: they claim nothing, and publishing is the caller's (the local runtime's loop)
   */
  public BuildQueue(
      Database db,
      WorkerPlatform platform,
      QueueConfig config,
      QueueClock clock,
      ExitListener exitListener,
      OutboxTransitions.Sender sender) {
    this(db, platform, config, clock, exitListener, sender, TickSchedule.ALWAYS);
  }

  /**
   * @param schedule the tick's schedule, which this queue arms on the first enqueue after idle and
   *     disarms when a tick finds no work ({@link TickSchedule#ALWAYS}: neither)
   */
  public BuildQueue(
      Database db,
      WorkerPlatform platform,
      QueueConfig config,
      QueueClock clock,
      ExitListener exitListener,
      OutboxTransitions.Sender sender,
      TickSchedule schedule) {
    this.db = db;
    this.schedule = schedule;
    this.clock = clock;
    this.sender = sender;
    this.platform = platform;
    this.exitListener = exitListener;
    this.config = config;
    this.jobs = new JobTransitions(db, config, clock);
    this.dispatch = new DispatchTransitions(db, config, clock);
    this.exits = new ExitTransitions(db, config, clock);
    this.tick = new TickTransitions(db, config, clock);
    this.order = new OrderTransitions(db, clock);
    this.operators = new OperatorTransitions(db, clock);
    this.webhooks = new WebhookEndpoints(db, clock);
  }

  public QueueConfig config() {
    return config;
  }

  /** The webhook endpoints admins register, and their delivery logs. */
  public WebhookEndpoints webhooks() {
    return webhooks;
  }

  /**
   * Replays a dead webhook delivery ({@link WebhookEndpoints#replay}) and, when it did, arms the
   * tick: a pending delivery is work, and the tick runs the deliverer, but an idle queue's tick is
   * off (docs/architecture.md "Idle at zero").
   */
  public WebhookEndpoints.Replay replayWebhookDelivery(String endpoint, long deliveryId) {
    WebhookEndpoints.Replay r = webhooks.replay(endpoint, deliveryId);
    if (r == WebhookEndpoints.Replay.REPLAYED) {
      try {
        schedule.arm();
      } catch (RuntimeException e) {
        LOG.log(
            Level.WARNING,
            "arming the tick after a webhook replay failed ({0}); the fallback tick delivers it",
            e.toString());
      }
    }
    return r;
  }

  /**
   * What workers run on, per kind (the catalogue's {@code capacity}) and by default. With every
   * kind on on-demand (the default) a launch asks nothing of the database.
   */
  public BuildQueue useCapacities(Capacities c) {
    this.capacities = c;
    return this;
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
    return enqueue(userId, kind, payload, idempotencyKey, supersedeKey, Priority.NORMAL);
  }

  /**
   * As {@link #enqueue(String, String, Json, String, String)}, with a priority among the user's.
   */
  public JobTransitions.Enqueued enqueue(
      String userId,
      String kind,
      Json payload,
      String idempotencyKey,
      String supersedeKey,
      Priority priority) {
    RequestTail tail = newTail();
    JobTransitions.Enqueued enqueued =
        enqueue(userId, kind, payload, idempotencyKey, supersedeKey, priority, null, tail, false);
    finishQuietly(tail, "job " + enqueued.jobId() + "'s enqueue");
    return enqueued;
  }

  /** A job as {@link #submit} enqueued it, and the job as it is after its dispatch, if any. */
  public record Submitted(JobTransitions.Enqueued enqueued, JobQueries.JobView job) {}

  /**
   * {@link #enqueue}, and the job read back for the answer, in at most three statements when the
   * lane has a free slot (enqueue, dispatch, record the task; one dispatch) and two when not
   * (enqueue, read back). The events the request wrote are claimed by its enqueue and its dispatch,
   * sent, and settled by its last statement, which also reads the job back (see {@link
   * RequestTail}).
   *
   * @throws QueueFullException as {@link #enqueue}
   */
  public Submitted submit(
      String userId, String kind, Json payload, String idempotencyKey, String supersedeKey) {
    return submit(userId, kind, payload, idempotencyKey, supersedeKey, Priority.NORMAL);
  }

  /** As {@link #submit(String, String, Json, String, String)}, with a priority among the user's. */
  public Submitted submit(
      String userId,
      String kind,
      Json payload,
      String idempotencyKey,
      String supersedeKey,
      Priority priority) {
    return submit(userId, kind, payload, idempotencyKey, supersedeKey, priority, null);
  }

  /**
   * As {@link #submit(String, String, Json, String, String, Priority)}; a new job keeps {@code
   * traceparent} (null: none), which its events carry and its program receives.
   */
  public Submitted submit(
      String userId,
      String kind,
      Json payload,
      String idempotencyKey,
      String supersedeKey,
      Priority priority,
      TraceContext traceparent) {
    RequestTail tail = newTail();
    JobTransitions.Enqueued enqueued =
        enqueue(
            userId, kind, payload, idempotencyKey, supersedeKey, priority, traceparent, tail, true);
    JobQueries.JobView job =
        tail.finish()
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        "job " + enqueued.jobId() + " was enqueued but cannot be read back"));
    return new Submitted(enqueued, job);
  }

  private JobTransitions.Enqueued enqueue(
      String userId,
      String kind,
      Json payload,
      String idempotencyKey,
      String supersedeKey,
      Priority priority,
      TraceContext traceparent,
      RequestTail tail,
      boolean answer) {
    JobTransitions.Enqueued enqueued =
        jobs.enqueue(
            userId, kind, payload, idempotencyKey, supersedeKey, priority, traceparent, tail);
    if (enqueued.armTick()) {
      // First, before the dispatch: a caller that dies in it has armed already.
      armAfterCommit(enqueued.jobId());
    }
    enqueued
        .cancelRequestedTaskIds()
        .forEach(t -> stopForCancel(t, "job superseded by job " + enqueued.jobId()));
    if (answer) {
      // Before the dispatch: the record of its launch is then the statement that reads it back.
      tail.answering(enqueued.jobId());
    }
    if (enqueued.created() && enqueued.laneHasRoom()) {
      dispatchAfterCommit(enqueued.lane(), LaunchGate.OPEN, tail, 0);
    }
    return enqueued;
  }

  /**
   * Arms the tick's schedule after the enqueue that flipped its flag committed. A failure here is
   * logged, not thrown: the job is recorded (and dispatched, if its lane has room), and the
   * fallback tick, which finds it, arms the schedule again.
   */
  private void armAfterCommit(long jobId) {
    try {
      schedule.arm();
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "arming the tick after job {0} failed ({1}); the fallback tick arms it",
          jobId,
          e.toString());
    }
  }

  /** The tail of one request: claims only when this queue has a sender. */
  private RequestTail newTail() {
    return new RequestTail(db, config, clock, sender, null);
  }

  /**
   * Cancels a job ({@code userId} null: an admin). A job on a worker has its worker stopped (see
   * {@link #stopForCancel}).
   */
  public JobTransitions.Cancelled cancel(long jobId, String userId) {
    RequestTail tail = newTail();
    JobTransitions.Cancelled cancelled = cancel(jobId, userId, tail);
    finishQuietly(tail, "the cancel of job " + jobId);
    return cancelled;
  }

  /** What a cancel did, and the job as it is after it (empty when there is no such job). */
  public record CancelAnswer(
      JobTransitions.Cancelled cancelled, Optional<JobQueries.JobView> job) {}

  /**
   * {@link #cancel}, and the job read back for the answer: two statements (the cancel, which also
   * claims the events it wrote; the read-back, which settles them), one when there is no such job.
   */
  public CancelAnswer cancelAnswering(long jobId, String userId) {
    RequestTail tail = newTail();
    JobTransitions.Cancelled cancelled = cancel(jobId, userId, tail);
    if (!(cancelled instanceof JobTransitions.Cancelled.NotFound)) {
      tail.answering(jobId);
    }
    return new CancelAnswer(cancelled, tail.finish());
  }

  private JobTransitions.Cancelled cancel(long jobId, String userId, RequestTail tail) {
    JobTransitions.Cancelled cancelled = jobs.cancel(jobId, userId, tail);
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

  /**
   * Cancels at most {@link OperatorTransitions#MAX_BULK_CANCEL} of the jobs {@code filter} matches,
   * each as {@link #cancel} does (the workers of running ones are stopped), in one statement that
   * also claims the events it wrote; {@code remaining} says whether to call again.
   */
  public OperatorTransitions.BulkCancelled cancelMatching(OperatorTransitions.CancelFilter filter) {
    RequestTail tail = newTail();
    OperatorTransitions.BulkCancelled done = operators.cancelMatching(filter, tail);
    done.cancelRequestedTaskIds().forEach(t -> stopForCancel(t, "job cancelled by a bulk cancel"));
    finishQuietly(tail, "a bulk cancel");
    return done;
  }

  /** A retry as {@link #retry} enqueued it, and how it was linked to the job it retries. */
  public record Retried(Submitted submitted, OperatorTransitions.RetryLink link) {}

  /**
   * Retries failed or cancelled job {@code oldJobId}: a submission of its kind and payload for its
   * user (quota and all), whose idempotency key names the old job, so a repeated request answers
   * the same retry; then the two jobs are linked both ways ({@link OperatorTransitions#linkRetry}).
   *
   * @throws QueueFullException as {@link #submit}; nothing is written
   */
  public Retried retry(long oldJobId, String userId, String kind, Json payload) {
    Submitted submitted = submit(userId, kind, payload, retryKey(oldJobId), null);
    return new Retried(submitted, operators.linkRetry(oldJobId, submitted.job().id()));
  }

  /** The idempotency key of job {@code jobId}'s retry. */
  public static String retryKey(long jobId) {
    return "retry-of-job-" + jobId;
  }

  /** Gives or takes a user's dedicated worker, moves their queued jobs, dispatches the new lane. */
  public JobTransitions.LaneChange setDedicated(String userId, boolean dedicated) {
    return updateUser(userId, JobTransitions.UserChange.dedicated(dedicated));
  }

  /** Changes a user's dedicated worker and quota; moved jobs are dispatched in their new lane. */
  public JobTransitions.LaneChange updateUser(String userId, JobTransitions.UserChange userChange) {
    RequestTail tail = newTail();
    JobTransitions.LaneChange change = jobs.updateUser(userId, userChange, tail);
    if (change.movedCount() > 0) {
      dispatchAfterCommit(change.lane(), LaunchGate.OPEN, tail, 0);
    }
    finishQuietly(tail, "the change of user " + userId);
    return change;
  }

  /**
   * Settles what a request sent, after its transitions committed: a failure is logged, not thrown
   * (the rows are claimed again once their claim runs out).
   */
  private static void finishQuietly(RequestTail tail, String request) {
    try {
      tail.finish();
    } catch (DatabaseException e) {
      LOG.log(
          Level.WARNING,
          "settling the job events of {0} failed ({1}); they are claimed again later",
          request,
          e.getMessage());
    }
  }

  /**
   * Gives a queued job a priority among its user's ({@code userId}: the owner asking; null: an
   * admin). The order of the lane changes, not its slots: nothing is dispatched.
   */
  public OrderTransitions.Reordered setPriority(long jobId, String userId, Priority priority) {
    return order.setPriorityIfQueued(jobId, userId, priority);
  }

  /**
   * An admin's "run next": the queued job becomes the head of its lane ({@link Priority#NEXT}),
   * then the lane is dispatched, so a free slot takes it at once.
   */
  public OrderTransitions.Reordered runNext(long jobId, String lane) {
    OrderTransitions.Reordered r = order.setPriorityIfQueued(jobId, null, Priority.NEXT);
    if (r instanceof OrderTransitions.Reordered.Done) {
      dispatchLane(lane);
    }
    return r;
  }

  /** Pauses a lane: nothing is dispatched or chained there until it is resumed. */
  public void pauseLane(String lane, String by) {
    order.pause(lane, by);
  }

  /**
   * Resumes a lane and drains it in the same request, as an enqueue does: its free slots take its
   * next jobs now, not at the next tick.
   */
  public void resumeLane(String lane) {
    order.resume(lane);
    dispatchLane(lane);
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
    return dispatchLane(lane, gate, null, 0);
  }

  /**
   * @param tail the request's, whose claims each dispatch adds to and whose settle (and read-back)
   *     the last launch's record carries; null for a caller that publishes on its own (the tick)
   * @param races how many times a concurrent dispatcher already took a free slot of the lane
   */
  private List<DispatchTransitions.Dispatched> dispatchLane(
      String lane, LaunchGate gate, RequestTail tail, int races) {
    List<DispatchTransitions.Dispatched> done = new ArrayList<>();
    if (races >= Lanes.capacity(lane, config)) {
      return done;
    }
    while (true) {
      if (!dispatching || !gate.mayLaunch()) {
        return done;
      }
      Optional<DispatchTransitions.Dispatched> next;
      try {
        next =
            tail != null && tail.claimLimit() > 0
                ? dispatch.dispatchClaiming(lane, tail)
                : dispatch.dispatch(lane);
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
      gate.launched(launch(next.get().launch(), false, tail, !next.get().moreToDo()));
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
    dispatchAfterCommit(lane, LaunchGate.OPEN, null, 0);
  }

  private void dispatchAfterCommit(String lane, LaunchGate gate, RequestTail tail, int races) {
    try {
      dispatchLane(lane, gate, tail, races);
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
    return launch(launch, false, null, true);
  }

  /**
   * Launches again a worker whose launch outcome was never recorded, with the same token, and
   * records the outcome. A refusal made before the platform looked at the token ({@link
   * LaunchOutcome.NotStarted#beforeToken}: IAM denying the call mid-deploy) says nothing of the
   * earlier request, which may have started the task: it is unknown, and the slot stays held.
   */
  LaunchOutcome relaunch(WorkerLaunch launch) {
    return launch(launch, true, null, true);
  }

  /**
   * @param tail the request's (null: none), whose settle the record of a started task carries, and
   *     whose read-back too when {@code last}: no launch follows in this request
   */
  private LaunchOutcome launch(
      WorkerLaunch asked, boolean relaunch, RequestTail tail, boolean last) {
    WorkerLaunch launch = onChosenCapacity(asked);
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
    record(launch, outcome, tail, last);
    return outcome;
  }

  /**
   * The launch on the capacity its job's kind asks for: one statement, and only when some kind (or
   * the default) runs on Spot. If that statement fails the worker runs on on-demand, which costs
   * more but never less safely.
   */
  private WorkerLaunch onChosenCapacity(WorkerLaunch launch) {
    Capacities c = capacities;
    if (c.allOnDemand()) {
      return launch;
    }
    try {
      return launch.on(dispatch.chooseCapacity(launch, c));
    } catch (DatabaseException e) {
      LOG.log(
          Level.WARNING,
          "worker {0}: choosing its capacity failed ({1}); it runs on on-demand",
          launch.workerId(),
          e.getMessage());
      return launch.on(Capacity.ON_DEMAND);
    }
  }

  private void record(WorkerLaunch launch, LaunchOutcome outcome, RequestTail tail, boolean last) {
    if (outcome instanceof LaunchOutcome.Started s
        && s.ranOn() != null
        && s.ranOn() != launch.capacity()) {
      try {
        dispatch.recordCapacity(launch, s.ranOn());
      } catch (DatabaseException e) {
        LOG.log(
            Level.WARNING,
            "worker {0} fell back to {1}; recording it failed: {2}",
            launch.workerId(),
            s.ranOn().label(),
            e.getMessage());
      }
    }
    if (outcome instanceof LaunchOutcome.Started s) {
      if (tail == null) {
        dispatch.recordStarted(launch, s.taskId());
      } else {
        tail.recordStarted(launch, s.taskId(), last);
      }
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
    return taskStopped(taskId, workerId, token, reason, null, LaunchGate.OPEN);
  }

  /**
   * As {@link #taskStopped(String, Long, UUID, String)}, with when the platform billed the task (an
   * ECS STOPPED event's {@code pullStartedAt}, else {@code createdAt}, to {@code stoppedAt}): the
   * worker's bill is that time instead of its launch to this exit (docs/architecture.md §4.8).
   */
  public Optional<ExitTransitions.Exited> taskStopped(
      String taskId, Long workerId, UUID token, String reason, BilledTime billed) {
    return taskStopped(taskId, workerId, token, reason, billed, LaunchGate.OPEN);
  }

  Optional<ExitTransitions.Exited> taskStopped(
      String taskId, Long workerId, UUID token, String reason, LaunchGate gate) {
    return taskStopped(taskId, workerId, token, reason, null, gate);
  }

  private Optional<ExitTransitions.Exited> taskStopped(
      String taskId, Long workerId, UUID token, String reason, BilledTime billed, LaunchGate gate) {
    RequestTail tail = newTail();
    // The exit (or the exit before start, when the worker never started), the dispatch of its lane
    // and the claim of the events they wrote are one round trip (build_exit_worker_and_dispatch,
    // V009). The
    // dispatch is a statement that starts after the exit, never the exit's own view of the lane: an
    // enqueue that saw this worker still live (and so skipped its dispatch) may commit while the
    // exit runs, and only a statement that starts after both sees its job. The enqueue's share
    // lock on the live workers guarantees that either it sees this exit or this dispatch sees its
    // job (the function's header says why that holds within one transaction too).
    Optional<ExitTransitions.Stopped> stopped =
        exits.stopped(
            taskId, workerId, token, reason, billed, dispatching && gate.mayLaunch(), tail);
    if (stopped.isEmpty()) {
      return Optional.empty();
    }
    ExitTransitions.Stopped s = stopped.get();
    ExitTransitions.Exited exited = s.exited();
    exitListener.exited(exited);
    try {
      if (s.dispatched().isPresent()) {
        DispatchTransitions.Dispatched d = s.dispatched().get();
        gate.launched(launch(d.launch(), false, tail, !d.moreToDo()));
        if (d.moreToDo()) {
          dispatchLane(exited.lane(), gate, tail, 0);
        }
      } else if (s.raced()) {
        dispatchLane(exited.lane(), gate, tail, 1);
      } else if (s.dispatchFailed()) {
        LOG.log(
            Level.WARNING,
            "dispatch of lane {0} after worker {1} exited failed; the next tick dispatches it",
            exited.lane(),
            exited.workerId());
      }
      tail.finish();
    } catch (DatabaseException e) {
      // The exit is recorded: as for any dispatch after a commit, the next tick does the rest, and
      // claimed events are claimed again once their claim runs out.
      LOG.log(
          Level.WARNING,
          "after worker {0} exited, dispatch of lane {1} or settling its events failed ({2}); the"
              + " next tick dispatches it",
          exited.workerId(),
          exited.lane(),
          e.getMessage());
    }
    return Optional.of(exited);
  }

  /**
   * What one tick did. {@code cutShort} names each part that stopped before everything due was
   * done, and why ("out of time", the platform throttled it); empty when the tick caught up. {@code
   * found} is what the tick found due when it started (with the queue's gauges as they were then,
   * if asked for).
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
      List<String> cutShort,
      TickTransitions.Survey found) {

    /**
     * Whether job events may wait to be published: some were pending when the tick started, or the
     * tick wrote some itself (every exit, relaunch and dispatch records one).
     */
    public boolean eventsMayBePending() {
      return found.eventsPending() || exited + relaunched + reclaimed + dispatched > 0;
    }
  }

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
    return tick(budget, false);
  }

  /**
   * As {@link #tick(TickBudget)}; with {@code readGauges}, the report's {@code found} also holds
   * the queue's gauges, read in the tick's first statement ({@link TickTransitions#survey}).
   */
  public TickReport tick(TickBudget budget, boolean readGauges) {
    return tick(budget, readGauges, TickSchedule.Cause.SCHEDULE);
  }

  /**
   * As {@link #tick(TickBudget, boolean)}, then the arming of the tick's schedule ({@link
   * #settleSchedule}).
   */
  public TickReport tick(TickBudget budget, boolean readGauges, TickSchedule.Cause cause) {
    TickReport report =
        new TickPass(this, platform, tick, dispatch, budget.atMost(maxTickBudget()), readGauges)
            .run();
    settleSchedule(report, cause);
    return report;
  }

  /**
   * Idle at zero (V014, docs/architecture.md "Idle at zero"). A tick that found work leaves the
   * schedule on, and a fallback tick that found work turns it on (an arm may have been lost). A
   * tick that found none turns the schedule off first and then clears the flag: an enqueue that
   * commits after the clear reads it clear and arms the schedule after its commit, so after this
   * tick's disarm; one that commits before it (or is in flight) keeps the flag set, and this tick
   * arms the schedule again. Either way the schedule ends on while work exists.
   */
  private void settleSchedule(TickReport report, TickSchedule.Cause cause) {
    if (schedule == TickSchedule.ALWAYS) {
      return;
    }
    if (report.found().work()) {
      if (cause == TickSchedule.Cause.FALLBACK) {
        schedule.arm();
      }
      return;
    }
    schedule.disarm();
    boolean clear = false;
    try {
      clear = tick.disarm();
    } finally {
      if (!clear) {
        schedule.arm();
      }
    }
  }
}
