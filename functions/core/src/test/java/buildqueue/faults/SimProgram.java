package buildqueue.faults;

import buildqueue.worker.exec.JobProcess;
import buildqueue.worker.exec.ProgramExit;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One attempt of a job's program as the simulation runs it: no process, a script on the simulated
 * clock that the real {@code ProcessRunner} starts, polls, signals and reaps through {@link
 * JobProcess}. What it does comes from the job's payload ({@link SimPrograms#payload}): it reports
 * progress through the real control file at its step times, then exits 0 (with a follow-up), or
 * exits with another code (with or without an error line), dies of a signal, exits with its kind's
 * retry code, or never ends by itself; on SIGTERM it dies at once, after a while, or not at all; it
 * may leave a child behind that outlives it (and may ignore SIGTERM too). SIGKILL ends every
 * process of it at once; so does its worker's end ({@link #dieWithWorker}). A program whose payload
 * says {@code "artifacts": n} writes n files under {@code $BUILDQUEUE_ARTIFACTS} as it reaches its
 * own end ({@link #artifacts}: their contents name the attempt), whatever its exit.
 *
 * <p>It keeps what the invariants need: when the runner came back to it ({@link Lap}), when it was
 * sent SIGTERM and SIGKILL, how it ended, the progress and error it reported. Its state is a
 * function of the simulated time: {@link #awaitExit} sleeps on the scheduler until the next poll or
 * the program's end, so time has to move for the runner to see anything happen.
 */
final class SimProgram implements JobProcess {

  /** Where the runner was when it came back: watching the program, or waiting for what it left. */
  enum LapKind {
    WATCH,
    LEFTOVERS
  }

  /**
   * The runner calls on the program again ({@link #awaitExit} or a sleep while processes of the job
   * are left): {@code since} is when its previous call returned (the start, for the first), so all
   * it did in between it decided at {@code since} or later; {@code termAt} and {@code killed} say
   * whether it had sent SIGTERM and SIGKILL by {@code at}.
   */
  record Lap(LapKind kind, Instant since, Instant at, Instant termAt, boolean killed) {}

  /**
   * What the program does to its control file at {@code at} ({@code atEnd}: as it exits by itself).
   */
  private record Line(Instant at, String text, Integer progress, String error, boolean atEnd) {}

  private enum OnSigterm {
    EXIT,
    SLOW,
    IGNORE
  }

  private final SimPrograms programs;
  final long pid;
  final long jobId;
  final long workerId;
  final String taskId;
  final int attempt;
  final Instant startedAt;
  final Duration timeout;
  final Duration grace;
  final String behaviour;
  final boolean ownerCancelsInGrace;
  private final Path control;
  private final Path artifactsDir;
  private final int artifactFiles;
  private boolean artifactsWritten;

  /**
   * What befalls its worker between its uploads and its end on this attempt: {@code "kill"}, {@code
   * "pause"} or null ({@link Fault#WORKER_KILLED_AFTER_UPLOAD}, {@link
   * Fault#WORKER_PAUSED_AFTER_UPLOAD}).
   */
  final String afterUpload;

  private final List<Line> lines = new ArrayList<>();
  private final OnSigterm onSigterm;
  private final Duration termDelay;
  private final boolean hasChild;
  private final boolean childIgnoresSigterm;
  private final Instant naturalEnd;
  private final ProgramExit naturalExit;

  private Instant mainEnd;
  private ProgramExit mainExit;
  private Instant childEnd;
  private int written;
  private Integer lastProgress;
  private String error;
  private Instant termAt;
  private boolean termMainAlive;
  private Instant killAt;
  private boolean orphaned;
  private boolean diedWithWorker;
  private boolean cancelTriggered;
  private Instant lastReturn;
  private final List<Lap> laps = new ArrayList<>();

  SimProgram(
      SimPrograms programs,
      long pid,
      long jobId,
      long workerId,
      String taskId,
      int attempt,
      int resumeFrom,
      JsonNode payload,
      Instant now,
      Duration timeout,
      Duration grace,
      Path control,
      Path artifactsDir) {
    this.programs = programs;
    this.pid = pid;
    this.jobId = jobId;
    this.workerId = workerId;
    this.taskId = taskId;
    this.attempt = attempt;
    this.startedAt = now;
    this.timeout = timeout;
    this.grace = grace;
    this.control = control;
    this.artifactsDir = artifactsDir;
    this.artifactFiles = Math.max(0, payload.path("artifacts").asInt(0));
    this.afterUpload =
        attempt <= payload.path("afterUploadAttempts").asInt(0)
            ? payload.path("afterUpload").asText(null)
            : null;
    this.ownerCancelsInGrace = payload.path("ownerCancelsInGrace").asBoolean(false);

    int steps = payload.path("steps").asInt(0);
    long stepMs = payload.path("stepMs").asLong(500);
    String ends = payload.path("ends").asText("exit");
    int failAt = Math.max(resumeFrom + 1, payload.path("failAt").asInt(1));
    boolean retrying = ends.equals("retry") && attempt <= payload.path("retryAttempts").asInt(0);
    if (ends.equals("retry") && !retrying) {
      ends = "exit"; // later attempts behave
    }
    // The steps it reports before it ends: all of them, up to the one it fails at, or (retrying)
    // none or one.
    int last =
        switch (ends) {
          case "crash", "signal" -> Math.min(failAt - 1, steps);
          case "retry" ->
              payload.path("retryProgresses").asBoolean(false)
                  ? Math.min(resumeFrom + 1, steps)
                  : resumeFrom;
          default -> steps;
        };
    for (int k = resumeFrom + 1; k <= last; k++) {
      lines.add(new Line(at(k - resumeFrom, stepMs), "{\"progress\": " + k + "}", k, null, false));
    }
    Instant end = at(Math.max(last - resumeFrom, 0) + 1, stepMs);
    switch (ends) {
      case "crash" -> {
        if (payload.path("withError").asBoolean(false)) {
          String message = SimPrograms.FAILED_ON_PURPOSE + failAt;
          lines.add(new Line(end, "{\"error\": \"" + message + "\"}", null, message, true));
        }
        naturalEnd = end;
        naturalExit = new ProgramExit.Exited(payload.path("code").asInt(1));
      }
      case "signal" -> {
        naturalEnd = end;
        naturalExit = new ProgramExit.Signalled(payload.path("signal").asInt(11));
      }
      case "retry" -> {
        naturalEnd = end;
        naturalExit = new ProgramExit.Exited(SimPrograms.RETRY_CODE);
      }
      case "hang" -> {
        naturalEnd = null;
        naturalExit = null;
      }
      default -> {
        if (payload.path("followUp").asBoolean(false)) {
          lines.add(
              new Line(
                  end,
                  "{\"followUp\": {\"kind\": \""
                      + SimHandler.KIND
                      + "\", \"payload\": {\"steps\": 1}}}",
                  null,
                  null,
                  true));
        }
        naturalEnd = end;
        naturalExit = new ProgramExit.Exited(0);
      }
    }
    this.mainEnd = naturalEnd;
    this.mainExit = naturalExit;
    this.onSigterm =
        OnSigterm.valueOf(
            payload.path("onSigterm").asText("exit").toUpperCase(java.util.Locale.ROOT));
    this.termDelay = Duration.ofMillis(payload.path("termMs").asLong(0));
    JsonNode child = payload.path("child");
    this.hasChild = child.isObject();
    this.childIgnoresSigterm = child.path("ignoresSigterm").asBoolean(false);
    long outlives = child.path("outlivesMs").asLong(-1);
    this.childEnd =
        hasChild && naturalEnd != null && outlives >= 0 ? naturalEnd.plusMillis(outlives) : null;
    this.behaviour =
        ends
            + (retrying ? " " + SimPrograms.RETRY_CODE : "")
            + ", "
            + (last - resumeFrom)
            + " step(s) of "
            + stepMs
            + " ms from "
            + resumeFrom
            + ", on SIGTERM "
            + onSigterm.name().toLowerCase(java.util.Locale.ROOT)
            + (onSigterm == OnSigterm.SLOW ? " " + termDelay.toMillis() + " ms" : "")
            + (hasChild
                ? ", leaves a child ("
                    + (childEnd == null ? "forever" : outlives + " ms")
                    + ", "
                    + (childIgnoresSigterm ? "ignores" : "obeys")
                    + " SIGTERM)"
                : "")
            + (artifactFiles > 0 ? ", writes " + artifactFiles + " artifact(s) at its end" : "")
            + (afterUpload == null
                ? ""
                : afterUpload.equals("kill")
                    ? ", its worker killed after the upload"
                    : ", its worker paused after the upload");
  }

  private Instant at(long steps, long stepMs) {
    return startedAt.plusMillis(steps * stepMs);
  }

  // ---------------------------------------------------------------- JobProcess, for the runner

  @Override
  public long pid() {
    return pid;
  }

  @Override
  public InputStream stdout() {
    // No output: the runner's pumps read it on threads of their own, so its timing would not be
    // the seed's. The runner's own lines (started, SIGTERM, exited) are the job's log.
    return InputStream.nullInputStream();
  }

  @Override
  public InputStream stderr() {
    return InputStream.nullInputStream();
  }

  @Override
  public boolean awaitExit(Duration max) {
    Instant now = programs.now();
    Instant wake;
    synchronized (this) {
      materialize(now);
      lap(LapKind.WATCH, now);
      if (!mainAlive(now)) {
        lastReturn = now;
        return true;
      }
      wake = now.plus(max);
      if (mainEnd != null && mainEnd.isBefore(wake)) {
        wake = mainEnd; // awaitExit returns as soon as the program exits
      }
    }
    programs.sleep("the program of job " + jobId + " is polled", wake);
    now = programs.now();
    synchronized (this) {
      materialize(now);
      lastReturn = now;
      return !mainAlive(now);
    }
  }

  /** The runner sleeps while processes the program left are alive (it waits out their grace). */
  void sleepWhileLeftovers(Duration d) {
    Instant now = programs.now();
    synchronized (this) {
      if (orphaned || live(now) == 0) {
        return; // nothing to wait for: a simulated SIGKILL takes effect at once
      }
      lap(LapKind.LEFTOVERS, now);
    }
    programs.sleep("what the program of job " + jobId + " left running is awaited", now.plus(d));
    synchronized (this) {
      lastReturn = programs.now();
    }
  }

  @Override
  public synchronized ProgramExit exit() {
    Instant now = programs.now();
    if (mainAlive(now)) {
      throw new IllegalStateException(
          "exit() of job " + jobId + "'s program, which is still running");
    }
    return mainExit;
  }

  @Override
  public synchronized int terminate() {
    Instant now = programs.now();
    materialize(now);
    if (orphaned) {
      return 0;
    }
    boolean main = mainAlive(now);
    boolean child = childAlive(now);
    if (!main && !child) {
      return 0;
    }
    if (termAt == null) {
      termAt = now;
      termMainAlive = main;
    }
    if (main) {
      switch (onSigterm) {
        case EXIT -> end(now, new ProgramExit.Signalled(15));
        case SLOW ->
            end(now.plus(termDelay), ProgramExit.fromExitValue(128 + 15)); // cleans up, exits 143
        default -> {}
      }
    }
    if (child && !childIgnoresSigterm) {
      childEnd = now;
    }
    programs.note(
        "SIGTERM → pid "
            + pid
            + (main ? "" : "'s leftovers")
            + ": "
            + live(now)
            + " of its processes still alive");
    return (main ? 1 : 0) + (child ? 1 : 0);
  }

  @Override
  public synchronized int kill() {
    Instant now = programs.now();
    materialize(now);
    int n = orphaned ? 0 : killAll(now);
    if (n > 0) {
      programs.note("SIGKILL → pid " + pid + ": " + n + " process(es)");
    }
    return n;
  }

  @Override
  public synchronized int remaining() {
    Instant now = programs.now();
    materialize(now);
    return orphaned ? 0 : live(now);
  }

  // ---------------------------------------------------------------- the simulation's side

  /**
   * Its worker was killed from outside (SIGKILL, the platform's stop): the worker's code no longer
   * runs, so nothing the runner does any more reaches the program (its unwinding thread is not a
   * process that could still send signals). Its processes live on until the task's end kills them.
   */
  synchronized void orphan() {
    orphaned = true;
  }

  /**
   * Its worker's task ended: the platform kills what is left (LeftoverJobs, a Fargate task's end).
   */
  synchronized boolean dieWithWorker(Instant now) {
    if (live(now) == 0) {
      return false;
    }
    diedWithWorker = true;
    if (killAt == null) {
      killAt = now;
    }
    killAll(now);
    return true;
  }

  private int killAll(Instant now) {
    boolean main = mainAlive(now);
    boolean child = childAlive(now);
    if (main) {
      end(now, new ProgramExit.Signalled(9));
    }
    if (child) {
      childEnd = now;
    }
    int n = (main ? 1 : 0) + (child ? 1 : 0);
    if (n > 0 && killAt == null) {
      killAt = now;
    }
    return n;
  }

  private void end(Instant at, ProgramExit exit) {
    if (mainEnd == null || at.isBefore(mainEnd)) {
      mainEnd = at;
      mainExit = exit;
    }
  }

  private void lap(LapKind kind, Instant now) {
    laps.add(
        new Lap(kind, lastReturn == null ? startedAt : lastReturn, now, termAt, killAt != null));
  }

  /** Writes the control lines the program wrote up to {@code now}, as it would have. */
  private void materialize(Instant now) {
    StringBuilder out = new StringBuilder();
    while (written < lines.size() && !lines.get(written).at().isAfter(now)) {
      Line l = lines.get(written++);
      boolean happened =
          l.atEnd()
              ? naturalEnd != null
                  && l.at().equals(naturalEnd)
                  && naturalEnd.equals(mainEnd)
                  && naturalExit.equals(mainExit)
              : mainEnd == null || l.at().isBefore(mainEnd);
      if (happened) {
        out.append(l.text()).append('\n');
        if (l.progress() != null) {
          lastProgress = l.progress();
        }
        if (l.error() != null) {
          error = l.error();
        }
      }
    }
    if (out.length() > 0) {
      try {
        Files.writeString(control, out, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
      } catch (NoSuchFileException e) {
        // its job directory is gone: nobody reads what it writes any more
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    if (artifactFiles > 0
        && !artifactsWritten
        && naturalEnd != null
        && !naturalEnd.isAfter(now)
        && naturalEnd.equals(mainEnd)
        && naturalExit.equals(mainExit)) {
      writeArtifacts();
    }
  }

  /** Its files, as it writes them just before it ends by itself. */
  private void writeArtifacts() {
    try {
      for (Map.Entry<String, byte[]> f : artifacts().entrySet()) {
        Path file = artifactsDir.resolve(f.getKey());
        Files.createDirectories(file.getParent());
        Files.write(file, f.getValue());
      }
      artifactsWritten = true;
    } catch (NoSuchFileException e) {
      // its job directory is gone: nobody uploads what it writes any more
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---------------------------------------------------------------- what the invariants read

  /**
   * The files this attempt writes under {@code $BUILDQUEUE_ARTIFACTS} (name → contents), whether it
   * got to write them or not: 1 to 3 files, the same names on every attempt of its job, contents
   * that name the attempt (job, attempt, worker, pid), so that another attempt's files differ.
   */
  Map<String, byte[]> artifacts() {
    Map<String, byte[]> out = new TreeMap<>();
    for (int i = 1; i <= artifactFiles; i++) {
      String name = i == 1 ? "build.txt" : "dist/part-" + i + ".txt";
      String line =
          "job "
              + jobId
              + " attempt "
              + attempt
              + " worker "
              + workerId
              + " pid "
              + pid
              + " file "
              + i
              + "\n";
      out.put(name, line.repeat(i * 2 - 1).getBytes(StandardCharsets.UTF_8));
    }
    return out;
  }

  /** Whether it wrote its files ({@link #artifacts}): it reached its own end. */
  synchronized boolean wroteArtifacts() {
    return artifactsWritten;
  }

  synchronized boolean mainAlive(Instant t) {
    return mainEnd == null || t.isBefore(mainEnd);
  }

  synchronized boolean childAlive(Instant t) {
    return hasChild && (childEnd == null || t.isBefore(childEnd));
  }

  /** Processes of the job alive at {@code t}: the program and its child. */
  synchronized int live(Instant t) {
    return (mainAlive(t) ? 1 : 0) + (childAlive(t) ? 1 : 0);
  }

  synchronized List<Lap> laps() {
    return List.copyOf(laps);
  }

  synchronized int lapCount() {
    return laps.size();
  }

  synchronized Lap lap(int i) {
    return laps.get(i);
  }

  /** When the first SIGTERM reached a process of it; null if none did. */
  synchronized Instant termAt() {
    return termAt;
  }

  /**
   * Whether that SIGTERM found the program itself running (a timeout or a cancel, not its
   * leftovers).
   */
  synchronized boolean termMainAlive() {
    return termMainAlive;
  }

  synchronized Instant killAt() {
    return killAt;
  }

  /** How the program ended, or null while it runs. */
  synchronized ProgramExit exitAt(Instant now) {
    return mainAlive(now) ? null : mainExit;
  }

  /**
   * It ended by itself with its kind's retry code, before any SIGTERM: the runner must interrupt
   * the job.
   */
  synchronized boolean retryExit(Instant now) {
    return !mainAlive(now)
        && naturalEnd != null
        && naturalEnd.equals(mainEnd)
        && new ProgramExit.Exited(SimPrograms.RETRY_CODE).equals(mainExit)
        && !termMainAlive;
  }

  /** The last progress it wrote to its control file, or null. */
  synchronized Integer lastProgress() {
    return lastProgress;
  }

  /** The error it wrote to its control file, or null. */
  synchronized String error() {
    return error;
  }

  synchronized boolean diedWithWorker() {
    return diedWithWorker;
  }

  synchronized boolean timedOut() {
    return termAt != null && termMainAlive && !termAt.isBefore(startedAt.plus(timeout));
  }

  /**
   * In a timeout's grace: SIGTERM sent after the timeout, the program still running, no SIGKILL.
   */
  synchronized boolean inTimeoutGrace(Instant now) {
    return timedOut() && killAt == null && !orphaned && mainAlive(now);
  }

  /** Marks the owner's cancel during the grace as asked for; true the first time. */
  synchronized boolean triggerCancel() {
    if (cancelTriggered) {
      return false;
    }
    cancelTriggered = true;
    return true;
  }

  synchronized boolean orphaned() {
    return orphaned;
  }

  boolean hasChild() {
    return hasChild;
  }

  @Override
  public synchronized String toString() {
    return "program pid "
        + pid
        + " of job "
        + jobId
        + " attempt "
        + attempt
        + " on worker "
        + workerId
        + "/"
        + taskId
        + " ["
        + behaviour
        + "] started +"
        + SimPrograms.at(startedAt)
        + (termAt == null ? "" : ", SIGTERM +" + SimPrograms.at(termAt))
        + (killAt == null ? "" : ", SIGKILL +" + SimPrograms.at(killAt))
        + (mainEnd == null
            ? ""
            : ", "
                + (mainExit == null ? "ends" : mainExit.describe())
                + " at +"
                + SimPrograms.at(mainEnd));
  }
}
