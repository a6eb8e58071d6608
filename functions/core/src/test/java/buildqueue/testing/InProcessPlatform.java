package buildqueue.testing;

import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.WorkerLoop;
import buildqueue.worker.WorkerProcess;
import buildqueue.worker.WorkerStop;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * Workers as threads in this JVM, for tests, simulations and benchmarks. Each launch runs the real
 * {@link WorkerLoop} on a thread; a killed worker's database handle refuses every further call, so
 * it writes nothing after its "death", as a halted process would. Switches make launches fail
 * definitely or ambiguously, start late, crash at a chosen point, and withhold or duplicate stop
 * evidence, which otherwise reaches the {@link StopListener} when the thread ends.
 */
public final class InProcessPlatform implements WorkerPlatform {

  /** Where stop evidence goes: in production code, {@code BuildQueue#taskStopped}. */
  @FunctionalInterface
  public interface StopListener {
    void stopped(String taskId, long workerId, UUID token, String reason);
  }

  /** What happens to a worker's stop evidence. */
  public enum Evidence {
    DELIVER,
    WITHHOLD,
    DUPLICATE
  }

  /** Faults for one launch request; {@link #normal()} has none. */
  public record LaunchPlan(
      LaunchMode mode,
      boolean startsAnyway,
      boolean holdStart,
      WorkerLoop.Point crashAt,
      Evidence evidence) {
    public static LaunchPlan normal() {
      return new LaunchPlan(LaunchMode.START, true, false, null, Evidence.DELIVER);
    }

    public LaunchPlan failDefinitely() {
      return new LaunchPlan(LaunchMode.FAIL, false, holdStart, crashAt, evidence);
    }

    public LaunchPlan failRetryable() {
      return new LaunchPlan(LaunchMode.FAIL_RETRYABLE, false, holdStart, crashAt, evidence);
    }

    /** The caller learns nothing; the task does or does not start. */
    public LaunchPlan unknown(boolean startsAnyway) {
      return new LaunchPlan(LaunchMode.UNKNOWN, startsAnyway, holdStart, crashAt, evidence);
    }

    /** The worker waits before its start until {@link InProcessPlatform#releaseHeldStarts()}. */
    public LaunchPlan startLate() {
      return new LaunchPlan(mode, startsAnyway, true, crashAt, evidence);
    }

    public LaunchPlan crashAt(WorkerLoop.Point point) {
      return new LaunchPlan(mode, startsAnyway, holdStart, point, evidence);
    }

    public LaunchPlan evidence(Evidence e) {
      return new LaunchPlan(mode, startsAnyway, holdStart, crashAt, e);
    }
  }

  public enum LaunchMode {
    START,
    FAIL,
    FAIL_RETRYABLE,
    UNKNOWN
  }

  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;
  private final JobHandlers handlers;
  private volatile buildqueue.artifacts.ArtifactStore artifacts =
      buildqueue.artifacts.NoArtifactStore.NONE;
  private final Deque<LaunchPlan> plans = new ArrayDeque<>();
  private final Map<UUID, Task> byToken = new ConcurrentHashMap<>();
  private final Map<String, Task> byId = new ConcurrentHashMap<>();
  private final List<Runnable> withheld = new ArrayList<>();
  private final AtomicInteger launches = new AtomicInteger();
  private final AtomicInteger taskCounter = new AtomicInteger();
  private final Map<String, Set<String>> aliveBySlot = new ConcurrentHashMap<>();
  private final List<String> slotOverlaps = Collections.synchronizedList(new ArrayList<>());
  private volatile CountDownLatch heldStarts = new CountDownLatch(1);
  private volatile StopListener listener = (taskId, workerId, token, reason) -> {};
  private volatile WorkerLoop.DeadlineTimer deadlines = WorkerLoop.DeadlineTimer.WALL_CLOCK;
  private volatile LongSupplier nanoTime = System::nanoTime;
  private volatile Duration exitTime = Duration.ZERO;
  private volatile CountDownLatch heldExits = new CountDownLatch(0);
  private volatile Duration stopTimeout = WorkerStop.DEFAULT_STOP_TIMEOUT;
  private volatile WorkerLoop.Listener points = WorkerLoop.Listener.NONE;

  public InProcessPlatform(
      Database db, QueueConfig config, QueueClock clock, JobHandlers handlers) {
    this.db = db;
    this.config = config;
    this.clock = clock;
    this.handlers = handlers;
  }

  public void onStopped(StopListener listener) {
    this.listener = listener;
  }

  /**
   * How workers arm their hard deadline; by default a wall-clock timer. A simulation that moves a
   * settable clock gives its own, so deadlines fall on the simulated timeline.
   */
  public void deadlineTimer(WorkerLoop.DeadlineTimer timer) {
    this.deadlines = timer;
  }

  /**
   * The monotonic clock workers pace a running program's check-ins on ({@link
   * WorkerLoop#withNanoTime}); by default the system's. A simulation that moves a settable clock
   * gives its own, so each check-in falls at the same simulated instant on every run.
   */
  public void nanoTime(LongSupplier clock) {
    this.nanoTime = clock;
  }

  /**
   * How long a worker's process lives on after its loop has returned, before it is gone and its
   * stop evidence goes out, as a real process takes a moment to exit; none by default. A slot freed
   * before its worker is gone then shows in {@link #slotOverlaps}.
   */
  public void exitTime(Duration time) {
    this.exitTime = time;
  }

  /** Workers whose loop returns from now on stay alive until {@link #releaseHeldExits()}. */
  public void holdExits() {
    heldExits = new CountDownLatch(1);
  }

  /** Lets every worker held by {@link #holdExits()} exit. */
  public void releaseHeldExits() {
    heldExits.countDown();
  }

  /** The next launch requests follow these plans, in order; later ones are normal. */
  public synchronized void plan(LaunchPlan... next) {
    plans.addAll(List.of(next));
  }

  private synchronized LaunchPlan nextPlan() {
    return plans.isEmpty() ? LaunchPlan.normal() : plans.poll();
  }

  /** Lets every worker held by {@link LaunchPlan#startLate()} go on to its start. */
  public void releaseHeldStarts() {
    CountDownLatch held = heldStarts;
    heldStarts = new CountDownLatch(1);
    held.countDown();
  }

  /** Delivers all withheld stop evidence now. */
  public void deliverWithheld() {
    List<Runnable> pending;
    synchronized (withheld) {
      pending = new ArrayList<>(withheld);
      withheld.clear();
    }
    pending.forEach(Runnable::run);
  }

  /** Launch requests received, including failed and repeated ones. */
  public int launchRequests() {
    return launches.get();
  }

  /** Tasks (threads) started. */
  public int tasksStarted() {
    return byId.size();
  }

  /**
   * Each time a worker came alive in a slot while another worker of that slot was alive: a slot
   * freed before its worker was gone. A worker is alive from its task's start until it has exited
   * (its loop returned or it was killed, then its {@link #exitTime} or a held exit passed), before
   * its stop evidence goes out. Must stay empty.
   */
  public List<String> slotOverlaps() {
    synchronized (slotOverlaps) {
      return List.copyOf(slotOverlaps);
    }
  }

  /** Kills a worker now, as a crash would: no further writes, stop evidence as planned. */
  public void kill(String taskId) {
    kill(taskId, "killed by test");
  }

  /** As {@link #kill(String)}, saying why (the worker's exit reason). */
  public void kill(String taskId, String why) {
    Task t = byId.get(taskId);
    if (t != null) {
      t.kill(why);
    }
  }

  /**
   * How long a worker asked to stop has before its platform would SIGKILL it ({@link
   * WorkerStop#stopTimeout}); {@link WorkerStop#DEFAULT_STOP_TIMEOUT} by default. Its own hard
   * deadline still ends it, wherever it is.
   */
  public void stopTimeout(Duration timeout) {
    this.stopTimeout = timeout;
  }

  /** Waits until every task has ended and its evidence was handled (delivered or withheld). */
  public boolean awaitAllEnded(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      boolean any = false;
      for (Task t : byId.values()) {
        long left = deadline - System.nanoTime();
        if (!t.done.await(Math.max(0, left), TimeUnit.NANOSECONDS)) {
          return false;
        }
      }
      // Delivering evidence may have launched new tasks; wait for those too.
      for (Task t : byId.values()) {
        any |= t.done.getCount() > 0;
      }
      if (!any) {
        return true;
      }
    }
  }

  @Override
  public LaunchOutcome launch(WorkerLaunch launch) {
    launches.incrementAndGet();
    Task existing = byToken.get(launch.token());
    if (existing != null) {
      return new LaunchOutcome.Started(existing.id); // idempotent per token, like clientToken
    }
    LaunchPlan plan = nextPlan();
    switch (plan.mode()) {
      case FAIL:
        return new LaunchOutcome.NotStarted(
            "in-process launch refused (configured to fail)", false);
      case FAIL_RETRYABLE:
        return new LaunchOutcome.NotStarted(
            "in-process capacity unavailable (configured to fail)", true);
      case UNKNOWN:
        if (plan.startsAnyway()) {
          start(launch, plan);
        }
        return new LaunchOutcome.Unknown("in-process launch timed out (configured)");
      default:
        return new LaunchOutcome.Started(start(launch, plan).id);
    }
  }

  private synchronized Task start(WorkerLaunch launch, LaunchPlan plan) {
    Task existing = byToken.get(launch.token());
    if (existing != null) {
      return existing;
    }
    Task task = new Task("inproc-" + taskCounter.incrementAndGet(), launch, plan);
    byToken.put(launch.token(), task);
    byId.put(task.id, task);
    task.thread.start();
    return task;
  }

  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    Map<String, TaskState> states = new HashMap<>();
    for (String id : taskIds) {
      Task t = byId.get(id);
      if (t == null) {
        states.put(id, new TaskState.Missing());
      } else if (t.done.getCount() == 0 || !t.thread.isAlive()) {
        states.put(id, new TaskState.Stopped(t.exitReason));
      } else {
        states.put(id, new TaskState.Running());
      }
    }
    return states;
  }

  @Override
  public boolean canCheck(String taskId) {
    return taskId != null && taskId.startsWith("inproc-");
  }

  /**
   * As ECS's StopTask (SIGTERM) and the local platform's signal: the worker's {@link WorkerStop} is
   * requested, and the worker stops its job gracefully (its program gets SIGTERM, its grace, then
   * SIGKILL), records the interruption (a cancelled job ends {@code cancelled}), takes no further
   * job and exits. A task already ended is left as it is. There is no SIGKILL after the stop
   * timeout here: the worker's hard deadline, before its lease, is what bounds a worker that does
   * not stop.
   */
  @Override
  public void stop(String taskId, String reason) {
    Task t = byId.get(taskId);
    if (t != null && t.done.getCount() > 0) {
      t.stop.request("stopped: " + reason);
    }
  }

  /** Whether the worker of this task was asked to stop ({@link #stop}). */
  public boolean stopRequested(String taskId) {
    Task t = byId.get(taskId);
    return t != null && t.stop.requested();
  }

  /** Thrown on a killed worker's thread to unwind it; never caught by the worker loop. */
  static final class WorkerKilled extends Error {
    WorkerKilled(String why) {
      super(why, null, false, false);
    }
  }

  /**
   * Told of every {@link WorkerLoop.Point} of every worker from now on, on the worker's own thread,
   * after a crash its launch plan put there (which ends it first). It may end the worker there
   * ({@link #kill}) or hold it, as a test's own crash would.
   */
  public void onPoint(WorkerLoop.Listener listener) {
    this.points = listener;
  }

  /** The store the workers launched from now on upload artifacts to (default: none). */
  public void useArtifacts(buildqueue.artifacts.ArtifactStore store) {
    this.artifacts = store;
  }

  private final class Task implements WorkerProcess {
    final String id;
    final WorkerLaunch launch;
    final LaunchPlan plan;
    final Thread thread;
    final CountDownLatch done = new CountDownLatch(1);
    final WorkerStop stop = new WorkerStop(stopTimeout, nanoTime);
    volatile boolean killed;
    volatile String exitReason = "running";

    Task(String id, WorkerLaunch launch, LaunchPlan plan) {
      this.id = id;
      this.launch = launch;
      this.plan = plan;
      this.thread = new Thread(this::run, "worker-" + launch.workerId() + "-" + id);
      thread.setDaemon(true);
    }

    @Override
    public void kill(String why) {
      killed = true;
      exitReason = "killed: " + why;
      if (Thread.currentThread() == thread) {
        throw new WorkerKilled(why);
      }
      thread.interrupt();
    }

    private void run() {
      aliveBySlot.compute(
          launch.slot(),
          (slot, alive) -> {
            Set<String> now = alive == null ? new HashSet<>() : alive;
            if (!now.isEmpty()) {
              slotOverlaps.add(
                  "slot "
                      + slot
                      + ": "
                      + id
                      + " (worker "
                      + launch.workerId()
                      + ") started while "
                      + now
                      + " still ran");
            }
            now.add(id);
            return now;
          });
      try {
        if (plan.holdStart()) {
          heldStarts.await();
        }
        WorkerLoop.Listener crashes =
            (point, workerId) -> {
              if (point == plan.crashAt()) {
                kill("crash injected at " + point);
              }
              points.at(point, workerId);
            };
        WorkerLoop loop =
            new WorkerLoop(
                    new CheckedDatabase(db, sql -> alive()),
                    config,
                    clock,
                    handlers,
                    this,
                    crashes,
                    deadlines)
                .withNanoTime(nanoTime)
                .withArtifacts(artifacts)
                .withStop(stop);
        WorkerLoop.Exit exit = loop.run(launch.workerId(), launch.token());
        exitReason = "exited: " + exit.name().toLowerCase(java.util.Locale.ROOT);
      } catch (WorkerKilled e) {
        // exitReason was set by kill()
      } catch (InterruptedException e) {
        exitReason = "interrupted before start";
      } catch (RuntimeException e) {
        // A killed worker's last call fails; otherwise a worker fault: the process would exit
        // non-zero.
        exitReason = killed ? exitReason : "crashed: " + e;
      } finally {
        exiting();
        killed = true;
        aliveBySlot.computeIfPresent(
            launch.slot(),
            (slot, alive) -> {
              alive.remove(id);
              return alive.isEmpty() ? null : alive;
            });
        evidence();
      }
    }

    private void exiting() {
      try {
        heldExits.await();
        Thread.sleep(exitTime.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    private void evidence() {
      Runnable deliver = () -> listener.stopped(id, launch.workerId(), launch.token(), exitReason);
      try {
        switch (plan.evidence()) {
          case WITHHOLD:
            synchronized (withheld) {
              withheld.add(deliver);
            }
            break;
          case DUPLICATE:
            deliver.run();
            deliver.run();
            break;
          default:
            deliver.run();
        }
      } finally {
        done.countDown();
      }
    }

    /** Guards the worker's database handle: it refuses every call once the worker is killed. */
    private void alive() {
      if (killed) {
        throw new WorkerKilled(exitReason);
      }
    }
  }
}
