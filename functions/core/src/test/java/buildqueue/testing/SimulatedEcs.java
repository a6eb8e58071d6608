package buildqueue.testing;

import buildqueue.core.MonotonicClock;
import buildqueue.core.QueueClock;
import buildqueue.platform.CallRates;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * ECS as the tick meets it at scale, on a settable clock: RunTask idempotent per token,
 * DescribeTasks at most 100 tasks a call, and ECS's request rates as token buckets (Fargate RunTask
 * 20 calls a second, burst and sustained; Fargate launches 100 burst, 20 a second; RunTask and
 * StopTask share a bucket of 100 at 40 a second; DescribeTasks 100 at 20 a second), each call
 * costing a little simulated time. A call past its bucket is refused as ECS's adapter reports it: a
 * launch is unknown and throttled, a check unanswered and throttled. Nothing runs: tasks are
 * records the test stops, with their stop events delivered or lost.
 *
 * <p>Its buckets are its own, independent of the pacing under test; and it records whether a slot
 * ever had two tasks that had not stopped.
 */
public final class SimulatedEcs implements WorkerPlatform {
  /**
   * The rates ECS documents, which the platform declares to the tick as the production adapter
   * does.
   */
  public static final CallRates ECS_RATES =
      new CallRates(new CallRates.Rate(20, 20), new CallRates.Rate(100, 20));

  private final QueueClock.Settable clock;
  private final Bucket runTask = new Bucket(20, 20);
  private final Bucket launches = new Bucket(100, 20);
  private final Bucket modify = new Bucket(100, 40);
  private final Bucket describe = new Bucket(100, 20);
  private final Map<UUID, Task> byToken = new HashMap<>();
  private final Map<String, Task> byId = new LinkedHashMap<>();
  private final List<String> violations = new ArrayList<>();
  private Duration latency = Duration.ZERO;
  private int runTaskCalls;
  private int describeCalls;
  private int throttledRunTasks;
  private int throttledDescribes;
  private int largestDescribe;

  public SimulatedEcs(QueueClock.Settable clock) {
    this.clock = clock;
  }

  /** The tick's budget measured on this simulation's clock; waiting moves the clock. */
  public MonotonicClock time() {
    return new MonotonicClock() {
      @Override
      public long nanoTime() {
        Instant now = clock.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
      }

      @Override
      public void sleep(Duration d) {
        clock.advance(d);
      }
    };
  }

  /** How much simulated time each call takes (default none: calls made at once by many callers). */
  public synchronized void latency(Duration perCall) {
    this.latency = perCall;
  }

  /** A task that was started before the simulation (a running worker's), in its slot. */
  public synchronized void adopt(String taskId, String slot) {
    Task t = new Task(taskId, slot);
    byId.put(taskId, t);
  }

  /** The task stops; its stop event is lost, so only a check can find it. */
  public synchronized void stopSilently(String taskId) {
    byId.get(taskId).stopped = true;
  }

  @Override
  public synchronized LaunchOutcome launch(WorkerLaunch launch) {
    runTaskCalls++;
    clock.advance(latency);
    Task existing = byToken.get(launch.token());
    if (existing != null) {
      return new LaunchOutcome.Started(existing.id);
    }
    Instant now = clock.now();
    if (!(runTask.available(now) >= 1
        && modify.available(now) >= 1
        && launches.available(now) >= 1)) {
      throttledRunTasks++;
      return new LaunchOutcome.Unknown(
          "RunTask throttled (ThrottlingException: Rate exceeded)", true);
    }
    runTask.take(now);
    modify.take(now);
    launches.take(now);
    for (Task t : byId.values()) {
      if (!t.stopped && t.slot.equals(launch.slot())) {
        violations.add(
            "slot "
                + launch.slot()
                + " got a second live task for worker "
                + launch.workerId()
                + " beside "
                + t.id);
      }
    }
    Task t = new Task("sim-task-" + (byId.size() + 1), launch.slot());
    byToken.put(launch.token(), t);
    byId.put(t.id, t);
    return new LaunchOutcome.Started(t.id);
  }

  @Override
  public synchronized Map<String, TaskState> check(Collection<String> taskIds) {
    describeCalls++;
    clock.advance(latency);
    if (taskIds.size() > 100) {
      throw new IllegalArgumentException(
          "DescribeTasks takes at most 100 tasks, was asked for " + taskIds.size());
    }
    largestDescribe = Math.max(largestDescribe, taskIds.size());
    Map<String, TaskState> states = new HashMap<>();
    if (!describe.take(clock.now())) {
      throttledDescribes++;
      taskIds.forEach(
          id -> states.put(id, new TaskState.Unanswered("DescribeTasks throttled", true)));
      return states;
    }
    for (String id : taskIds) {
      Task t = byId.get(id);
      states.put(
          id,
          t == null
              ? new TaskState.Missing()
              : t.stopped
                  ? new TaskState.Stopped("EssentialContainerExited")
                  : new TaskState.Running());
    }
    return states;
  }

  @Override
  public boolean canCheck(String taskId) {
    return taskId != null && (taskId.startsWith("sim-task-") || byId.containsKey(taskId));
  }

  @Override
  public synchronized void stop(String taskId, String reason) {
    clock.advance(latency);
    if (modify.take(clock.now())) {
      Task t = byId.get(taskId);
      if (t != null) {
        t.stopped = true;
      }
    }
  }

  @Override
  public CallRates callRates() {
    return ECS_RATES;
  }

  /** Empties the RunTask buckets, as other callers' launches would. */
  public synchronized void drainLaunchBuckets() {
    Instant now = clock.now();
    while (runTask.take(now)) {
      // drained
    }
  }

  /** Empties the DescribeTasks bucket. */
  public synchronized void drainDescribeBucket() {
    Instant now = clock.now();
    while (describe.take(now)) {
      // drained
    }
  }

  public synchronized List<String> violations() {
    return List.copyOf(violations);
  }

  public synchronized int runTaskCalls() {
    return runTaskCalls;
  }

  public synchronized int describeCalls() {
    return describeCalls;
  }

  public synchronized int throttledRunTasks() {
    return throttledRunTasks;
  }

  public synchronized int throttledDescribes() {
    return throttledDescribes;
  }

  public synchronized int largestDescribe() {
    return largestDescribe;
  }

  /** Tasks started by RunTask (adopted ones not counted). */
  public synchronized int tasksStarted() {
    return byToken.size();
  }

  private static final class Task {
    final String id;
    final String slot;
    boolean stopped;

    Task(String id, String slot) {
      this.id = id;
      this.slot = slot;
    }
  }

  /** A token bucket on the simulation's clock, refilled continuously. */
  private static final class Bucket {
    private final int burst;
    private final double perSecond;
    private double tokens;
    private Instant last;

    Bucket(int burst, double perSecond) {
      this.burst = burst;
      this.perSecond = perSecond;
      this.tokens = burst;
    }

    double available(Instant now) {
      if (last != null && now.isAfter(last)) {
        tokens = Math.min(burst, tokens + Duration.between(last, now).toNanos() / 1e9 * perSecond);
      }
      if (last == null || now.isAfter(last)) {
        last = now;
      }
      return tokens;
    }

    boolean take(Instant now) {
      if (available(now) < 1) {
        return false;
      }
      tokens -= 1;
      return true;
    }
  }
}
