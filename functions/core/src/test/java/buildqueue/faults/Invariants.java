package buildqueue.faults;

import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.core.ExitTransitions;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.faults.Snapshot.J;
import buildqueue.faults.Snapshot.W;
import buildqueue.worker.JobContext;
import buildqueue.worker.exec.ProgramExit;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The invariants of docs/architecture.md §5 (cited as §5.N), checked against the database after
 * every step. Each step runs one actor alone, so the difference between the snapshots before and
 * after it is exactly that actor's doing: that is what makes "a fenced worker's writes change
 * nothing" and "recoveries are counted exactly" checkable from rows alone.
 */
final class Invariants {

  /** What ran in a step, as far as the invariants care. */
  record Step(
      String actor,
      Long workerId,
      boolean expectNoChange,
      Instant now,
      Map<String, Long> liveTasks,
      Set<String> frozenTasks) {}

  /**
   * How a job may fail: the messages the queue, its workers and the simulation's handler give.
   * Anything else (a driver error, a stack trace) means an infrastructure fault reached a user's
   * job as its verdict, instead of being recovered from.
   */
  static final List<String> FAILURE_REASONS =
      List.of(
          SimHandler.FAILED_ON_PURPOSE,
          ExitTransitions.REPEATED_EXIT_ERROR,
          "Could not start a build worker: ",
          "Could not start a build worker after ",
          // A program job (docs/architecture.md §10.1): its own error line, or the runner's words
          // for its end.
          SimPrograms.FAILED_ON_PURPOSE,
          "exited with code ",
          "killed by signal ",
          "timed out after ");

  /**
   * docs/architecture.md §5.6: a job fails only after four consecutive interruptions without
   * progress, i.e. it goes back to the queue while its count of them is at most three. The oracle
   * holds the design's number, not the core's constant ({@code ExitTransitions.MAX_RECOVERIES}): a
   * check that read the number from the code it checks would agree with any off-by-one in it.
   */
  static final int INTERRUPTIONS_RETRIED = 3;

  private final Duration margin;
  private final boolean fair;
  private final int maxLaunchFailures;

  /** How many of each job's launch failures were a deploy window's refusals. */
  private final Map<Long, Integer> deployRefusals = new HashMap<>();

  /**
   * For each user waiting in the shared lane: how often each other user was dispatched there since.
   */
  private final Map<String, Map<String, Integer>> servedWhileWaiting = new HashMap<>();

  private SimPrograms programs;

  /** When each job's cancel request was first seen committed. */
  private final Map<Long, Instant> cancelSeen = new HashMap<>();

  /** When a stop (SIGTERM: a cancel's, a supersede's, the tick's) first reached each task. */
  private final Map<String, Instant> stopsReached = new HashMap<>();

  /** How many of each program's laps (by pid) have been checked. */
  private final Map<Long, Integer> lapsChecked = new HashMap<>();

  /** What each program that wrote its artifacts wrote (by pid): name → size and SHA-256. */
  private final Map<Long, Map<String, Stored>> written = new HashMap<>();

  /** A file as the invariants compare it: its size and SHA-256. */
  record Stored(long bytes, String sha256) {
    static Stored of(byte[] contents) {
      try {
        return new Stored(
            contents.length,
            HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(contents)));
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every JVM has SHA-256", e);
      }
    }
  }

  Invariants(QueueConfig config) {
    this.margin = config.deadlineMargin();
    this.fair = config.takesTurns("shared");
    this.maxLaunchFailures = config.maxLaunchFailures();
    this.sharedSlots = config.sharedSlots();
  }

  /**
   * A stop reached the worker of {@code taskId} now (the platform's SIGTERM, on the simulation's
   * clock): from the runner's next poll on, its program must have had SIGTERM.
   */
  synchronized void stopReached(String taskId, Instant at) {
    stopsReached.putIfAbsent(taskId, at);
  }

  /** Checks the job processes of these programs too ({@link #programs}). */
  void watch(SimPrograms programs) {
    this.programs = programs;
  }

  /**
   * Since when each lane has had a job it could start (queued, past its backoff) and a free slot,
   * for as long as that has lasted.
   */
  private final Map<String, Instant> readySince = new HashMap<>();

  private final int sharedSlots;

  /**
   * docs/architecture.md §4.5, "What a lost arm can delay": no job waits in {@code queued} with a
   * free slot in its lane longer than {@code bound} (the fallback's period and the tick's): what a
   * lost arm leaves waiting, the next fallback tick finds. The simulation checks it when it models
   * the tick's schedule.
   */
  String waits(Snapshot s, Instant now, Duration bound) {
    Map<String, Integer> live = new HashMap<>();
    for (W w : s.workers().values()) {
      if (!w.exited()) {
        live.merge(w.lane(), 1, Integer::sum);
      }
    }
    Map<String, J> ready = new HashMap<>();
    for (J j : s.jobs().values()) {
      boolean due = j.notBefore() == null || !j.notBefore().isAfter(now);
      int slots = j.lane().equals("shared") ? sharedSlots : 1;
      if (j.status().equals("queued") && due && live.getOrDefault(j.lane(), 0) < slots) {
        ready.putIfAbsent(j.lane(), j);
      }
    }
    readySince.keySet().retainAll(ready.keySet());
    for (Map.Entry<String, J> e : ready.entrySet()) {
      Instant since = readySince.computeIfAbsent(e.getKey(), k -> now);
      if (Duration.between(since, now).compareTo(bound) > 0) {
        return "§4.5 job "
            + e.getValue().id()
            + " has waited in lane "
            + e.getKey()
            + " with a free slot since "
            + since
            + ", longer than the fallback's bound "
            + bound;
      }
    }
    return null;
  }

  /** The first invariant the step broke, or null. */
  String afterStep(Snapshot prev, Snapshot next, Step step) {
    String v;
    if ((v = slots(next)) != null
        || (v = jobsOnLiveWorkers(next)) != null
        || (v = noSlotFreedUnderALiveWorker(next, step)) != null
        || (v = failuresSayWhy(next)) != null
        || (v = finishedJobsStayFinished(prev, next)) != null
        || (v = artifacts(next)) != null
        || (v = expectedNoChange(prev, next, step)) != null
        || (v = fencing(prev, next, step)) != null
        || (v = transitions(prev, next, step)) != null
        || (v = turns(prev, next)) != null) {
      return v;
    }
    return null;
  }

  /** §5.1: at most one live worker per slot. */
  static String slots(Snapshot s) {
    Map<String, Long> bySlot = new HashMap<>();
    for (W w : s.workers().values()) {
      if (!w.exited()) {
        Long other = bySlot.put(w.slot(), w.id());
        if (other != null) {
          return "§5.1 two live workers in slot " + w.slot() + ": " + other + " and " + w.id();
        }
      }
    }
    return null;
  }

  /** §5.2: a job on a worker is on one live worker, and a worker has one job at a time. */
  static String jobsOnLiveWorkers(Snapshot s) {
    Map<Long, Long> byWorker = new HashMap<>();
    for (J j : s.jobs().values()) {
      if (j.onWorker()) {
        W w = s.workers().get(j.workerId());
        if (w == null || w.exited()) {
          return "§5.2 job "
              + j.id()
              + " is "
              + j.status()
              + " on worker "
              + j.workerId()
              + " which is "
              + (w == null ? "gone" : "exited (" + w.exitReason() + ")")
              + ": it would never finish";
        }
        Long other = byWorker.put(j.workerId(), j.id());
        if (other != null) {
          return "§5.2 worker " + j.workerId() + " holds two jobs: " + other + " and " + j.id();
        }
      }
    }
    return null;
  }

  /**
   * §5.3: a slot is freed only on termination evidence, or by lease expiry for a worker that cannot
   * be checked; never while its worker may still run. So while a worker's task lives (its thread
   * has not ended, whatever the platform was asked):
   *
   * <ul>
   *   <li>a worker whose task id is recorded keeps its slot: the queue can check it, so only the
   *       evidence of its end may free the slot, never the lease alone (§4.5 lease reclaim), even
   *       if the task has not started and no longer can (§1: the slot's next worker must not be
   *       paid for beside it) and even if it is frozen past its lease;
   *   <li>a worker the queue cannot check may lose it once its lease has run out, if its task never
   *       started: the start is fenced by the lease, so it can no longer start.
   * </ul>
   */
  String noSlotFreedUnderALiveWorker(Snapshot s, Step step) {
    for (Map.Entry<String, Long> live : step.liveTasks().entrySet()) {
      W w = s.workers().get(live.getValue());
      if (w == null || !w.exited()) {
        continue;
      }
      boolean checkable = w.taskId() != null;
      boolean canNoLongerStart =
          w.startedAt() == null && !step.now().isBefore(w.expiresAt().minus(margin));
      if (checkable || !canNoLongerStart) {
        return "§5.3 slot "
            + w.slot()
            + " freed (worker "
            + w.id()
            + " exited: "
            + w.exitReason()
            + ") while its task "
            + live.getKey()
            + (step.frozenTasks().contains(live.getKey()) ? " (frozen)" : "")
            + " may still run"
            + (w.startedAt() == null
                ? " (not yet started, lease until " + w.expiresAt() + ")"
                : " (started)")
            + (checkable
                ? "; the queue could check it, so only its stop evidence may free the slot"
                : "");
      }
    }
    return null;
  }

  /** §5.5: a failed job says why, in words a user can act on. */
  static String failuresSayWhy(Snapshot s) {
    for (J j : s.jobs().values()) {
      if (j.status().equals("failed")) {
        if (j.error() == null || FAILURE_REASONS.stream().noneMatch(j.error()::startsWith)) {
          return "§5.5 job "
              + j.id()
              + " failed with an error that is not a verdict on the job: "
              + j.error();
        }
      }
    }
    return null;
  }

  static String finishedJobsStayFinished(Snapshot prev, Snapshot next) {
    for (J before : prev.jobs().values()) {
      if (before.finished()) {
        J after = next.jobs().get(before.id());
        if (after == null
            || !after.status().equals(before.status())
            || after.progress() != before.progress()
            || !Objects.equals(after.error(), before.error())) {
          return "job " + before.id() + " was " + before.status() + " and changed to " + after;
        }
      }
    }
    return null;
  }

  /**
   * §5.10: a job's artifacts are exactly those of its succeeding attempt. Only a succeeded job has
   * published artifacts, all of the attempt (on the worker) that succeeded it; and a succeeded
   * job's are exactly the files its succeeding attempt's program wrote, by name, size and SHA-256
   * (none if it wrote none or ran no program). So an attempt fenced off, killed, failed or
   * cancelled publishes nothing, and no attempt publishes another's files.
   */
  String artifacts(Snapshot s) {
    for (Map.Entry<Long, List<Snapshot.A>> e : s.artifacts().entrySet()) {
      J j = s.jobs().get(e.getKey());
      if (j == null || !j.status().equals("succeeded")) {
        return "§5.10 job "
            + e.getKey()
            + " is "
            + (j == null ? "gone" : j.status() + " (attempt " + j.attempts() + ")")
            + " and has published artifacts "
            + e.getValue()
            + ": only the end that succeeds a job publishes, fenced by its worker's token";
      }
      for (Snapshot.A a : e.getValue()) {
        if (a.attempt() != j.attempts() || !Objects.equals(a.workerId(), j.workerId())) {
          return succeededOn(j)
              + " but its artifact "
              + a.name()
              + " is of attempt "
              + a.attempt()
              + " (worker "
              + a.workerId()
              + ")";
        }
      }
    }
    for (J j : s.jobs().values()) {
      if (!j.status().equals("succeeded")) {
        continue;
      }
      Map<String, Stored> expected = writtenBy(j);
      Map<String, Stored> published = new TreeMap<>();
      for (Snapshot.A a : s.artifacts().getOrDefault(j.id(), List.of())) {
        published.put(a.name(), new Stored(a.bytes(), a.sha256()));
      }
      if (!published.equals(expected)) {
        return succeededOn(j)
            + ", whose program wrote "
            + expected
            + ", but its published artifacts are "
            + published
            + (programs == null ? "" : " — " + programs.of(j.id(), j.attempts()));
      }
    }
    return null;
  }

  /** How a §5.10 violation names a succeeded job: its id, attempt and worker. */
  private static String succeededOn(J j) {
    return "§5.10 job "
        + j.id()
        + " succeeded on attempt "
        + j.attempts()
        + " (worker "
        + j.workerId()
        + ")";
  }

  /** The files the program of the attempt that succeeded {@code j} wrote; none if it wrote none. */
  private Map<String, Stored> writtenBy(J j) {
    SimProgram p =
        programs == null || j.workerId() == null ? null : programs.of(j.id(), j.attempts());
    if (p == null || p.workerId != j.workerId() || !p.wroteArtifacts()) {
      return Map.of();
    }
    return written.computeIfAbsent(
        p.pid,
        pid -> {
          Map<String, Stored> files = new TreeMap<>();
          p.artifacts().forEach((name, contents) -> files.put(name, Stored.of(contents)));
          return files;
        });
  }

  /**
   * §5.10 once everything has finished, every worker has exited and the sweep has run (the recovery
   * waits for it): the store holds exactly the published artifacts, each under the place of the
   * attempt that published it, with the contents its program wrote. No file of an attempt that
   * died, failed, was cancelled or was fenced off remains. (An upload record whose files its own
   * worker removed may wait for a later sweep: the local runtime's tick, and so the simulation's,
   * sweeps only while the store holds anything.)
   */
  String artifactsAtEnd(Snapshot s, Map<AttemptKey, Map<String, byte[]>> store) {
    for (Map.Entry<AttemptKey, Map<String, byte[]>> e : store.entrySet()) {
      AttemptKey key = e.getKey();
      List<Snapshot.A> published = s.artifacts().getOrDefault(key.jobId(), List.of());
      boolean ofThisAttempt =
          !published.isEmpty()
              && published.get(0).attempt() == key.attempt()
              && published.get(0).workerId() == key.workerId();
      if (!ofThisAttempt) {
        J j = s.jobs().get(key.jobId());
        return "§5.10 the store still holds "
            + e.getValue().keySet()
            + " under "
            + key.prefix()
            + ", uploads job "
            + key.jobId()
            + " ("
            + (j == null ? "gone" : j.status() + ", attempt " + j.attempts())
            + ") never published from that attempt, after its worker exited and the sweep ran";
      }
      Map<String, Stored> stored = new TreeMap<>();
      e.getValue().forEach((name, contents) -> stored.put(name, Stored.of(contents)));
      Map<String, Stored> listed = new TreeMap<>();
      published.forEach(a -> listed.put(a.name(), new Stored(a.bytes(), a.sha256())));
      if (!stored.equals(listed)) {
        return "§5.10 job "
            + key.jobId()
            + " published "
            + listed
            + " but the store holds "
            + stored
            + " under "
            + key.prefix();
      }
    }
    for (Map.Entry<Long, List<Snapshot.A>> e : s.artifacts().entrySet()) {
      Snapshot.A a = e.getValue().get(0);
      if (!store.containsKey(new AttemptKey(e.getKey(), a.attempt(), a.workerId()))) {
        return "§5.10 job "
            + e.getKey()
            + " published "
            + e.getValue()
            + " but the store has none of its files: they cannot be downloaded";
      }
    }
    return null;
  }

  /** §5.9 and isolation: duplicated, late or forged evidence, another user's cancel: nothing. */
  static String expectedNoChange(Snapshot prev, Snapshot next, Step step) {
    if (step.expectNoChange() && !prev.equals(next)) {
      return step.actor() + " should have changed nothing, but: " + diff(prev, next);
    }
    return null;
  }

  /** §5.2: a fenced-off worker changes nothing; a live one changes only its own rows. */
  static String fencing(Snapshot prev, Snapshot next, Step step) {
    if (step.workerId() == null) {
      return null;
    }
    long id = step.workerId();
    W before = prev.workers().get(id);
    boolean fenced = before == null || before.exited() || !step.now().isBefore(before.expiresAt());
    if (fenced) {
      if (!prev.equals(next)) {
        return "§5.2 fenced-off worker "
            + id
            + " ("
            + (before == null ? "no row" : before.status() + ", lease until " + before.expiresAt())
            + ") changed the database: "
            + diff(prev, next);
      }
      return null;
    }
    for (W w : next.workers().values()) {
      if (w.id() != id && !w.equals(prev.workers().get(w.id()))) {
        return "§5.2 worker " + id + " changed another worker's row: " + w;
      }
    }
    for (J j : next.jobs().values()) {
      J b = prev.jobs().get(j.id());
      boolean mine =
          b == null || Objects.equals(b.workerId(), id) || Objects.equals(j.workerId(), id);
      if (!j.equals(b) && !mine) {
        return "§5.2 worker "
            + id
            + " changed job "
            + j.id()
            + " which is not its own: "
            + b
            + " → "
            + j;
      }
    }
    return null;
  }

  /** §5.6 and §5.7: what an exit or a failed launch does to a job, and who goes next in a lane. */
  String transitions(Snapshot prev, Snapshot next, Step step) {
    for (J after : next.jobs().values()) {
      J before = prev.jobs().get(after.id());
      if (before == null || before.equals(after)) {
        continue;
      }
      if (after.progress() < before.progress()) {
        return "job "
            + after.id()
            + " lost progress: "
            + before.progress()
            + " → "
            + after.progress();
      }
      // A stop's exit and the dispatch after it are one call (build_exit_worker_and_dispatch,
      // V009): a job
      // its worker's exit put back in the queue may be on a new worker by the step's end.
      boolean redispatched =
          before.onWorker()
              && after.onWorker()
              && !java.util.Objects.equals(before.workerId(), after.workerId());
      boolean leftWorker = before.onWorker() && (!after.onWorker() || redispatched);
      W worker = before.workerId() == null ? null : next.workers().get(before.workerId());
      W workerBefore = before.workerId() == null ? null : prev.workers().get(before.workerId());
      boolean byExit =
          leftWorker
              && worker != null
              && worker.exited()
              && workerBefore != null
              && !workerBefore.exited();
      SimProgram retried =
          leftWorker && worker != null && !worker.exited() ? retriedBy(before, step.now()) : null;
      if (byExit && worker.exitReason() != null && worker.exitReason().startsWith("not started:")) {
        if (after.recoveries() != before.recoveries()
            || after.launchFailures() != before.launchFailures() + 1) {
          return "§5.7 job "
              + after.id()
              + " after a failed launch: recoveries "
              + before.recoveries()
              + " → "
              + after.recoveries()
              + ", launch failures "
              + before.launchFailures()
              + " → "
              + after.launchFailures();
        }
        if (worker.exitReason().startsWith("not started: " + Simulation.DEPLOY_REFUSAL)) {
          String v = refusedByDeploy(before, after);
          if (v != null) {
            return v;
          }
        }
      } else if (byExit) {
        int expected = before.progress() > before.checkpoint() ? 0 : before.recoveries() + 1;
        String expectedStatus =
            before.cancelRequested()
                ? "cancelled"
                : expected <= INTERRUPTIONS_RETRIED ? "queued" : "failed";
        String statusAfterExit = redispatched ? "queued" : after.status();
        if (after.recoveries() != expected || !statusAfterExit.equals(expectedStatus)) {
          return "§5.6 job "
              + after.id()
              + " interrupted (progress "
              + before.checkpoint()
              + "→"
              + before.progress()
              + ", recoveries "
              + before.recoveries()
              + ") became "
              + after.status()
              + " with recoveries "
              + after.recoveries()
              + "; expected "
              + expectedStatus
              + " with "
              + expected;
        }
        if (expectedStatus.equals("failed")
            && !ExitTransitions.REPEATED_EXIT_ERROR.equals(after.error())) {
          return "§5.6 job "
              + after.id()
              + " failed after repeated exits with error "
              + after.error();
        }
      } else if (retried != null) {
        String v = interruptedByRetryCode(before, after, retried);
        if (v != null) {
          return v;
        }
      } else if (leftWorker && worker != null && !worker.exited() && stopReached(worker)) {
        String v = interruptedByStop(before, after);
        if (v != null) {
          return v;
        }
      } else if (after.recoveries() != before.recoveries()) {
        return "§5.6 job "
            + after.id()
            + " recoveries changed "
            + before.recoveries()
            + " → "
            + after.recoveries()
            + " without its worker exiting ("
            + before.status()
            + " → "
            + after.status()
            + ")";
      }
      if ((before.status().equals("queued") || redispatched) && after.onWorker()) {
        boolean turns = fair && after.lane().equals("shared");
        for (J other : prev.jobs().values()) {
          J otherAfter = next.jobs().get(other.id());
          // In a lane that takes turns, only a retry (a job that ran and came back) goes ahead of
          // another user's job; age orders the retries, and priority, then age, one user's new
          // jobs (a retry aside, never a lower priority while a higher one of the user waits). A
          // lane without turns takes its jobs by priority, then age.
          boolean mustGoFirst =
              !turns
                  || (other.attempts() > 0
                      ? true
                      : before.attempts() == 0 && other.userId().equals(after.userId()));
          boolean retryFirst = turns && other.attempts() > 0;
          boolean older =
              retryFirst
                  ? other.id() < after.id() || before.attempts() == 0
                  : other.priority() > before.priority()
                      || (other.priority() == before.priority() && other.id() < after.id());
          if (mustGoFirst
              && older
              && other.lane().equals(after.lane())
              && other.status().equals("queued")
              && otherAfter != null
              && otherAfter.status().equals("queued")
              && (other.notBefore() == null || !other.notBefore().isAfter(step.now()))) {
            return (other.priority() > before.priority() && !retryFirst
                    ? "§4.7 job "
                        + after.id()
                        + " (priority "
                        + before.priority()
                        + ") was taken from lane "
                        + after.lane()
                        + " while job "
                        + other.id()
                        + " of the same user (priority "
                        + other.priority()
                        + ") waited"
                    : "§5.6 job "
                        + after.id()
                        + " was taken from lane "
                        + after.lane()
                        + " ahead of older queued job "
                        + other.id())
                + " (recoveries "
                + other.recoveries()
                + ")";
          }
        }
      }
    }
    return null;
  }

  /**
   * §4.4 deploys: a launch a deploy window refused is a launch failure with backoff under the
   * limit, never final at first sight: the job goes back to the queue (or ends cancelled, if its
   * owner asked) until its launch failures reach the limit. And no job fails for the deploy alone:
   * the window is shorter than the backoff's budget, so a job whose every launch failure was the
   * deploy's has not met the limit.
   */
  private String refusedByDeploy(J before, J after) {
    int refusals = deployRefusals.merge(after.id(), 1, Integer::sum);
    String expected =
        before.cancelRequested()
            ? "cancelled"
            : after.launchFailures() < maxLaunchFailures ? "queued" : "failed";
    if (!after.status().equals(expected)) {
      return "§4.4 job "
          + after.id()
          + " refused a launch by a deploy window (launch failures "
          + after.launchFailures()
          + " of "
          + maxLaunchFailures
          + ") became "
          + after.status()
          + "; expected "
          + expected
          + ": a deploy's refusal is retried with backoff, never final at first sight";
    }
    if (after.status().equals("queued") && after.notBefore() == null) {
      return "§4.4 job "
          + after.id()
          + " refused a launch by a deploy window went back to the queue with no backoff";
    }
    if (after.status().equals("failed") && refusals >= after.launchFailures()) {
      return "§4.4 job "
          + after.id()
          + " failed for a deploy window alone: all its "
          + after.launchFailures()
          + " launch failures were the deploy's refusals ("
          + after.error()
          + ")";
    }
    return null;
  }

  /** The program of the job's attempt if it ended with its kind's retry code, or null. */
  private SimProgram retriedBy(J before, Instant now) {
    if (programs == null) {
      return null;
    }
    SimProgram p = programs.of(before.id(), before.attempts());
    return p != null
            && before.workerId() != null
            && p.workerId == before.workerId()
            && p.retryExit(now)
        ? p
        : null;
  }

  /**
   * §5.6 for {@code WorkerTransitions.interrupt}: a program that exits with one of its kind's retry
   * codes is interrupted as if its worker had exited — to the head of its lane, or failed after
   * four interruptions without progress, or cancelled if its owner asked — while its worker stays
   * and takes its next job. So its recoveries change without any worker exiting, by the same rule,
   * counted on the progress the program reached: the interruption records the progress the program
   * reported after its last check-in, in the same statement, and that is what must decide whether
   * it moved forward (not the last progress a check-in happened to write).
   */
  private synchronized boolean stopReached(W worker) {
    return worker.taskId() != null && stopsReached.containsKey(worker.taskId());
  }

  /**
   * A worker a stop reached (SIGTERM: a cancel's, or one that came after the job it was for) left
   * its job by its own interruption, with the progress its program reached: the rule of an exit
   * (progress past the checkpoint resets the count, none adds one, the fourth in a row fails the
   * job), and a job whose cancel was asked for ends cancelled. Or it ended the job (the program
   * finished first, or a cancel ended it cancelled), which {@link #programOutcomes} judges.
   */
  private static String interruptedByStop(J before, J after) {
    if (!after.status().equals("queued") && after.recoveries() == before.recoveries()) {
      return null; // an end, not an interruption
    }
    int expected = after.progress() > before.checkpoint() ? 0 : before.recoveries() + 1;
    String expectedStatus =
        before.cancelRequested()
            ? "cancelled"
            : expected <= INTERRUPTIONS_RETRIED ? "queued" : "failed";
    if (after.recoveries() != expected || !after.status().equals(expectedStatus)) {
      return "§5.6 job "
          + after.id()
          + " interrupted by its worker's stop (progress "
          + before.checkpoint()
          + "→"
          + after.progress()
          + ", recoveries "
          + before.recoveries()
          + ") became "
          + after.status()
          + " with recoveries "
          + after.recoveries()
          + "; expected "
          + expectedStatus
          + " with "
          + expected;
    }
    if (expectedStatus.equals("failed")
        && !ExitTransitions.REPEATED_EXIT_ERROR.equals(after.error())) {
      return "§5.6 job "
          + after.id()
          + " failed after repeated interruptions with error "
          + after.error();
    }
    return null;
  }

  private static String interruptedByRetryCode(J before, J after, SimProgram p) {
    if (before.cancelRequested() && after.status().equals("cancelled")) {
      // The worker saw the cancel first, or the interruption found it: cancelled either way.
      return null;
    }
    int reached = p.lastProgress() != null ? p.lastProgress() : before.progress();
    int expected = reached > before.checkpoint() ? 0 : before.recoveries() + 1;
    String expectedStatus =
        before.cancelRequested()
            ? "cancelled"
            : expected <= INTERRUPTIONS_RETRIED ? "queued" : "failed";
    if (after.progress() != reached
        || after.recoveries() != expected
        || !after.status().equals(expectedStatus)) {
      return "§5.6 job "
          + after.id()
          + " interrupted by its program's retry exit code (progress "
          + before.checkpoint()
          + "→"
          + reached
          + " reported, recoveries "
          + before.recoveries()
          + ") became "
          + after.status()
          + " with progress "
          + after.progress()
          + " and recoveries "
          + after.recoveries()
          + "; expected "
          + expectedStatus
          + " with progress "
          + reached
          + " and recoveries "
          + expected
          + " ("
          + p
          + ")";
    }
    if (expectedStatus.equals("failed")
        && !ExitTransitions.REPEATED_EXIT_ERROR.equals(after.error())) {
      return "§5.6 job "
          + after.id()
          + " failed after repeated retry exits with error "
          + after.error();
    }
    return null;
  }

  /**
   * docs/architecture.md §10.1, the job process, against the records of the simulated programs
   * (nothing if the scenario ran none). Checked after every step, those that wrote nothing too: a
   * poll of a program is where the runner must act, and it writes nothing. Null when all hold.
   */
  String programs(Snapshot prev, Snapshot next, Instant now, Map<String, Long> liveTasks) {
    if (programs == null || !programs.any()) {
      return null;
    }
    for (J j : next.jobs().values()) {
      if (j.cancelRequested()) {
        cancelSeen.putIfAbsent(j.id(), now);
      }
    }
    List<SimProgram> all = programs.all();
    String v;
    if ((v = noProcessOutlivesItsJob(all, next, now, liveTasks)) != null
        || (v = theRunnerActsInTime(all)) != null
        || (v = programOutcomes(prev, next, now)) != null) {
      return v;
    }
    return null;
  }

  /**
   * §10 "no process of a job outlives it", and §5.2 for programs. A program still running while its
   * job is final, back in the queue or on another attempt would go on working on a job the queue
   * has given up or given to another worker (the same job twice, or a build writing after its
   * verdict); so would one whose worker the queue counts exited (its slot may hold the next
   * worker). And a dead worker's programs die with it: the local platform kills their sessions
   * before it reports the worker gone (LeftoverJobs), a Fargate task's end kills every process in
   * it, the worker's own halt kills them first (RunningJobs).
   */
  private static String noProcessOutlivesItsJob(
      List<SimProgram> all, Snapshot next, Instant now, Map<String, Long> liveTasks) {
    Map<Long, SimProgram> byJob = new HashMap<>();
    for (SimProgram p : all) {
      if (p.live(now) == 0) {
        continue;
      }
      String what = "§10 " + p + " still runs (" + p.live(now) + " process(es) of it alive)";
      if (!liveTasks.containsKey(p.taskId)) {
        return what + " though its worker's task has ended: a job's processes die with its worker";
      }
      W w = next.workers().get(p.workerId);
      if (w == null || w.exited()) {
        return what
            + " though the queue counts its worker exited ("
            + (w == null ? "no row" : w.exitReason())
            + "): its slot and its job may go to another worker while it runs";
      }
      J j = next.jobs().get(p.jobId);
      if (j == null
          || !j.onWorker()
          || !Objects.equals(j.workerId(), p.workerId)
          || j.attempts() != p.attempt) {
        return what
            + " though its job is now "
            + j
            + ": no process of a job may outlive its attempt";
      }
      SimProgram other = byJob.put(p.jobId, p);
      if (other != null) {
        return "§5.2 job " + p.jobId + " runs two programs at once: " + other + " and " + p;
      }
    }
    return null;
  }

  /**
   * §10 timeout, cancel and grace, on the runner's own time. A worker can be starved (the
   * simulation moves time while it waits at a gate, as a paused JVM would); what the runner owes is
   * to act on its first chance after each deadline: having come back from a poll at or after it, it
   * must have done so by its next call on the program.
   *
   * <ul>
   *   <li>a program running past its kind's timeout gets SIGTERM (it is then failed "timed out
   *       after …": {@link #programOutcomes});
   *   <li>a running program whose worker a stop reached (a cancel is pushed: the queue stops the
   *       worker, whose platform sends it SIGTERM) gets SIGTERM at the runner's first chance after
   *       the stop: a cancel that never reaches the program is caught here, on the simulation's
   *       clock;
   *   <li>a running program whose owner cancelled its job gets SIGTERM once the heartbeat interval
   *       has passed since the cancel ({@link JobContext#HEARTBEAT_INTERVAL}: the fallback when the
   *       stop was lost);
   *   <li>SIGKILL follows SIGTERM once the kind's grace period is over, so a program that ignores
   *       SIGTERM is dead within timeout + grace (+ one poll);
   *   <li>what a program left running is sent SIGTERM before it is waited for, and is not waited
   *       for past the grace.
   * </ul>
   */
  private String theRunnerActsInTime(List<SimProgram> all) {
    for (SimProgram p : all) {
      int from = lapsChecked.getOrDefault(p.pid, 0);
      int to = p.lapCount();
      for (int i = from; i < to; i++) {
        String v = lap(p, p.lap(i));
        if (v != null) {
          return v;
        }
      }
      lapsChecked.put(p.pid, to);
    }
    return null;
  }

  private String lap(SimProgram p, SimProgram.Lap lap) {
    String back =
        "; the runner came back from a poll at +"
            + SimPrograms.at(lap.since())
            + " and called on it again at +"
            + SimPrograms.at(lap.at())
            + " — "
            + p;
    if (lap.kind() == SimProgram.LapKind.LEFTOVERS) {
      if (lap.termAt() == null) {
        return "§10 the runner waits for what job "
            + p.jobId
            + "'s program left running without sending it SIGTERM"
            + back;
      }
      if (!lap.since().isBefore(lap.termAt().plus(p.grace))) {
        return "§10 grace: what job "
            + p.jobId
            + "'s program left running got SIGTERM at +"
            + SimPrograms.at(lap.termAt())
            + "; the grace of "
            + p.grace.toMillis()
            + " ms is over and the runner waits on instead of sending SIGKILL"
            + back;
      }
      return null;
    }
    Instant timeoutAt = p.startedAt.plus(p.timeout);
    if (lap.termAt() == null && !lap.since().isBefore(timeoutAt)) {
      return "§10 timeout: job "
          + p.jobId
          + "'s program ran past its timeout of "
          + p.timeout.toMillis()
          + " ms without SIGTERM"
          + back;
    }
    Instant stopAt;
    synchronized (this) {
      stopAt = stopsReached.get(p.taskId);
    }
    if (lap.termAt() == null && stopAt != null && !lap.since().isBefore(stopAt)) {
      return "§10 cancel: the stop of job "
          + p.jobId
          + "'s worker (task "
          + p.taskId
          + ") reached it at +"
          + SimPrograms.at(stopAt)
          + " and its program got no SIGTERM"
          + back;
    }
    Instant cancelAt = cancelSeen.get(p.jobId);
    if (lap.termAt() == null
        && cancelAt != null
        && !lap.since().isBefore(cancelAt.plus(JobContext.HEARTBEAT_INTERVAL))) {
      return "§10 cancel: job "
          + p.jobId
          + " was cancelled at +"
          + SimPrograms.at(cancelAt)
          + " and its program got no SIGTERM"
          + " within the heartbeat interval of "
          + JobContext.HEARTBEAT_INTERVAL.toSeconds()
          + " s"
          + back;
    }
    if (lap.termAt() != null
        && !lap.killed()
        && !lap.since().isBefore(lap.termAt().plus(p.grace))) {
      return "§10 grace: job "
          + p.jobId
          + "'s program got SIGTERM at +"
          + SimPrograms.at(lap.termAt())
          + " and no SIGKILL"
          + " when the grace of "
          + p.grace.toMillis()
          + " ms was over"
          + back;
    }
    return null;
  }

  /**
   * §10 outcomes: when a program job's worker ends it, the verdict is the program's. A program sent
   * SIGTERM while it ran was stopped by a timeout (failed "timed out after …", and only if it
   * really ran past its timeout) or by its owner's cancel (cancelled, and only if the owner asked);
   * otherwise exit 0 succeeds, another code fails with the program's error line or the code, and a
   * signal fails naming it. A job whose owner asked to cancel it may end cancelled whatever its
   * program did. (A retry code is an interruption: §5.6, {@link #transitions}.)
   */
  private String programOutcomes(Snapshot prev, Snapshot next, Instant now) {
    for (J after : next.jobs().values()) {
      J before = prev.jobs().get(after.id());
      if (before == null
          || !before.status().equals("running")
          || before.workerId() == null
          || (after.onWorker()
              && Objects.equals(after.workerId(), before.workerId())
              && after.attempts() == before.attempts())) {
        continue;
      }
      W w = next.workers().get(before.workerId());
      SimProgram p = programs.of(before.id(), before.attempts());
      if (w == null
          || w.exited()
          || p == null
          || p.workerId != before.workerId()
          || p.retryExit(now)) {
        // Ended by its worker's exit (§5.6), not a program job, or interrupted by a retry code.
        continue;
      }
      ProgramExit exit = p.exitAt(now);
      if (exit == null) {
        continue; // still running: noProcessOutlivesItsJob reports it
      }
      if (before.cancelRequested() && after.status().equals("cancelled")) {
        // The owner asked before the job ended, so the cancel may win a race with the program's
        // own end: the program exits while its worker's check-in is reading the cancel.
        continue;
      }
      String expected;
      boolean ok;
      boolean stopped;
      synchronized (this) {
        stopped = stopsReached.containsKey(p.taskId);
      }
      if (stopped
          && (after.status().equals("queued")
              || ExitTransitions.REPEATED_EXIT_ERROR.equals(after.error()))) {
        // Its worker was stopped: an interruption (§5.6, judged in transitions) whatever the
        // program did in its grace, unless it exited 0 (then its job succeeded, below).
        continue;
      }
      if (p.termMainAlive()) {
        expected =
            (before.cancelRequested() ? "cancelled" : "")
                + (p.timedOut()
                    ? (before.cancelRequested() ? " or " : "") + "failed \"timed out after …\""
                    : "");
        ok =
            (after.status().equals("cancelled") && before.cancelRequested())
                || (after.status().equals("failed")
                    && p.timedOut()
                    && after.error() != null
                    && after.error().startsWith("timed out after "));
      } else if (exit instanceof ProgramExit.Exited e && e.code() == 0) {
        expected = "succeeded";
        ok = after.status().equals("succeeded");
      } else {
        String error =
            exit instanceof ProgramExit.Exited
                ? (p.error() != null ? p.error() : exit.describe())
                : (p.error() != null ? exit.describe() + ": " + p.error() : exit.describe());
        expected = "failed \"" + error + "\"";
        ok = after.status().equals("failed") && error.equals(after.error());
      }
      if (!ok) {
        return "§10 job "
            + after.id()
            + " ended "
            + after.status()
            + (after.error() == null ? "" : " \"" + after.error() + "\"")
            + "; its program says it should have ended "
            + (expected.isEmpty()
                ? "otherwise (SIGTERM without a timeout" + " or a cancel)"
                : expected)
            + " — "
            + p;
      }
    }
    return null;
  }

  /**
   * docs/architecture.md §4.7, the fair shared lane: from the moment a user has a job queued in it
   * until that user is dispatched there, no other user is dispatched there more than once. A retry
   * (a job that ran and came back: {@code attempts > 0}) is not a turn, for its user or for the
   * users it passes.
   */
  String turns(Snapshot prev, Snapshot next) {
    if (!fair) {
      return null;
    }
    Set<String> waitingBefore = waitingInShared(prev);
    for (J after : next.jobs().values()) {
      J before = prev.jobs().get(after.id());
      // A job created and taken in one step serves its user too: a follow-up the ending worker
      // chains in the same transaction (it may go first among its user's jobs by priority).
      boolean queuedBefore = before == null || before.status().equals("queued");
      String laneBefore = before == null ? after.lane() : before.lane();
      int attemptsBefore = before == null ? 0 : before.attempts();
      if (!queuedBefore
          || !after.onWorker()
          || !laneBefore.equals("shared")
          || attemptsBefore > 0) {
        continue;
      }
      String served = after.userId();
      servedWhileWaiting.remove(served); // its next job waits from now on
      for (String user : waitingBefore) {
        if (user.equals(served)) {
          continue;
        }
        int times =
            servedWhileWaiting
                .computeIfAbsent(user, u -> new HashMap<>())
                .merge(served, 1, Integer::sum);
        if (times > 1) {
          return "§12 user "
              + served
              + " was dispatched "
              + times
              + " times in the shared lane (now job "
              + after.id()
              + ") while user "
              + user
              + " had a job queued there and was not served";
        }
      }
    }
    servedWhileWaiting.keySet().retainAll(waitingInShared(next));
    return null;
  }

  private static Set<String> waitingInShared(Snapshot s) {
    Set<String> users = new java.util.HashSet<>();
    for (J j : s.jobs().values()) {
      if (j.status().equals("queued") && j.lane().equals("shared") && j.attempts() == 0) {
        users.add(j.userId());
      }
    }
    return users;
  }

  /**
   * When everything has finished (§5.4, §5.5, §5.8 and the follow-up rule): every acknowledged job
   * still exists; a job's follow-ups exist exactly when it succeeded; no worker wrote at or after
   * its deadline; every attempt is in the job's history. Null when all hold.
   */
  String atEnd(Snapshot s, Database db, Map<String, Set<Long>> acknowledged) {
    for (Map.Entry<String, Set<Long>> e : acknowledged.entrySet()) {
      for (long id : e.getValue()) {
        if (!s.jobs().containsKey(id)) {
          return "§5.5 job " + id + " acknowledged to " + e.getKey() + " is gone";
        }
      }
    }
    Map<Long, Long> followUps = new HashMap<>();
    for (Row r :
        db.query(
            """
        select (detail ->> 'followUpOf')::bigint as parent, count(*) as n from build_job_event
        where type = 'enqueued' and detail ->> 'followUpOf' is not null group by 1""")) {
      followUps.put(r.longValue("parent"), r.longValue("n"));
    }
    for (J j : s.jobs().values()) {
      boolean wants = j.payload() != null && j.payload().contains("\"followUp\": true");
      long expected = wants && j.status().equals("succeeded") ? 1 : 0;
      long actual = followUps.getOrDefault(j.id(), 0L);
      if (actual != expected) {
        return "follow-ups of job "
            + j.id()
            + " ("
            + j.status()
            + "): "
            + actual
            + ", expected "
            + expected
            + " — they must commit with the job's success and only then";
      }
    }
    List<Row> late =
        db.query(
            """
        select e.job_id, e.type, e.at, w.id as worker_id, w.expires_at from build_job_event e
        join build_worker w on w.id = (e.detail ->> 'workerId')::bigint
        where (e.type = 'started' and e.at >= w.expires_at - :marginMs * interval '1 millisecond')
           or (e.type = 'dispatched' and (e.detail ->> 'chained')::boolean
               and e.at >= w.expires_at - :marginMs * interval '1 millisecond')
           or (e.type in ('succeeded', 'failed', 'cancelled') and e.at >= w.expires_at)""",
            Params.of("marginMs", margin.toMillis()));
    if (!late.isEmpty()) {
      return "§5.4 a worker wrote after its deadline: " + late;
    }
    List<Row> attempts =
        db.query(
            """
        select j.id, j.attempts,
               (select count(*) from build_job_event e where e.job_id = j.id and e.type = 'dispatched') as n
        from build_job j
        where j.attempts <> (select count(*) from build_job_event e where e.job_id = j.id and e.type = 'dispatched')""");
    if (!attempts.isEmpty()) {
      return "a job's attempts disagree with its history: " + attempts;
    }
    return ledger(db);
  }

  /**
   * docs/architecture.md §4.8: every exited worker was billed (once), and its jobs' shares add up
   * to what it was billed exactly; a live worker has no bill yet.
   */
  static String ledger(Database db) {
    List<Row> wrong =
        db.query(
            """
        select w.id, w.status, w.billed_ms,
               (select sum(c.billed_ms) from build_job_cost c where c.worker_id = w.id) as shared,
               (select count(*) from build_job_cost c where c.worker_id = w.id) as shares
        from build_worker w
        where (w.status = 'exited') <> (w.billed_ms is not null)
           or (w.billed_ms is not null and exists (select 1 from build_job_cost c where c.worker_id = w.id)
               and w.billed_ms <> (select sum(c.billed_ms) from build_job_cost c where c.worker_id = w.id))
        order by w.id limit 5""");
    if (!wrong.isEmpty()) {
      return "§4.8 the ledger: a worker's bill is not the sum of its jobs' shares: " + wrong;
    }
    return null;
  }

  static String diff(Snapshot prev, Snapshot next) {
    StringBuilder b = new StringBuilder();
    for (W w : next.workers().values()) {
      W was = prev.workers().get(w.id());
      if (!w.equals(was)) {
        b.append("\n      worker ").append(was).append("\n          → ").append(w);
      }
    }
    for (J j : next.jobs().values()) {
      J was = prev.jobs().get(j.id());
      if (!j.equals(was)) {
        b.append("\n      job ").append(was).append("\n          → ").append(j);
      }
    }
    if (!prev.artifacts().equals(next.artifacts())) {
      b.append("\n      published artifacts ")
          .append(prev.artifacts())
          .append("\n          → ")
          .append(next.artifacts());
    }
    if (prev.lastEvent() != next.lastEvent()) {
      b.append("\n      events ").append(prev.lastEvent()).append(" → ").append(next.lastEvent());
    }
    return b.toString();
  }
}
