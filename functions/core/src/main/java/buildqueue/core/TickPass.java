package buildqueue.core;

import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import java.lang.System.Logger.Level;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One run of the scheduled tick ({@link BuildQueue#tick(TickBudget)}). Each part works through
 * everything due, a batch of {@value #BATCH} at a time, while its budget lasts: liveness checks
 * (one platform check per batch: ECS's DescribeTasks takes 100 tasks), unresolved launches, expired
 * leases, lanes to dispatch; then one batch of housekeeping. Calls that start or stop tasks and
 * calls that check them are paced by the platform's {@link buildqueue.platform.CallRates}; a call
 * the platform throttles anyway (other callers share its limits) stops that part for this run, and
 * what is left is first in line at the next tick. A part that stops early is named in the report's
 * {@code cutShort}, with why.
 *
 * <p>First, one statement ({@link TickTransitions#survey}) says which parts have anything due; the
 * others are skipped, so a tick of an idle queue costs that one statement. A part that has work
 * costs what it did before the survey; the survey also reads the queue's gauges, so a tick in which
 * every part has work costs what it did before too.
 */
final class TickPass {
  static final int BATCH = 100;
  private static final System.Logger LOG = System.getLogger(TickPass.class.getName());

  private final BuildQueue queue;
  private final WorkerPlatform platform;
  private final TickTransitions tick;
  private final DispatchTransitions dispatch;
  private final MonotonicClock time;
  private final long deadline;
  private final CallPacer changes;
  private final CallPacer checks;
  private final Gate gate = new Gate();
  private final List<String> cutShort = new ArrayList<>();
  private final boolean readGauges;

  private int checked;
  private int exited;
  private int relaunched;
  private int reclaimed;
  private int stopRequests;
  private int dispatched;

  TickPass(
      BuildQueue queue,
      WorkerPlatform platform,
      TickTransitions tick,
      DispatchTransitions dispatch,
      TickBudget budget,
      boolean readGauges) {
    this.queue = queue;
    this.readGauges = readGauges;
    this.platform = platform;
    this.tick = tick;
    this.dispatch = dispatch;
    this.time = budget.time();
    this.deadline = time.nanoTime() + budget.limit().toNanos();
    this.changes = new CallPacer(platform.callRates().changes(), time);
    this.checks = new CallPacer(platform.callRates().checks(), time);
  }

  BuildQueue.TickReport run() {
    TickTransitions.Survey due = tick.survey(readGauges);
    if (due.dueChecks()) {
      checkLiveness();
    }
    if (due.unresolvedLaunches()) {
      resolveLaunches();
    }
    if (due.expiredLeases()) {
      reclaimLeases();
    }
    if (due.lanesToDispatch() || slotsMayHaveFreed()) {
      dispatchLanes();
    }
    TickTransitions.Housekept housekept =
        due.housekeeping() ? tick.housekeep(1000) : new TickTransitions.Housekept(0, 0);
    return new BuildQueue.TickReport(
        checked,
        exited,
        relaunched,
        reclaimed,
        stopRequests,
        dispatched,
        housekept.workers(),
        housekept.jobs(),
        List.copyOf(cutShort),
        due);
  }

  /**
   * Whether an earlier part of this tick exited a worker (a stop found, a lease reclaimed, a
   * relaunch that failed): its lane's dispatch may have been refused (no launch token to spare
   * without waiting), and the survey, made before, could not see that slot free.
   */
  private boolean slotsMayHaveFreed() {
    return exited + relaunched + reclaimed > 0;
  }

  private boolean timeLeft() {
    return time.nanoTime() < deadline;
  }

  /** The deadline a part's pacing may wait up to: none in its first batch, which always runs. */
  private long deadlineFor(boolean firstBatch) {
    return firstBatch ? Long.MAX_VALUE : deadline;
  }

  private void cut(String part, String why) {
    cutShort.add(part + ": " + why);
    LOG.log(Level.WARNING, "tick: {0} left for the next tick ({1})", part, why);
  }

  // ---- liveness -----------------------------------------------------------------------------

  private void checkLiveness() {
    gate.waitForRate = false;
    Instant asOf = null;
    for (boolean first = true; ; first = false) {
      if (!first && !timeLeft()) {
        cut("liveness checks", "out of time");
        return;
      }
      gate.firstBatch = first;
      List<TickTransitions.DueCheck> due = tick.claimDueChecks(BATCH, asOf);
      if (due.isEmpty()) {
        return;
      }
      asOf = asOf == null ? due.get(0).claimedAt() : asOf;
      if (!checkBatch(due, first) || due.size() < BATCH) {
        return;
      }
    }
  }

  /**
   * Checks one claimed batch in one platform call; false when the rest must wait for the next tick.
   */
  private boolean checkBatch(List<TickTransitions.DueCheck> due, boolean first) {
    Map<String, TickTransitions.DueCheck> byTask = new LinkedHashMap<>();
    for (TickTransitions.DueCheck d : due) {
      if (platform.canCheck(d.taskId())) {
        byTask.put(d.taskId(), d);
      }
    }
    if (byTask.isEmpty()) {
      return true;
    }
    if (!checks.acquire(deadlineFor(first))) {
      // The claimed workers are due again after the liveness interval, first in line.
      cut("liveness checks", "out of time");
      return false;
    }
    Map<String, TaskState> states = platform.check(byTask.keySet());
    boolean throttled = false;
    for (TickTransitions.DueCheck d : byTask.values()) {
      TaskState state = states.getOrDefault(d.taskId(), new TaskState.Missing());
      if (state instanceof TaskState.Unanswered u) {
        throttled |= u.throttled();
        continue;
      }
      checked++;
      if (state instanceof TaskState.Stopped s) {
        exited += stopped(d.taskId(), d.workerId(), s.reason()) ? 1 : 0;
      } else if (state instanceof TaskState.Missing && d.leaseExpired()) {
        exited += stopped(d.taskId(), d.workerId(), "task missing after its lease expired") ? 1 : 0;
      } else if (state instanceof TaskState.Running && d.leaseExpired() && gate.mayChange()) {
        // A worker past its lease should have killed itself; ask the platform to make sure. The
        // slot stays held until the stop is confirmed.
        platform.stop(d.taskId(), "worker " + d.workerId() + " outlived its lease");
        stopRequests++;
      }
    }
    if (throttled) {
      cut("liveness checks", "the platform throttled its checks");
      return false;
    }
    return true;
  }

  // ---- unresolved launches --------------------------------------------------------------------

  private void resolveLaunches() {
    gate.waitForRate = true;
    for (boolean first = true; ; first = false) {
      if (!first && !timeLeft()) {
        cut("unresolved launches", "out of time");
        return;
      }
      if (gate.closedBecause != null) {
        cut("unresolved launches", gate.closedBecause);
        return;
      }
      // Claim no more than can be launched in time: a claim holds for the launch grace, so a
      // launch claimed and not made waits a minute longer than it need have.
      int limit = changes.affordable(deadlineFor(first), BATCH);
      if (limit < 1) {
        cut("unresolved launches", "out of time");
        return;
      }
      gate.firstBatch = first;
      List<WorkerLaunch> claimed = dispatch.claimUnresolvedLaunches(limit);
      for (WorkerLaunch launch : claimed) {
        if (!gate.mayLaunch()) {
          cut("unresolved launches", gate.closedBecause);
          return;
        }
        gate.launched(queue.relaunch(launch));
        relaunched++;
      }
      if (claimed.size() < limit) {
        return;
      }
    }
  }

  // ---- expired leases -----------------------------------------------------------------------

  private void reclaimLeases() {
    gate.waitForRate = false;
    long after = 0;
    for (boolean first = true; ; first = false) {
      if (!first && !timeLeft()) {
        cut("expired leases", "out of time");
        return;
      }
      gate.firstBatch = first;
      List<TickTransitions.ExpiredLease> page = tick.expiredLeases(after, BATCH);
      for (TickTransitions.ExpiredLease e : page) {
        after = e.workerId();
        if (e.taskId() != null && platform.canCheck(e.taskId())) {
          continue; // evidence will come from the liveness check, never from the clock alone
        }
        reclaimed +=
            stopped(e.taskId(), e.workerId(), "lease expired with no way to check the worker")
                ? 1
                : 0;
      }
      if (page.size() < BATCH) {
        return;
      }
    }
  }

  /**
   * A task's stop: whether its worker exited now, counting in {@link #dispatched} the workers its
   * lane's dispatch launched (a crashed job's next worker), which the report and the {@code
   * TickDispatched} metric once left out.
   */
  private boolean stopped(String taskId, Long workerId, String reason) {
    int before = gate.launches;
    boolean exitedNow = queue.taskStopped(taskId, workerId, null, reason, gate).isPresent();
    dispatched += gate.launches - before;
    return exitedNow;
  }

  // ---- dispatch -----------------------------------------------------------------------------

  private void dispatchLanes() {
    gate.waitForRate = true;
    String after = null;
    List<String> lanes;
    boolean first = true;
    do {
      if (!first && !timeLeft()) {
        cut("lanes to dispatch", "out of time");
        return;
      }
      gate.firstBatch = first;
      lanes = tick.lanesToDispatch(after, BATCH);
      for (String lane : lanes) {
        if (gate.closedBecause != null) {
          cut("lanes to dispatch", gate.closedBecause);
          return;
        }
        dispatched += queue.dispatchLane(lane, gate).size();
      }
      after = lanes.isEmpty() ? null : lanes.get(lanes.size() - 1);
      first = false;
    } while (lanes.size() == BATCH);
  }

  /**
   * Every launch and stop the tick makes passes here: it waits for the platform's rate, refuses
   * once the budget is spent (but not within a part's first batch), and closes for the rest of the
   * run when the platform throttles a launch anyway. A lane whose dispatch it refuses keeps its
   * queued job for the next tick, or the next enqueue or exit in that lane.
   */
  private final class Gate implements BuildQueue.LaunchGate {
    boolean firstBatch = true;

    /**
     * Whether to wait for the platform's rate. The parts that look for evidence do not: finding
     * every dead worker comes first, and a lane whose launch would have to wait is dispatched by
     * the dispatch part, which does.
     */
    boolean waitForRate = true;

    String closedBecause;

    /** Launches made through the gate, of every kind. */
    int launches;

    @Override
    public boolean mayLaunch() {
      return mayChange();
    }

    boolean mayChange() {
      if (closedBecause != null) {
        return false;
      }
      if (!firstBatch && !timeLeft()) {
        closedBecause = "out of time";
        return false;
      }
      if (!waitForRate) {
        return changes.acquire(time.nanoTime());
      }
      if (!changes.acquire(deadlineFor(firstBatch))) {
        closedBecause = "out of time";
        return false;
      }
      return true;
    }

    @Override
    public void launched(LaunchOutcome outcome) {
      launches++;
      if (outcome instanceof LaunchOutcome.Unknown u && u.throttled()) {
        closedBecause = "the platform throttled a launch";
      }
    }
  }
}
