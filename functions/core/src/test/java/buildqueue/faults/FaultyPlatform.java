package buildqueue.faults;

import buildqueue.platform.ForwardingWorkerPlatform;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.InProcessPlatform;
import buildqueue.testing.InProcessPlatform.LaunchPlan;
import buildqueue.worker.WorkerLoop;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The in-process platform as the queue sees it, with launch faults. Each launch request is a
 * scheduling point (a Lambda may stall between its dispatch and its RunTask); then the caller may
 * die, or the request is planned on {@link InProcessPlatform} to start normally, fail definitely,
 * fail for capacity, end with an unknown outcome (the worker starting or not), start late, or start
 * a worker that crashes at a chosen point of its life. A stop is the worker's SIGTERM, which may be
 * lost or late; one asked of a frozen worker takes effect only later ({@link
 * Simulation#stopFrozen}).
 */
final class FaultyPlatform extends ForwardingWorkerPlatform {

  /** A Lambda-style caller dies: nothing after this point of its invocation happens. */
  static final class CallerDied extends Error {
    CallerDied(String why) {
      super(why, null, false, false);
    }
  }

  private static final WorkerLoop.Point[] POINTS = WorkerLoop.Point.values();

  private final InProcessPlatform platform;
  private final Scheduler scheduler;
  private final Simulation sim;
  private final Set<UUID> tokensWithTask = new HashSet<>();

  FaultyPlatform(InProcessPlatform platform, Scheduler scheduler, Simulation sim) {
    super(platform);
    this.platform = platform;
    this.scheduler = scheduler;
    this.sim = sim;
  }

  @Override
  public LaunchOutcome launch(WorkerLaunch launch) {
    Scheduler.Actor actor = scheduler.gate("launch worker " + launch.workerId());
    sim.callerAlive(actor);
    Faults faults = sim.faults();
    if (faults.roll(Fault.CALLER_DIED_BEFORE_LAUNCH)) {
      sim.note(actor, "⚡ caller died between dispatch and launch of worker " + launch.workerId());
      throw new CallerDied("caller died before launching worker " + launch.workerId());
    }
    String planned = "relaunch (same token)";
    boolean late = false;
    // IAM decides before ECS looks at the token: a deploy's refusal meets relaunches too.
    String refused = sim.deployRefusal();
    synchronized (this) {
      if (!tokensWithTask.contains(launch.token())) {
        LaunchPlan plan = LaunchPlan.normal();
        Fault mode =
            faults.pick(
                Fault.LAUNCH_FAILED,
                Fault.LAUNCH_FAILED_RETRYABLE,
                Fault.LAUNCH_UNKNOWN_STARTED,
                Fault.LAUNCH_UNKNOWN_NOT_STARTED);
        switch (mode) {
          case LAUNCH_FAILED -> plan = plan.failDefinitely();
          case LAUNCH_FAILED_RETRYABLE -> plan = plan.failRetryable();
          case LAUNCH_UNKNOWN_STARTED -> plan = plan.unknown(true);
          case LAUNCH_UNKNOWN_NOT_STARTED -> plan = plan.unknown(false);
          default -> {}
        }
        int pointDraw = sim.random().nextInt(POINTS.length);
        if (faults.roll(Fault.WORKER_CRASH)) {
          plan = plan.crashAt(POINTS[pointDraw]);
        }
        late = faults.roll(Fault.LAUNCH_LATE);
        boolean startsThread =
            plan.mode() == InProcessPlatform.LaunchMode.START
                || (plan.mode() == InProcessPlatform.LaunchMode.UNKNOWN && plan.startsAnyway());
        if (startsThread && refused == null) {
          tokensWithTask.add(launch.token());
        } else {
          late = false;
        }
        planned = describe(plan) + (late ? ", starts after its lease" : "");
        if (refused == null) {
          platform.plan(plan);
        }
      }
    }
    if (refused != null) {
      // The plan's draws were made all the same, so that the rest of the scenario draws as it
      // would.
      faults.count(Fault.LAUNCH_REFUSED_BY_DEPLOY);
      LaunchOutcome outcome = new LaunchOutcome.NotStarted(refused, true, true);
      sim.note(
          actor,
          "launch worker "
              + launch.workerId()
              + " ["
              + (planned.startsWith("relaunch") ? planned : "first launch")
              + "] ⚡ refused: "
              + refused);
      if (faults.roll(Fault.CALLER_DIED_AFTER_LAUNCH)) {
        sim.note(
            actor,
            "⚡ caller died after launching worker " + launch.workerId() + ", before recording it");
        throw new CallerDied("caller died after launching worker " + launch.workerId());
      }
      return outcome;
    }
    if (late) {
      sim.startsLate(launch.workerId());
    }
    LaunchOutcome outcome = platform.launch(launch);
    sim.note(
        actor, "launch worker " + launch.workerId() + " [" + planned + "] → " + outcome(outcome));
    if (faults.roll(Fault.CALLER_DIED_AFTER_LAUNCH)) {
      sim.note(
          actor,
          "⚡ caller died after launching worker " + launch.workerId() + ", before recording it");
      throw new CallerDied("caller died after launching worker " + launch.workerId());
    }
    return outcome;
  }

  private static String describe(LaunchPlan plan) {
    String mode =
        switch (plan.mode()) {
          case START -> "start";
          case FAIL -> "fail";
          case FAIL_RETRYABLE -> "fail for capacity";
          case UNKNOWN -> plan.startsAnyway() ? "unknown, starts" : "unknown, never starts";
        };
    return plan.crashAt() == null ? mode : mode + ", crashes " + plan.crashAt();
  }

  private static String outcome(LaunchOutcome o) {
    if (o instanceof LaunchOutcome.Started s) {
      return "started " + s.taskId();
    }
    if (o instanceof LaunchOutcome.NotStarted n) {
      return "not started" + (n.retryable() ? " (retryable)" : "");
    }
    return "unknown";
  }

  /**
   * A stop is SIGTERM to the worker (StopTask, the local signal): it reaches the worker now, later
   * ({@link Fault#STOP_DELAYED}) or never ({@link Fault#STOP_LOST}); one asked of a frozen worker
   * takes effect only later ({@link Simulation#stopFrozen}); one of a cancel drawn to race its
   * job's end is held until the job is off its worker ({@link Simulation#holdRacingStop}). What it
   * does when it arrives: {@link Simulation#stopReaches}.
   */
  @Override
  public void stop(String taskId, String reason) {
    Scheduler.Actor actor = scheduler.current();
    if (sim.frozen(taskId)) {
      sim.stopFrozen(actor, taskId, reason);
      return;
    }
    if (sim.holdRacingStop(actor, taskId, reason)) {
      return;
    }
    Faults faults = sim.faults();
    if (faults.roll(Fault.STOP_LOST)) {
      sim.note(actor, "⚡ stop of task " + taskId + " lost: " + reason);
      return;
    }
    if (faults.roll(Fault.STOP_DELAYED)) {
      sim.delayStop(actor, taskId, reason);
      return;
    }
    sim.stopReaches(actor, taskId, reason);
  }

  /** Kills a task from outside its thread and tells the scheduler to wait for it to end. */
  void kill(String taskId, String reason) {
    if (platform.check(List.of(taskId)).get(taskId) instanceof TaskState.Running) {
      sim.killedFromOutside(taskId, "killed");
      scheduler.expectEnd(taskId);
      platform.kill(taskId, "stopped: " + reason);
    }
  }
}
