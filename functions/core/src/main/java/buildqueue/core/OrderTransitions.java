package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.Optional;

/**
 * The transitions that change the order a lane takes its jobs in, and whether it takes any
 * (docs/architecture.md §4.7): a queued job's priority among its user's ({@code PATCH /jobs/{id}}),
 * an admin's "run next", and pausing or resuming a lane. The choice itself stays in {@code
 * build_lane_next_job} (V015); these only write what it reads.
 */
public final class OrderTransitions {
  private final Database db;
  private final QueueClock clock;

  public OrderTransitions(Database db, QueueClock clock) {
    this.db = db;
    this.clock = clock;
  }

  /** What a change of a job's priority did. */
  public sealed interface Reordered {
    /** The job was queued and has the priority now (also when it had it already). */
    record Done(long jobId) implements Reordered {}

    /** No such job, or not the caller's. */
    record NotFound(long jobId) implements Reordered {}

    /** The job is no longer queued: its order no longer matters, and nothing changed. */
    record NotQueued(long jobId, JobStatus status) implements Reordered {}
  }

  // The priority changes only while the job is queued, guarded in the update's WHERE clause: a job
  // a dispatch takes at the same moment keeps the priority it was taken with, and the answer says
  // what it is now. A job's history records the change.
  private static final String SET_PRIORITY_IF_QUEUED =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      target as (
        select j.id, j.status from build_job j
        where j.id = :id and (:userId::text is null or j.user_id = :userId)
      ),
      changed as (
        update build_job j set priority = :priority::smallint
        from target
        where j.id = target.id and j.status = 'queued'
        returning j.id, j.priority
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select c.id, :eventType,
               jsonb_build_object('message', :message::text, 'priority', :priorityName::text), t.now
        from changed c, t
        returning id
      )
      select target.status, (select count(*) from changed) as changed, (select count(*) from event) as written
      from target
      """;

  /**
   * Gives job {@code jobId} {@code priority} if it is queued (and, with {@code userId}, that
   * user's; null: an admin, any job's).
   */
  public Reordered setPriorityIfQueued(long jobId, String userId, Priority priority) {
    String message =
        priority == Priority.NEXT
            ? "moved to the head of its lane by an admin (run next)"
            : "priority set to " + priority.apiName();
    Optional<Row> row =
        db.queryOptional(
            SET_PRIORITY_IF_QUEUED,
            Params.of("now", clock.now(), "id", jobId, "userId", userId)
                .and("priority", priority.value())
                .and("priorityName", priority.apiName())
                .and("eventType", priority == Priority.NEXT ? "run-next" : "reprioritized")
                .and("message", message));
    if (row.isEmpty()) {
      return new Reordered.NotFound(jobId);
    }
    if (row.get().longValue("changed") == 0) {
      return new Reordered.NotQueued(jobId, JobStatus.of(row.get().string("status")));
    }
    return new Reordered.Done(jobId);
  }

  private static final String PAUSE =
      """
      insert into build_lane_pause (lane, paused_at, paused_by)
      values (:lane, coalesce(:now::timestamptz, now()), :by)
      on conflict (lane) do nothing
      """;

  private static final String RESUME = "delete from build_lane_pause where lane = :lane";

  /**
   * Pauses {@code lane}: from the commit on, no dispatch or chaining takes a job there; its running
   * jobs finish. Pausing a paused lane changes nothing (it keeps its first pause's time and admin).
   */
  public void pause(String lane, String by) {
    db.update(PAUSE, Params.of("lane", lane, "now", clock.now(), "by", by));
  }

  /** Resumes {@code lane}; true when it was paused. The caller dispatches it. */
  public boolean resume(String lane) {
    return db.update(RESUME, Params.of("lane", lane)) > 0;
  }
}
