package buildqueue.bench;

import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.WorkerLoop;
import buildqueue.worker.WorkerProcess;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Workers as threads that behave, time-scaled, like Fargate tasks for the cost figure: a task
 * starts its worker after a start delay drawn from 30–60 s, is billed from the launch request to
 * its exit (per second, one-minute minimum: {@link MoneyModel}, from each task's timeline), and its
 * STOPPED evidence reaches the queue a few seconds after the exit.
 */
final class FargateModel implements WorkerPlatform {
  static final double START_MIN_S = 30;
  static final double START_MAX_S = 60;
  static final double STOP_EVIDENCE_S = 5;

  /** Where stop evidence goes. */
  interface StopListener {
    void stopped(String taskId, long workerId, UUID token, String reason);
  }

  private final Database db;
  private final QueueConfig config;
  private final JobHandlers handlers;
  private final double scale;
  private final Random random;
  private final ScheduledExecutorService timer =
      Executors.newScheduledThreadPool(
          2,
          r -> {
            Thread t = new Thread(r, "fargate-model");
            t.setDaemon(true);
            return t;
          });
  private final Map<UUID, Task> byToken = new ConcurrentHashMap<>();
  private final Map<String, Task> byId = new ConcurrentHashMap<>();
  private final AtomicInteger counter = new AtomicInteger();
  private final AtomicInteger pendingEvidence = new AtomicInteger();
  private volatile StopListener listener = (t, w, k, r) -> {};

  private final class Task {
    final String id;
    final WorkerLaunch launch;
    final long launchedAt = System.nanoTime();
    volatile long startedAt;
    volatile long exitedAt;
    volatile Thread thread;

    /** Each job's run, start and end in System.nanoTime(): what the money model prices. */
    final List<long[]> jobs = new java.util.concurrent.CopyOnWriteArrayList<>();

    Task(String id, WorkerLaunch launch) {
      this.id = id;
      this.launch = launch;
    }
  }

  /**
   * @param scale model seconds per real second: 200 runs an hour of traffic in 18 s
   */
  FargateModel(Database db, QueueConfig config, JobHandlers handlers, double scale, long seed) {
    this.db = db;
    this.config = config;
    this.handlers = handlers;
    this.scale = scale;
    this.random = new Random(seed);
  }

  void onStopped(StopListener l) {
    this.listener = l;
  }

  @Override
  public LaunchOutcome launch(WorkerLaunch launch) {
    Task existing = byToken.get(launch.token());
    if (existing != null) {
      return new LaunchOutcome.Started(existing.id);
    }
    Task task = new Task("fargate-" + counter.incrementAndGet(), launch);
    byToken.put(launch.token(), task);
    byId.put(task.id, task);
    pendingEvidence.incrementAndGet();
    double startSeconds;
    synchronized (random) {
      startSeconds = START_MIN_S + random.nextDouble() * (START_MAX_S - START_MIN_S);
    }
    timer.schedule(() -> start(task), realNanos(startSeconds), TimeUnit.NANOSECONDS);
    return new LaunchOutcome.Started(task.id);
  }

  private void start(Task task) {
    task.startedAt = System.nanoTime();
    JobHandlers timed = timed(task);
    Thread t =
        new Thread(
            () -> {
              String reason;
              try {
                WorkerProcess process =
                    why -> {
                      throw new IllegalStateException("worker killed: " + why);
                    };
                WorkerLoop loop =
                    new WorkerLoop(
                        db, config, QueueClock.DATABASE, timed, process, WorkerLoop.Listener.NONE);
                reason =
                    "exited: "
                        + loop.run(task.launch.workerId(), task.launch.token())
                            .name()
                            .toLowerCase(java.util.Locale.ROOT);
              } catch (RuntimeException e) {
                reason = "crashed: " + e;
              }
              task.exitedAt = System.nanoTime();
              String why = reason;
              timer.schedule(
                  () -> {
                    try {
                      listener.stopped(task.id, task.launch.workerId(), task.launch.token(), why);
                    } finally {
                      pendingEvidence.decrementAndGet();
                    }
                  },
                  realNanos(STOP_EVIDENCE_S),
                  TimeUnit.NANOSECONDS);
            },
            "model-" + task.id);
    t.setDaemon(true);
    task.thread = t;
    t.start();
  }

  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    Map<String, TaskState> states = new HashMap<>();
    for (String id : taskIds) {
      Task t = byId.get(id);
      if (t == null) {
        states.put(id, new TaskState.Missing());
      } else {
        states.put(
            id,
            t.exitedAt != 0
                ? new TaskState.Stopped("essential container exited")
                : new TaskState.Running());
      }
    }
    return states;
  }

  @Override
  public boolean canCheck(String taskId) {
    return taskId != null && taskId.startsWith("fargate-");
  }

  @Override
  public void stop(String taskId, String reason) {
    Task t = byId.get(taskId);
    if (t != null && t.thread != null) {
      t.thread.interrupt();
    }
  }

  /** Every launched task has exited and its evidence was delivered. */
  boolean idle() {
    return pendingEvidence.get() == 0;
  }

  int launches() {
    return byId.size();
  }

  /** The handlers, each run recorded in the task's timeline. */
  private JobHandlers timed(Task task) {
    return JobHandlers.of(
        handlers.kinds().stream()
            .map(
                kind -> {
                  JobHandler inner = handlers.get(kind).orElseThrow();
                  return new JobHandler() {
                    @Override
                    public String kind() {
                      return kind;
                    }

                    @Override
                    public void validate(com.fasterxml.jackson.databind.JsonNode payload) {
                      inner.validate(payload);
                    }

                    @Override
                    public JobOutcome run(JobContext context) throws Exception {
                      long from = System.nanoTime();
                      try {
                        return inner.run(context);
                      } finally {
                        task.jobs.add(new long[] {from, System.nanoTime()});
                      }
                    }
                  };
                })
            .toArray(JobHandler[]::new));
  }

  /** Every task's timeline in model seconds from its launch request, for the money model. */
  List<MoneyModel.Worker> workers() {
    List<MoneyModel.Worker> out = new ArrayList<>();
    for (Task t : byId.values()) {
      List<MoneyModel.Span> jobs = new ArrayList<>();
      for (long[] j : t.jobs) {
        jobs.add(new MoneyModel.Span(model(j[0] - t.launchedAt), model(j[1] - t.launchedAt)));
      }
      out.add(
          new MoneyModel.Worker(
              model(t.startedAt - t.launchedAt), jobs, model(t.exitedAt - t.launchedAt)));
    }
    return out;
  }

  private double model(long realNanos) {
    return realNanos / 1e9 * scale;
  }

  long realNanos(double modelSeconds) {
    return (long) (modelSeconds / scale * 1e9);
  }

  void shutdown() {
    timer.shutdownNow();
  }
}
