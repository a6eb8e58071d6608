package buildqueue.worker;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The programs of the jobs this process is running, so that {@link WorkerProcess#HALT} can kill
 * them before the process ends without cleanup (its hard deadline, a demo crash): a job's program
 * runs in its own session, so it would otherwise outlive the worker and keep working on a job the
 * queue is about to give to another worker.
 *
 * <p>Process-wide because halting is: whatever thread halts, every job of this process dies with
 * it.
 */
public final class RunningJobs {
  private static final Map<Long, Runnable> KILLS = new ConcurrentHashMap<>();
  private static final AtomicLong NEXT = new AtomicLong();

  private RunningJobs() {}

  /** What {@link #add} returns: closing it says the job's processes are gone. */
  @FunctionalInterface
  public interface Registration extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * Registers a running job. {@code killNow} must send SIGKILL to every process of the job and
   * return without waiting; it may run on any thread, at most once per {@link #killAllNow}.
   */
  public static Registration add(Runnable killNow) {
    long id = NEXT.incrementAndGet();
    KILLS.put(id, killNow);
    return () -> KILLS.remove(id);
  }

  /** Kills the processes of every registered job, without waiting for them to die. */
  public static void killAllNow() {
    for (Runnable kill : KILLS.values()) {
      try {
        kill.run();
      } catch (RuntimeException | Error e) {
        // The process is halting: one job that cannot be killed must not spare the others.
        System.err.println("buildqueue worker: could not kill a job's processes: " + e);
      }
    }
  }

  /** How many jobs are registered (tests). */
  public static int count() {
    return KILLS.size();
  }
}
