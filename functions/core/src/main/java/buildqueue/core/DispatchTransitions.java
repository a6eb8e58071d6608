package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/** Putting a worker into a free slot for the head of a lane, and recording how its launch went. */
public final class DispatchTransitions {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public DispatchTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * A worker row now holds a slot for a job; the caller must launch it next. {@code moreToDo} says
   * whether the lane had another free slot and another queued job, i.e. whether another dispatch
   * could succeed, so the caller skips a useless round trip when it could not.
   */
  public record Dispatched(WorkerLaunch launch, long jobId, Instant expiresAt, boolean moreToDo) {}

  /**
   * The dispatch, with holes for the choice of job ({@link LaneTurns}) and what taking it changes
   * in the turns. Two statements, not one with a flag: PostgreSQL plans every part of a statement,
   * and most dispatches are of dedicated lanes that never take turns.
   */
  private static final String DISPATCH =
      """
      with recursive t as (select coalesce(:now::timestamptz, now()) as now),
      slot as (
        select :lane || '#' || n as name
        from generate_series(1, :capacity::int) n
        where not exists (
          select 1 from build_worker w where w.slot = :lane || '#' || n and w.status <> 'exited')
        order by n
        limit 1
      ),
      choose as (
        select :lane::text as lane, :fair::boolean as fair, not :fair::boolean as fifo,
               exists (select 1 from slot) as room
      ),
      %s
      worker as (
        insert into build_worker (lane, slot, token, status, expires_at, launched_at)
        select :lane, slot.name, :token::uuid, 'launching', t.now + :leaseMs * interval '1 millisecond', t.now
        from slot, ready, t
        returning id, slot, expires_at
      ),
      job as (
        update build_job j set status = 'dispatched', worker_id = worker.id, checkpoint = j.progress,
          attempts = j.attempts + 1, dispatched_at = t.now, not_before = null
        from worker, ready, t
        where j.id = ready.id
        returning j.id, j.attempts, worker.id as worker_id, worker.slot, worker.expires_at
      ),
      %s
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select job.id, 'dispatched',
               jsonb_build_object('message', 'dispatched to worker ' || job.worker_id || ' in slot ' || job.slot
                                    || ' (attempt ' || job.attempts || ')',
                                  'workerId', job.worker_id, 'slot', job.slot, 'attempt', job.attempts),
               t.now
        from job, t
      )
      select job.id as job_id, job.worker_id, job.slot, job.expires_at,
             (select count(*) from generate_series(1, :capacity::int) n
              where not exists (
                select 1 from build_worker w where w.slot = :lane || '#' || n and w.status <> 'exited')) > 1
             and exists (select 1 from build_job q where q.lane = :lane and q.status = 'queued' and q.id <> job.id)
               as more_to_do
      from job
      """;

  // Assembled from pieces: AssembledStatementsTest pins each whole text in src/test/resources.
  private static final String DISPATCH_TAKING_TURNS = DISPATCH.formatted(LaneTurns.CHOOSE, LaneTurns.served("job"));

  private static final String DISPATCH_OLDEST_FIRST = DISPATCH.formatted(LaneTurns.CHOOSE_OLDEST, "");

  /**
   * If the lane has a free slot and a ready queued job: a new {@code launching} worker with a fresh
   * token and lease takes the slot, and the lane's next job becomes its {@code dispatched} job: the
   * oldest queued one, or in a lane that takes turns by user, the oldest of the user whose turn it
   * is ({@link LaneTurns}). Empty when there is nothing to do. Throws {@link buildqueue.db.UniqueViolationException} when a
   * concurrent dispatcher took the same slot first.
   */
  public Optional<Dispatched> dispatch(String lane) {
    UUID token = UUID.randomUUID();
    boolean fair = config.takesTurns(lane);
    Params params =
        Params.of("now", clock.now(), "lane", lane, "capacity", Lanes.capacity(lane, config))
            .and("token", token)
            .and("leaseMs", config.lease().toMillis())
            .and("fair", fair)
            .and("holdLane", true);
    return db.queryOptional(fair ? DISPATCH_TAKING_TURNS : DISPATCH_OLDEST_FIRST, params)
        .map(
            r ->
                new Dispatched(
                    new WorkerLaunch(r.longValue("worker_id"), token, lane, r.string("slot")),
                    r.longValue("job_id"),
                    r.instant("expires_at"),
                    r.bool("more_to_do")));
  }

  private static final String RECORD_STARTED =
      """
      update build_worker set task_id = :taskId
      where id = :workerId and token = :token::uuid and status <> 'exited'
        and (task_id is null or task_id = :taskId)
      """;

  /** Remembers the task a launch started, so liveness checks and stop events can find it. */
  public boolean recordStarted(WorkerLaunch launch, String taskId) {
    return db.update(
            RECORD_STARTED,
            Params.of("workerId", launch.workerId(), "token", launch.token(), "taskId", taskId))
        == 1;
  }

  private static final String CLAIM_UNRESOLVED_LAUNCHES =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      claimed as (
        update build_worker w set checked_at = t.now
        from t
        -- A batch by array, as in TickTransitions.housekeep
        where w.id = any(array(
          select u.id from build_worker u, t
          where u.status <> 'exited' and u.task_id is null and u.expires_at > t.now
            and u.launched_at <= t.now - :graceMs * interval '1 millisecond'
            -- A claim holds for the launch grace, as the dispatch did: no other tick relaunches
            -- while this one may still be launching, or two answers for one token could disagree.
            and (u.checked_at is null or u.checked_at <= t.now - :graceMs * interval '1 millisecond')
          order by u.id
          limit :limit
          for update skip locked))
        returning w.id, w.token, w.lane, w.slot
      )
      -- RETURNING has no order, and relaunching in id order makes a tick reproducible.
      -- Size: at most the limit (the tick's 100) of rows of an id, a token, a lane and a slot (2 KB).
      select * from claimed order by id
      """;

  /**
   * Claims launches whose outcome was never recorded (a timeout, a 5xx, a caller that died between
   * dispatch and launch) so that exactly one tick retries each with the same token; a claim holds for
   * {@link QueueConfig#launchGrace()}, longer than any caller lives, so no two relaunches of one
   * worker are ever in flight together. A worker that
   * has started without its task id being recorded is included: the idempotent relaunch returns
   * its task, which makes it checkable instead of leaving its slot to the lease.
   */
  public List<WorkerLaunch> claimUnresolvedLaunches(int limit) {
    Params params =
        Params.of("now", clock.now(), "graceMs", config.launchGrace().toMillis(), "limit", limit);
    return db.query(CLAIM_UNRESOLVED_LAUNCHES, params).stream()
        .map(DispatchTransitions::launchOf)
        .toList();
  }

  private static WorkerLaunch launchOf(Row r) {
    return new WorkerLaunch(r.longValue("id"), r.uuid("token"), r.string("lane"), r.string("slot"));
  }
}
