package buildqueue.worker.exec;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Makes a worker process the Linux child subreaper of everything its jobs start ({@code
 * prctl(PR_SET_CHILD_SUBREAPER)}), so that a process that leaves its job's session and is orphaned
 * ({@code setsid cmd &}, a daemon that double-forks and calls {@code setsid()}) is reparented to
 * the worker, not to PID 1, and is found and ended with its attempt ({@link #adopted}).
 *
 * <p>Only a worker process's {@code main} enables it: a worker runs one job at a time, so every
 * orphan it adopts belongs to the attempt it is running or has just ended. A JVM that also runs
 * other programs (tests, the local server with its embedded PostgreSQL) must never be a subreaper,
 * or it would adopt and kill them. Where {@code prctl} is not there (not Linux), {@link #enable}
 * says so once and jobs' sessions are the only boundary, as before.
 *
 * <p>The JDK reaps the children it started itself, each with {@code waitpid} on its own pid; an
 * adopted orphan is reaped here, also by its own pid ({@code waitpid(-1)} would take the JDK's exit
 * statuses). The processes this JVM started are registered ({@link #started}) and never counted as
 * orphans.
 */
public final class Subreaper {
  private static final System.Logger LOG = System.getLogger(Subreaper.class.getName());
  private static final int PR_SET_CHILD_SUBREAPER = 36;
  private static final int WNOHANG = 1;

  private static volatile boolean active;
  private static final Set<Process> STARTED = ConcurrentHashMap.newKeySet();

  private Subreaper() {}

  /** The two libc functions used. */
  private interface LibC extends Library {
    int prctl(int option, long arg2, long arg3, long arg4, long arg5);

    int waitpid(int pid, int[] status, int options);
  }

  private static final class Holder {
    static final LibC C = Native.load("c", LibC.class);
  }

  /**
   * Makes this process a child subreaper; true if it is one now. Called once, at a worker process's
   * start; false (logged once) where the system has no such call.
   */
  public static synchronized boolean enable() {
    if (active) {
      return true;
    }
    String os = System.getProperty("os.name", "");
    if (!os.toLowerCase(java.util.Locale.ROOT).contains("linux")) {
      LOG.log(
          Level.INFO,
          "not Linux ({0}): a job''s processes that leave its session are not adopted by the"
              + " worker; a job that daemonizes itself may outlive it",
          os);
      return false;
    }
    try {
      int rc = Holder.C.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
      if (rc != 0) {
        LOG.log(
            Level.WARNING,
            "prctl(PR_SET_CHILD_SUBREAPER) failed (errno {0}): a job''s processes that"
                + " leave its session are not adopted by the worker",
            Native.getLastError());
        return false;
      }
    } catch (LinkageError | RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "cannot call prctl ("
              + e
              + "): a job's processes that leave its session are not"
              + " adopted by the worker");
      return false;
    }
    active = true;
    return true;
  }

  /** Whether this process adopts its jobs' orphans. */
  public static boolean active() {
    return active;
  }

  /** A process this JVM started itself: the JDK reaps it, and it is not an orphan. */
  static void started(Process process) {
    if (!active) {
      return;
    }
    STARTED.add(process);
    process.onExit().thenRun(() -> STARTED.remove(process));
  }

  /**
   * The live orphans this process adopted, with their descendants; empty unless {@link #active}.
   * Adopted orphans that have already exited are reaped on the way (each by its own pid).
   */
  static List<ProcessHandle> adopted() {
    if (!active) {
      return List.of();
    }
    long self = ProcessHandle.current().pid();
    Set<Long> own = STARTED.stream().map(Process::pid).collect(Collectors.toSet());
    List<ProcessHandle> found = new ArrayList<>();
    try {
      for (long pid : JobSession.Stat.pids()) {
        if (own.contains(pid)) {
          continue;
        }
        Optional<JobSession.Stat> stat = JobSession.Stat.read(pid);
        if (stat.isEmpty() || stat.get().parent() != self) {
          continue; // gone, or not ours
        }
        if (stat.get().gone()) {
          reap(pid);
        } else {
          ProcessHandle.of(pid)
              .ifPresent(
                  h -> {
                    found.add(h);
                    h.descendants().forEach(found::add);
                  });
        }
      }
    } catch (IOException e) {
      // no /proc: nothing can have been adopted either
    }
    return found;
  }

  private static void reap(long pid) {
    try {
      Holder.C.waitpid((int) pid, new int[1], WNOHANG);
    } catch (LinkageError | RuntimeException e) {
      LOG.log(Level.WARNING, "could not reap adopted process " + pid + ": " + e);
    }
  }
}
