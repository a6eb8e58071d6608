package buildqueue.faults;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;

/**
 * Stop evidence in flight, as ECS STOPPED events travel through EventBridge: it arrives from worker
 * threads as they end (and again when a stop handler failed and the event is retried), and waits
 * until the simulation delivers it, late, out of order, twice, or never. Evidence that arrives
 * during one step is queued in task order at the end of the step, so its order does not depend on
 * which thread got there first.
 */
final class StopEvents {

  /** One event. {@code notBefore}: it cannot be delivered before then (a delay). */
  record Evidence(
      long seq,
      String taskId,
      Long workerId,
      UUID token,
      String reason,
      Instant notBefore,
      boolean forged) {
    Evidence later(Instant t) {
      return new Evidence(seq, taskId, workerId, token, reason, t, forged);
    }

    String describe() {
      return (forged ? "forged " : "")
          + "stop event for "
          + (taskId == null ? "?" : taskId)
          + (workerId == null ? "" : " (worker " + workerId + ")");
    }
  }

  private final List<Evidence> incoming = new ArrayList<>();
  private final List<Evidence> pending = new ArrayList<>();
  private long seq;

  /** A task ended (called on its thread). */
  synchronized void arrived(String taskId, long workerId, UUID token, String reason) {
    incoming.add(new Evidence(0, taskId, workerId, token, reason, null, false));
  }

  /** A delivery failed: the event comes again (Lambda and EventBridge retry). */
  synchronized void retry(Evidence e) {
    incoming.add(e);
  }

  /** At the end of a step: what arrived during it joins the queue, in task order. */
  void endOfStep(Instant now) {
    List<Evidence> arrived;
    synchronized (this) {
      arrived = new ArrayList<>(incoming);
      incoming.clear();
    }
    arrived.sort(
        Comparator.comparingLong(
            (Evidence e) -> e.forged() ? Long.MAX_VALUE : taskNumber(e.taskId())));
    for (Evidence e : arrived) {
      pending.add(
          e.notBefore() == null
              ? new Evidence(++seq, e.taskId(), e.workerId(), e.token(), e.reason(), now, false)
              : e);
    }
  }

  /** Events that may be delivered now, oldest first. */
  List<Evidence> ready(Instant now) {
    return pending.stream().filter(e -> !e.notBefore().isAfter(now)).toList();
  }

  Evidence first(Instant now) {
    List<Evidence> ready = ready(now);
    return ready.isEmpty() ? null : ready.get(0);
  }

  void remove(Evidence e) {
    pending.remove(e);
  }

  void replace(Evidence e, Evidence with) {
    pending.set(pending.indexOf(e), with);
  }

  boolean isEmpty() {
    return pending.isEmpty();
  }

  int size() {
    return pending.size();
  }

  /** The number in an in-process task id ({@code inproc-7} → 7), for a stable order. */
  static long taskNumber(String taskId) {
    if (taskId == null) {
      return Long.MAX_VALUE;
    }
    int dash = taskId.lastIndexOf('-');
    try {
      return Long.parseLong(taskId.substring(dash + 1));
    } catch (NumberFormatException e) {
      return Long.MAX_VALUE - 1;
    }
  }
}
