package buildqueue.testing;

import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Predicate;

/**
 * A platform that runs nothing: it records launch requests and answers with outcomes and task
 * states the test sets. The test then plays the worker itself through {@code WorkerTransitions}, so
 * every step of a worker's life happens exactly when the test says.
 */
public final class ManualPlatform implements WorkerPlatform {
  private final List<WorkerLaunch> launches = Collections.synchronizedList(new ArrayList<>());
  private final Deque<LaunchOutcome> outcomes = new ArrayDeque<>();
  private final Map<UUID, String> startedByToken = new ConcurrentHashMap<>();
  private final Map<String, TaskState> states = new ConcurrentHashMap<>();
  private final List<String> stopRequests = Collections.synchronizedList(new ArrayList<>());
  private final List<Collection<String>> checks = Collections.synchronizedList(new ArrayList<>());
  private volatile Predicate<String> checkable = id -> true;
  private volatile BiConsumer<String, String> signal = (taskId, reason) -> {};

  /**
   * The next launches answer these outcomes in order; afterwards a launch starts {@code
   * task-<workerId>}.
   */
  public synchronized void nextOutcomes(LaunchOutcome... next) {
    outcomes.addAll(List.of(next));
  }

  public void setState(String taskId, TaskState state) {
    states.put(taskId, state);
  }

  public void setCheckable(Predicate<String> checkable) {
    this.checkable = checkable;
  }

  public List<WorkerLaunch> launches() {
    synchronized (launches) {
      return List.copyOf(launches);
    }
  }

  public WorkerLaunch lastLaunch() {
    List<WorkerLaunch> all = launches();
    return all.get(all.size() - 1);
  }

  public List<String> stopRequests() {
    synchronized (stopRequests) {
      return List.copyOf(stopRequests);
    }
  }

  public List<Collection<String>> checks() {
    synchronized (checks) {
      return List.copyOf(checks);
    }
  }

  public static String taskIdOf(long workerId) {
    return "task-" + workerId;
  }

  @Override
  public synchronized LaunchOutcome launch(WorkerLaunch launch) {
    launches.add(launch);
    String started = startedByToken.get(launch.token());
    if (started != null) {
      return new LaunchOutcome.Started(started);
    }
    LaunchOutcome outcome =
        outcomes.isEmpty()
            ? new LaunchOutcome.Started(taskIdOf(launch.workerId()))
            : outcomes.poll();
    if (outcome instanceof LaunchOutcome.Started s) {
      startedByToken.put(launch.token(), s.taskId());
    }
    return outcome;
  }

  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    checks.add(List.copyOf(taskIds));
    Map<String, TaskState> out = new HashMap<>();
    for (String id : taskIds) {
      out.put(id, states.getOrDefault(id, new TaskState.Running()));
    }
    return out;
  }

  @Override
  public boolean canCheck(String taskId) {
    return checkable.test(taskId);
  }

  /**
   * What a stop does besides being recorded: by default nothing (the stop is lost, as far as any
   * worker knows). A test that plays the worker with a {@code WorkerStop} passes what requests it,
   * as ECS's SIGTERM would.
   */
  public void onStop(BiConsumer<String, String> signal) {
    this.signal = signal;
  }

  @Override
  public void stop(String taskId, String reason) {
    stopRequests.add(taskId);
    signal.accept(taskId, reason);
  }
}
