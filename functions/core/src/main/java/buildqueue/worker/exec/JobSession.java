package buildqueue.worker.exec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The processes of one job: the session (and process group) its program leads, found through {@code
 * /proc}. A program started through {@code setsid} is the leader of a new session whose id is its
 * pid; everything it starts stays in that session unless it leaves it on purpose, and whatever
 * leaves it but is still its descendant is found through the process tree while the program lives.
 *
 * <p>Linux never reuses a pid while a process still has it as its session or process group id, so
 * the session id names this job's processes for as long as any is left. Only when all are gone can
 * the pid come back, as some other process; the leader's start time (in clock ticks since boot, as
 * {@code /proc/<pid>/stat} gives it) tells that one apart.
 *
 * @param sid the program's pid, which is its session and process group id
 * @param startTicks the leader's start time, field 22 of {@code /proc/<pid>/stat}; -1 if unknown
 */
public record JobSession(long sid, long startTicks) {
  private static final Path PROC = Path.of("/proc");

  /**
   * The job's live processes: every process whose session or process group is this one, plus {@code
   * extra} (the program and its descendants, which the caller knows). Zombies are not alive: they
   * hold no resources but a pid and cannot do anything more.
   */
  public List<ProcessHandle> members(List<ProcessHandle> extra) {
    List<ProcessHandle> found = new ArrayList<>();
    for (ProcessHandle h : extra) {
      if (h.isAlive() && !isZombie(h.pid()) && found.stream().noneMatch(f -> f.pid() == h.pid())) {
        found.add(h);
      }
    }
    if (!sessionIsOurs()) {
      return found;
    }
    try {
      for (long pid : Stat.pids()) {
        Optional<Stat> stat = Stat.read(pid);
        if (stat.isEmpty()
            || stat.get().gone()
            || (stat.get().session() != sid && stat.get().group() != sid)) {
          continue;
        }
        if (found.stream().noneMatch(f -> f.pid() == pid)) {
          ProcessHandle.of(pid).ifPresent(found::add);
        }
      }
    } catch (IOException e) {
      // No /proc (not Linux): only the processes the caller knows can be found.
    }
    return found;
  }

  public List<ProcessHandle> members() {
    return members(List.of());
  }

  /**
   * Sends SIGTERM ({@code force} false) or SIGKILL to each process; returns how many were sent it.
   * Each handle checks its process's start time first, so a pid reused since it was found is never
   * signalled.
   */
  public static int signal(List<ProcessHandle> processes, boolean force) {
    int sent = 0;
    for (ProcessHandle h : processes) {
      boolean ok = force ? h.destroyForcibly() : h.destroy();
      if (ok) {
        sent++;
      }
    }
    return sent;
  }

  /**
   * SIGKILL to every process of the session, again and again (a process may fork between one look
   * and the next), until none is left or {@code patience} has passed; returns how many are left.
   */
  public int killAll(Duration patience) throws InterruptedException {
    long deadline = System.nanoTime() + patience.toNanos();
    List<ProcessHandle> left = members();
    while (!left.isEmpty()) {
      signal(left, true);
      if (System.nanoTime() >= deadline) {
        return members().size();
      }
      Thread.sleep(10);
      left = members();
    }
    return 0;
  }

  /**
   * False when the pid is alive as some other process than the job's leader: then the whole session
   * is gone (its id could not have been reused otherwise) and nothing may be signalled.
   */
  private boolean sessionIsOurs() {
    Optional<Stat> leader = Stat.read(sid);
    return leader.isEmpty()
        || leader.get().gone()
        || startTicks < 0
        || leader.get().startTicks() == startTicks;
  }

  static boolean isZombie(long pid) {
    return Stat.read(pid).map(Stat::gone).orElse(false);
  }

  /**
   * The session a job directory recorded: the leader's own {@code /proc/<pid>/stat} line, which it
   * writes itself before it becomes the program ({@link SetsidLauncher}); empty if there is none
   * that can be read.
   */
  public static Optional<JobSession> readFrom(Path file) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.ISO_8859_1);
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
    int space = text.indexOf(' ');
    if (space < 1) {
      return Optional.empty();
    }
    try {
      long sid = Long.parseLong(text.substring(0, space));
      long start = Stat.parse(text).map(Stat::startTicks).orElse(-1L);
      return sid > 1 ? Optional.of(new JobSession(sid, start)) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /**
   * A process's line of {@code /proc/<pid>/stat}, the fields the job's processes are told apart by.
   */
  record Stat(char state, long parent, long group, long session, long startTicks) {
    boolean gone() {
      return state == 'Z' || state == 'X' || state == 'x';
    }

    /** Every pid {@code /proc} lists now; throws if there is no {@code /proc} (not Linux). */
    static List<Long> pids() throws IOException {
      List<Long> pids = new ArrayList<>();
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, "[0-9]*")) {
        for (Path entry : entries) {
          try {
            pids.add(Long.parseLong(entry.getFileName().toString()));
          } catch (NumberFormatException e) {
            // not a process
          }
        }
      }
      return pids;
    }

    static Optional<Stat> read(long pid) {
      try {
        return parse(
            Files.readString(
                PROC.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.ISO_8859_1));
      } catch (IOException | RuntimeException e) {
        return Optional.empty(); // gone, or no /proc
      }
    }

    static Optional<Stat> parse(String text) {
      // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
      int close = text.lastIndexOf(')');
      if (close < 0 || close + 2 >= text.length()) {
        return Optional.empty();
      }
      String[] f = text.substring(close + 2).strip().split(" ");
      try {
        // After the name: state (3), ppid, pgrp, session, …, starttime (22).
        return Optional.of(
            new Stat(
                f[0].charAt(0),
                Long.parseLong(f[1]),
                Long.parseLong(f[2]),
                Long.parseLong(f[3]),
                Long.parseLong(f[19])));
      } catch (RuntimeException e) {
        return Optional.empty();
      }
    }
  }
}
