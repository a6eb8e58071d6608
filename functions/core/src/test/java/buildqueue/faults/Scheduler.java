package buildqueue.faults;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Steps many actor threads one at a time, so a scenario is as deterministic as a single thread.
 *
 * <p>Every actor (an enqueuing client, a tick, a stop-event delivery, an in-process worker) is a
 * real thread running real code. Before each database statement and each platform call it stops at
 * a gate; the simulation picks one gated actor (from a seeded random stream), lets it run to its
 * next gate, and waits until every thread is quiet again (gated or finished) before the next
 * choice. Statements therefore interleave across actors exactly as the seed says, while each
 * statement itself runs alone. Worker threads are started by {@code InProcessPlatform}; they join
 * the schedule at their first gate (or when they end without one), and the scheduler waits for as
 * many as the platform says it started.
 */
final class Scheduler {
  private static final Pattern WORKER_THREAD = Pattern.compile("worker-(\\d+)-inproc-(\\d+)");
  private static final Duration STUCK = Duration.ofSeconds(30);

  enum State {
    RUNNING,
    GATED,
    DONE
  }

  /**
   * One thread in the schedule. Workers sort after clients, by task number; clients by creation.
   */
  static final class Actor {
    final String name;
    final boolean worker;
    final long number;
    final Long workerId;
    final String taskId;
    Thread thread;
    State state = State.RUNNING;
    String pending;

    /** While it waits at a gate: the simulated instant before which it sleeps (a poll), or null. */
    volatile Instant wakeAt;

    final Semaphore go = new Semaphore(0);
    boolean mustEnd;

    Actor(String name, boolean worker, long number, Long workerId, String taskId) {
      this.name = name;
      this.worker = worker;
      this.number = number;
      this.workerId = workerId;
      this.taskId = taskId;
    }

    @Override
    public String toString() {
      return name;
    }
  }

  static final Comparator<Actor> ORDER =
      Comparator.comparing((Actor a) -> a.worker).thenComparingLong(a -> a.number);

  /** Unwinds an actor when the scenario is abandoned. */
  static final class Aborted extends RuntimeException {
    Aborted() {
      super("scenario aborted", null, false, false);
    }
  }

  /** A worker thread killed while it waited at a gate: its statement never reaches the database. */
  static final class KilledAtGate extends RuntimeException {
    KilledAtGate(String actor) {
      super(actor + " was killed before its next statement", null, false, false);
    }
  }

  /** Thrown when threads never go quiet: a statement blocked, or a thread outside the schedule. */
  static final class Stuck extends RuntimeException {
    Stuck(String message) {
      super(message);
    }
  }

  private final Map<Thread, Actor> byThread = new HashMap<>();
  private final Map<String, Actor> byTask = new HashMap<>();
  private final List<Actor> actors = new ArrayList<>();
  private final Set<String> mustEnd = new HashSet<>();
  private final IntSupplier tasksStarted;
  private int workerActors;
  private long clientCounter;
  private boolean aborting;

  Scheduler(IntSupplier tasksStarted) {
    this.tasksStarted = tasksStarted;
  }

  /**
   * Stops the calling actor until it is granted. Threads outside the schedule (the simulation
   * itself) pass straight through and get null. Each actor waits on its own semaphore, so a grant
   * wakes one thread, not all of them.
   */
  Actor gate(String op) {
    Thread me = Thread.currentThread();
    Actor a;
    synchronized (this) {
      a = byThread.get(me);
      if (a == null) {
        a = registerWorker(me);
        if (a == null) {
          return null;
        }
      }
      if (aborting) {
        throw new Aborted();
      }
      a.state = State.GATED;
      a.pending = op;
      notifyAll();
    }
    try {
      a.go.acquire();
    } catch (InterruptedException e) {
      synchronized (this) {
        a.state = State.RUNNING;
        a.pending = null;
      }
      throw new KilledAtGate(a.name);
    }
    synchronized (this) {
      if (aborting) {
        throw new Aborted();
      }
    }
    return a;
  }

  /**
   * As {@link #gate}, for an actor that sleeps until a simulated instant (a job's program polled
   * every so often): it is not eligible before then ({@code Simulation#eligible}), so time must
   * move for it to run again, as for a thread in {@code Thread.sleep}.
   */
  Actor sleep(String op, Instant until) {
    Actor a = current();
    if (a == null) {
      return null;
    }
    synchronized (this) {
      a.wakeAt = until;
    }
    try {
      return gate(op);
    } finally {
      synchronized (this) {
        a.wakeAt = null;
      }
    }
  }

  /** The actor on the calling thread, or null. */
  synchronized Actor current() {
    Actor a = byThread.get(Thread.currentThread());
    return a != null ? a : registerWorker(Thread.currentThread());
  }

  private Actor registerWorker(Thread t) {
    Matcher m = WORKER_THREAD.matcher(t.getName());
    if (!m.matches()) {
      return null;
    }
    String taskId = "inproc-" + m.group(2);
    Actor a =
        new Actor(
            "worker " + m.group(1) + "/" + taskId,
            true,
            Long.parseLong(m.group(2)),
            Long.parseLong(m.group(1)),
            taskId);
    a.thread = t;
    a.mustEnd = mustEnd.remove(taskId);
    byThread.put(t, a);
    byTask.put(taskId, a);
    actors.add(a);
    workerActors++;
    return a;
  }

  /** Starts a client actor and waits until it reaches its first gate or ends. */
  Actor spawn(String kind, Runnable body) {
    Actor a;
    synchronized (this) {
      a = new Actor(kind + "#" + (++clientCounter), false, clientCounter, null, null);
      Thread t =
          new Thread(
              () -> {
                try {
                  body.run();
                } catch (Aborted ignored) {
                  // the scenario is being torn down
                } finally {
                  ended();
                }
              },
              "sim-" + a.name);
      t.setDaemon(true);
      a.thread = t;
      byThread.put(t, a);
      actors.add(a);
    }
    a.thread.start();
    awaitQuiet();
    return a;
  }

  /** Marks the calling thread's actor finished (a worker's stop evidence calls this). */
  synchronized void ended() {
    Actor a = current();
    if (a != null) {
      a.state = State.DONE;
      a.pending = null;
      notifyAll();
    }
  }

  /** Lets one gated actor run to its next gate, then waits until everything is quiet. */
  void grant(Actor a) {
    synchronized (this) {
      if (a.state != State.GATED) {
        throw new IllegalStateException(a + " is not at a gate");
      }
      a.state = State.RUNNING;
      a.pending = null;
    }
    a.go.release();
    awaitQuiet();
  }

  /**
   * Declares that a task is being killed from outside: the schedule is not quiet until it has
   * ended. Safe for tasks that never started a thread or already ended.
   */
  synchronized void expectEnd(String taskId) {
    Actor a = byTask.get(taskId);
    if (a == null) {
      mustEnd.add(taskId);
    } else if (a.state != State.DONE) {
      a.mustEnd = true;
    }
  }

  /** Waits until every actor is gated or done, and every platform task has joined the schedule. */
  void awaitQuiet() {
    List<Thread> toJoin = new ArrayList<>();
    synchronized (this) {
      long deadline = System.nanoTime() + STUCK.toNanos();
      while (!quiet()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new Stuck("threads did not go quiet within " + STUCK + ": " + describe());
        }
        try {
          wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new Stuck("interrupted while waiting for quiet");
        }
      }
      for (Actor a : actors) {
        if (a.state == State.DONE && a.thread.isAlive()) {
          toJoin.add(a.thread);
        }
      }
    }
    // A finished actor may still be leaving its run method (the platform counts a task as ended
    // only after its evidence callback returns); joining keeps platform checks deterministic.
    for (Thread t : toJoin) {
      try {
        t.join(STUCK.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Stuck("interrupted while joining " + t.getName());
      }
      if (t.isAlive()) {
        throw new Stuck(t.getName() + " did not end after finishing");
      }
    }
  }

  private boolean quiet() {
    if (workerActors < tasksStarted.getAsInt()) {
      return false;
    }
    if (!mustEnd.isEmpty()) {
      return false;
    }
    for (Actor a : actors) {
      if (a.state == State.RUNNING || (a.mustEnd && a.state != State.DONE)) {
        return false;
      }
    }
    return true;
  }

  /** Gated actors in their deterministic order. */
  synchronized List<Actor> gated() {
    List<Actor> out = new ArrayList<>();
    for (Actor a : actors) {
      if (a.state == State.GATED) {
        out.add(a);
      }
    }
    out.sort(ORDER);
    return out;
  }

  synchronized int live(boolean workers) {
    int n = 0;
    for (Actor a : actors) {
      if (a.worker == workers && a.state != State.DONE) {
        n++;
      }
    }
    return n;
  }

  /** Task ids of worker threads that have not ended, in task order. */
  synchronized List<String> liveTasks() {
    return actors.stream()
        .filter(a -> a.worker && a.state != State.DONE)
        .sorted(ORDER)
        .map(a -> a.taskId)
        .toList();
  }

  /** Worker threads that have not ended: task id → worker id. */
  synchronized Map<String, Long> liveTaskWorkers() {
    Map<String, Long> out = new HashMap<>();
    for (Actor a : actors) {
      if (a.worker && a.state != State.DONE) {
        out.put(a.taskId, a.workerId);
      }
    }
    return out;
  }

  synchronized boolean allDone() {
    return actors.stream().allMatch(a -> a.state == State.DONE)
        && workerActors >= tasksStarted.getAsInt();
  }

  synchronized String describe() {
    StringBuilder b = new StringBuilder();
    b.append("tasks started ")
        .append(tasksStarted.getAsInt())
        .append(", worker actors ")
        .append(workerActors);
    if (!mustEnd.isEmpty()) {
      b.append(", awaiting unregistered ").append(mustEnd);
    }
    for (Actor a : actors) {
      if (a.state != State.DONE) {
        b.append("\n  ")
            .append(a.name)
            .append(' ')
            .append(a.state)
            .append(a.pending == null ? "" : " at " + a.pending)
            .append(a.wakeAt == null ? "" : " (asleep until " + a.wakeAt + ")")
            .append(a.mustEnd ? " (must end)" : "")
            .append(a.thread.isAlive() ? "" : " (thread gone)");
        if (a.state == State.RUNNING) {
          for (StackTraceElement e : a.thread.getStackTrace()) {
            b.append("\n      at ").append(e);
          }
        }
      }
    }
    return b.toString();
  }

  /** Releases every gated thread with {@link Aborted} and waits for them to end. */
  void abort() {
    List<Thread> threads;
    synchronized (this) {
      aborting = true;
      notifyAll();
      threads = actors.stream().map(a -> a.thread).toList();
      actors.forEach(a -> a.go.release(1_000));
    }
    for (Thread t : threads) {
      try {
        t.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
