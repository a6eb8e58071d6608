package buildqueue.faults;

import buildqueue.core.ExitTransitions;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.faults.Snapshot.J;
import buildqueue.faults.Snapshot.W;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * design.md §5, checked against the database after every step. Each step runs one actor alone, so
 * the difference between the snapshots before and after it is exactly that actor's doing: that
 * is what makes "a fenced worker's writes change nothing" and "recoveries are counted exactly"
 * checkable from rows alone.
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
  static final List<String> FAILURE_REASONS = List.of(
      SimHandler.FAILED_ON_PURPOSE,
      ExitTransitions.REPEATED_EXIT_ERROR,
      "Could not start a build worker: ",
      "Could not start a build worker after ");

  /**
   * design.md §5.6: a job fails only after four consecutive interruptions without progress, i.e.
   * it goes back to the queue while its count of them is at most three. The oracle holds the
   * design's number, not the core's constant ({@code ExitTransitions.MAX_RECOVERIES}): a check that
   * read the number from the code it checks would agree with any off-by-one in it.
   */
  static final int INTERRUPTIONS_RETRIED = 3;

  private final Duration margin;
  private final boolean fair;
  /** For each user waiting in the shared lane: how often each other user was dispatched there since. */
  private final Map<String, Map<String, Integer>> servedWhileWaiting = new HashMap<>();

  Invariants(QueueConfig config) {
    this.margin = config.deadlineMargin();
    this.fair = config.takesTurns("shared");
  }

  /** The first invariant the step broke, or null. */
  String afterStep(Snapshot prev, Snapshot next, Step step) {
    String v;
    if ((v = slots(next)) != null
        || (v = jobsOnLiveWorkers(next)) != null
        || (v = noSlotFreedUnderALiveWorker(next, step)) != null
        || (v = failuresSayWhy(next)) != null
        || (v = finishedJobsStayFinished(prev, next)) != null
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
          return "§5.2 job " + j.id() + " is " + j.status() + " on worker " + j.workerId()
              + " which is " + (w == null ? "gone" : "exited (" + w.exitReason() + ")") + ": it would never finish";
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
   *       evidence of its end may free the slot, never the lease alone (§4 lease reclaim), even
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
      boolean canNoLongerStart = w.startedAt() == null && !step.now().isBefore(w.expiresAt().minus(margin));
      if (checkable || !canNoLongerStart) {
        return "§5.3 slot " + w.slot() + " freed (worker " + w.id() + " exited: " + w.exitReason() + ") while its task "
            + live.getKey() + (step.frozenTasks().contains(live.getKey()) ? " (frozen)" : "") + " may still run"
            + (w.startedAt() == null ? " (not yet started, lease until " + w.expiresAt() + ")" : " (started)")
            + (checkable ? "; the queue could check it, so only its stop evidence may free the slot" : "");
      }
    }
    return null;
  }

  /** §5.5: a failed job says why, in words a user can act on. */
  static String failuresSayWhy(Snapshot s) {
    for (J j : s.jobs().values()) {
      if (j.status().equals("failed")) {
        if (j.error() == null || FAILURE_REASONS.stream().noneMatch(j.error()::startsWith)) {
          return "§5.5 job " + j.id() + " failed with an error that is not a verdict on the job: " + j.error();
        }
      }
    }
    return null;
  }

  static String finishedJobsStayFinished(Snapshot prev, Snapshot next) {
    for (J before : prev.jobs().values()) {
      if (before.finished()) {
        J after = next.jobs().get(before.id());
        if (after == null || !after.status().equals(before.status()) || after.progress() != before.progress()
            || !Objects.equals(after.error(), before.error())) {
          return "job " + before.id() + " was " + before.status() + " and changed to " + after;
        }
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
        return "§5.2 fenced-off worker " + id + " (" + (before == null ? "no row" : before.status() + ", lease until "
            + before.expiresAt()) + ") changed the database: " + diff(prev, next);
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
      boolean mine = b == null || Objects.equals(b.workerId(), id) || Objects.equals(j.workerId(), id);
      if (!j.equals(b) && !mine) {
        return "§5.2 worker " + id + " changed job " + j.id() + " which is not its own: " + b + " → " + j;
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
        return "job " + after.id() + " lost progress: " + before.progress() + " → " + after.progress();
      }
      boolean leftWorker = before.onWorker() && !after.onWorker();
      W worker = before.workerId() == null ? null : next.workers().get(before.workerId());
      W workerBefore = before.workerId() == null ? null : prev.workers().get(before.workerId());
      boolean byExit = leftWorker && worker != null && worker.exited() && workerBefore != null && !workerBefore.exited();
      if (byExit && worker.exitReason() != null && worker.exitReason().startsWith("not started:")) {
        if (after.recoveries() != before.recoveries() || after.launchFailures() != before.launchFailures() + 1) {
          return "§5.7 job " + after.id() + " after a failed launch: recoveries " + before.recoveries() + " → "
              + after.recoveries() + ", launch failures " + before.launchFailures() + " → " + after.launchFailures();
        }
      } else if (byExit) {
        int expected = before.progress() > before.checkpoint() ? 0 : before.recoveries() + 1;
        String expectedStatus = before.cancelRequested() ? "cancelled"
            : expected <= INTERRUPTIONS_RETRIED ? "queued" : "failed";
        if (after.recoveries() != expected || !after.status().equals(expectedStatus)) {
          return "§5.6 job " + after.id() + " interrupted (progress " + before.checkpoint() + "→" + before.progress()
              + ", recoveries " + before.recoveries() + ") became " + after.status() + " with recoveries "
              + after.recoveries() + "; expected " + expectedStatus + " with " + expected;
        }
        if (expectedStatus.equals("failed") && !ExitTransitions.REPEATED_EXIT_ERROR.equals(after.error())) {
          return "§5.6 job " + after.id() + " failed after repeated exits with error " + after.error();
        }
      } else if (after.recoveries() != before.recoveries()) {
        return "§5.6 job " + after.id() + " recoveries changed " + before.recoveries() + " → " + after.recoveries()
            + " without its worker exiting (" + before.status() + " → " + after.status() + ")";
      }
      if (before.status().equals("queued") && after.onWorker()) {
        boolean turns = fair && after.lane().equals("shared");
        for (J other : prev.jobs().values()) {
          J otherAfter = next.jobs().get(other.id());
          // In a lane that takes turns, only a retry (a job that ran and came back) goes ahead of
          // another user's older job; FIFO holds among retries and within one user's new jobs.
          boolean mustGoFirst = !turns || (other.attempts() > 0 ? true
              : before.attempts() == 0 && other.userId().equals(after.userId()));
          boolean older = other.id() < after.id() || (turns && other.attempts() > 0 && before.attempts() == 0);
          if (mustGoFirst && older && other.lane().equals(after.lane())
              && other.status().equals("queued")
              && otherAfter != null && otherAfter.status().equals("queued")
              && (other.notBefore() == null || !other.notBefore().isAfter(step.now()))) {
            return "§5.6 job " + after.id() + " was taken from lane " + after.lane() + " ahead of older queued job "
                + other.id() + " (recoveries " + other.recoveries() + ")";
          }
        }
      }
    }
    return null;
  }

  /**
   * design.md §12, the fair shared lane: from the moment a user has a job queued in it until that
   * user is dispatched there, no other user is dispatched there more than once. A retry (a job that
   * ran and came back: {@code attempts > 0}) is not a turn, for its user or for the users it passes.
   */
  String turns(Snapshot prev, Snapshot next) {
    if (!fair) {
      return null;
    }
    Set<String> waitingBefore = waitingInShared(prev);
    for (J after : next.jobs().values()) {
      J before = prev.jobs().get(after.id());
      if (before == null || !before.status().equals("queued") || !after.onWorker() || !before.lane().equals("shared")
          || before.attempts() > 0) {
        continue;
      }
      String served = after.userId();
      servedWhileWaiting.remove(served); // its next job waits from now on
      for (String user : waitingBefore) {
        if (user.equals(served)) {
          continue;
        }
        int times = servedWhileWaiting.computeIfAbsent(user, u -> new HashMap<>()).merge(served, 1, Integer::sum);
        if (times > 1) {
          return "§12 user " + served + " was dispatched " + times + " times in the shared lane (now job " + after.id()
              + ") while user " + user + " had a job queued there and was not served";
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
    for (Row r : db.query(
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
        return "follow-ups of job " + j.id() + " (" + j.status() + "): " + actual + ", expected " + expected
            + " — they must commit with the job's success and only then";
      }
    }
    List<Row> late = db.query(
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
    List<Row> attempts = db.query(
        """
        select j.id, j.attempts,
               (select count(*) from build_job_event e where e.job_id = j.id and e.type = 'dispatched') as n
        from build_job j
        where j.attempts <> (select count(*) from build_job_event e where e.job_id = j.id and e.type = 'dispatched')""");
    if (!attempts.isEmpty()) {
      return "a job's attempts disagree with its history: " + attempts;
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
    if (prev.lastEvent() != next.lastEvent()) {
      b.append("\n      events ").append(prev.lastEvent()).append(" → ").append(next.lastEvent());
    }
    return b.toString();
  }
}
