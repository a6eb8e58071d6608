package buildqueue.api;

import buildqueue.core.JobQueries.SlotView;
import buildqueue.core.JobQueries.Turns;
import buildqueue.core.JobQueries.Waiting;
import buildqueue.core.JobQueries.WorkerView;
import java.util.List;
import java.util.stream.Collectors;

/** "Why is my job waiting", in a sentence or three a person can read. */
final class WaitingSummary {
  private WaitingSummary() {}

  static String of(Waiting w) {
    StringBuilder s = new StringBuilder();
    if (w.turns().isPresent()) {
      s.append(turns(w, w.turns().get()));
    } else if (w.jobsAhead() == 0) {
      s.append("It is next in lane ").append(w.lane()).append('.');
    } else {
      s.append(w.jobsAhead())
          .append(w.jobsAhead() == 1 ? " job is" : " jobs are")
          .append(" ahead of it in lane ")
          .append(w.lane())
          .append('.');
    }
    if (w.pause().isPresent()) {
      // Not who paused it: that is an admin's user id, which the lanes page shows to admins only.
      s.append(" The lane is paused since ")
          .append(ApiJson.time(w.pause().get().pausedAt()))
          .append(": it starts nothing until an admin resumes it; running jobs finish.");
      return s.toString();
    }
    if (w.notBefore() != null) {
      s.append(" A worker for it could not start for lack of capacity; it is retried from ")
          .append(ApiJson.time(w.notBefore()))
          .append('.');
    }
    List<SlotView> held = w.slots().stream().filter(slot -> !slot.free()).toList();
    if (w.allSlotsHeld()) {
      s.append(' ')
          .append(
              w.slots().size() == 1
                  ? "The lane's only slot is held: "
                  : "All " + w.slots().size() + " slots of the lane are held: ");
      s.append(held.stream().map(WaitingSummary::describe).collect(Collectors.joining("; ")));
      s.append(
          ". It starts when a worker finishes a job and takes it next (within the worker's chain window), "
              + "or when a worker's exit frees its slot.");
    } else {
      List<String> free = w.slots().stream().filter(SlotView::free).map(SlotView::slot).toList();
      s.append(' ')
          .append(
              free.size() == 1
                  ? "Slot " + free.get(0) + " is free"
                  : "Slots " + String.join(", ", free) + " are free");
      if (w.jobsAhead() > 0) {
        s.append("; the jobs ahead of it go first.");
      } else if (w.notBefore() != null) {
        s.append("; it is dispatched by the first tick after its retry time.");
      } else {
        s.append(", so it is dispatched shortly (at the latest by the next tick).");
      }
    }
    return s.toString();
  }

  /**
   * Its place in a lane that takes turns by user: who goes first, and why. When no other user
   * waits, the turns change nothing and it reads as in a FIFO lane.
   */
  private static String turns(Waiting w, Turns t) {
    if (w.jobsAhead() == 0) {
      return "It is next in lane " + w.lane() + ".";
    }
    if (t.retry()) {
      return "It ran before and came back to the queue, so it goes before the turns of lane "
          + w.lane()
          + ", after "
          + count(w.jobsAhead(), "older retry", "older retries")
          + ".";
    }
    if (t.usersAhead() == 0 && t.otherUsersWaiting() == 0) {
      return count(w.jobsAhead(), "job is", "jobs are") + " ahead of it in lane " + w.lane() + ".";
    }
    List<String> why = new java.util.ArrayList<>();
    if (t.usersAhead() > 0) {
      why.add(count(t.usersAhead(), "other user goes", "other users go") + " first");
    }
    if (t.ownJobsAhead() > 0) {
      why.add(count(t.ownJobsAhead(), "older job", "older jobs") + " of yours, one a turn");
    }
    return count(w.jobsAhead(), "job goes", "jobs go")
        + " before it in lane "
        + w.lane()
        + ", which takes turns by user: "
        + String.join("; then ", why)
        + ".";
  }

  private static String count(int n, String one, String many) {
    return n + " " + (n == 1 ? one : many);
  }

  private static String describe(SlotView slot) {
    WorkerView w = slot.worker().orElseThrow();
    StringBuilder s =
        new StringBuilder(slot.slot()).append(" by worker ").append(w.id()).append(" (");
    switch (w.status()) {
      case LAUNCHING -> s.append("starting");
      case RUNNING -> s.append("running");
      case DRAINING ->
          s.append("draining: done with its jobs, the slot frees once its exit is confirmed");
      default -> s.append(w.status().name().toLowerCase(java.util.Locale.ROOT));
    }
    if (w.taskId() != null) {
      s.append(", task ").append(w.taskId());
    }
    w.job()
        .ifPresent(
            j -> {
              s.append(", job ")
                  .append(j.id())
                  .append(j.userId() == null ? " of another user" : " of user " + j.userId());
              Integer steps = ApiJson.steps(j.payloadSteps());
              if (j.progress() > 0 || steps != null) {
                s.append(" at ").append(j.progress()).append(steps == null ? "" : "/" + steps);
              }
            });
    if (w.leaseLeftSeconds() >= 0) {
      s.append(", lease ").append(w.leaseLeftSeconds()).append(" s left");
    } else {
      s.append(", lease expired ").append(-w.leaseLeftSeconds()).append(" s ago");
    }
    return s.append(')').toString();
  }
}
