package buildqueue.local;

import buildqueue.platform.TaskState;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * What this host says about worker processes: whether one still runs (its pid, its start time, not
 * a zombie), its arguments, and the labels on its command line by which a server finds the workers
 * a previous server left running.
 */
final class WorkerProcesses {
  static final String LABEL_PROPERTY = "-Dbuildqueue.launch=";
  static final String WORKER_PROPERTY = "-Dbuildqueue.worker=";

  /**
   * Which server's workers these are (a label of its work directory): a server adopts only its own
   * survivors, never the workers of another server on the same host, whose queue is not its own.
   */
  static final String HOME_PROPERTY = "-Dbuildqueue.home=";

  private WorkerProcesses() {}

  /** A worker process a previous server left running, found by its labels. */
  record Survivor(String label, long workerId, ProcessHandle handle, Instant start) {}

  /**
   * The worker processes on this host labelled with {@code home}, the label of a server's work
   * directory.
   */
  static List<Survivor> survivors(String home) {
    List<Survivor> found = new ArrayList<>();
    ProcessHandle.allProcesses()
        .forEach(
            p -> {
              Optional<String[]> args = arguments(p);
              Optional<Instant> start = p.info().startInstant();
              if (args.isEmpty() || start.isEmpty()) {
                return;
              }
              String label = valueOf(args.get(), LABEL_PROPERTY);
              String worker = valueOf(args.get(), WORKER_PROPERTY);
              if (label == null
                  || worker == null
                  || !worker.matches("[0-9]{1,18}")
                  || !home.equals(valueOf(args.get(), HOME_PROPERTY))) {
                return;
              }
              found.add(new Survivor(label, Long.parseLong(worker), p, start.get()));
            });
    return found;
  }

  static TaskState stateOf(LocalTaskId id) {
    Optional<ProcessHandle> handle = ProcessHandle.of(id.pid());
    if (handle.isEmpty() || !handle.get().isAlive()) {
      return new TaskState.Stopped("worker process " + id.pid() + " is gone");
    }
    Optional<Instant> start = handle.get().info().startInstant();
    if (start.isPresent() && start.get().toEpochMilli() != id.startMillis()) {
      return new TaskState.Stopped(
          "worker process " + id.pid() + " is gone (its pid now belongs to another process)");
    }
    if (isZombie(id.pid())) {
      return new TaskState.Stopped("worker process " + id.pid() + " has exited (not yet reaped)");
    }
    return new TaskState.Running();
  }

  /** An exited process its parent has not reaped still has a pid: it is not running. */
  private static boolean isZombie(long pid) {
    try {
      String stat =
          Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
      int close = stat.lastIndexOf(')');
      char state = close >= 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : '?';
      return state == 'Z' || state == 'X';
    } catch (IOException e) {
      return false; // no /proc (macOS): the pid and start time are the check
    }
  }

  /**
   * A process's arguments: from {@code /proc/<pid>/cmdline} where there is one, because the JDK
   * gives up on command lines longer than 4 KiB (a worker's classpath easily is); elsewhere from
   * the JDK.
   */
  static Optional<String[]> arguments(ProcessHandle p) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline"));
      if (raw.length > 0) {
        return Optional.of(new String(raw, StandardCharsets.UTF_8).split("\0"));
      }
    } catch (IOException | RuntimeException e) {
      // no /proc, or the process is gone
    }
    return p.info().arguments();
  }

  private static String valueOf(String[] args, String prefix) {
    for (String a : args) {
      if (a.startsWith(prefix)) {
        return a.substring(prefix.length());
      }
    }
    return null;
  }

  /** A label that names a launch without revealing its token. */
  static String label(UUID token) {
    return label(token.toString());
  }

  /** A label of {@code text}: the start of its SHA-256, in hex. */
  static String label(String text) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }
}
