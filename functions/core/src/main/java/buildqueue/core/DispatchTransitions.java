package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.Capacity;
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
   * The dispatch is a function of the schema ({@code build_lane_dispatch}, V008): it finds a free
   * slot, chooses the lane's next job ({@link LaneTurns}), and only then, in a later statement,
   * inserts the worker and takes the job, which a statement calling the choice inside itself could
   * not see (see {@link LaneTurns}). One statement for the caller all the same.
   */
  private static final String DISPATCH =
      """
      select * from build_lane_dispatch(:lane::text, :capacity::integer, :fair::boolean, :token::uuid,
                                        :leaseMs::bigint, :now::timestamptz)
      """;

  /**
   * If the lane has a free slot and a ready queued job: a new {@code launching} worker with a fresh
   * token and lease takes the slot, and the lane's next job becomes its {@code dispatched} job: the
   * oldest queued one, or in a lane that takes turns by user, the oldest of the user whose turn it
   * is ({@link LaneTurns}). Empty when there is nothing to do. Throws {@link
   * buildqueue.db.UniqueViolationException} when a concurrent dispatcher took the same slot first.
   */
  public Optional<Dispatched> dispatch(String lane) {
    UUID token = UUID.randomUUID();
    boolean fair = config.takesTurns(lane);
    Params params =
        Params.of("now", clock.now(), "lane", lane, "capacity", Lanes.capacity(lane, config))
            .and("token", token)
            .and("leaseMs", config.lease().toMillis())
            .and("fair", fair);
    return db.queryOptional(DISPATCH, params)
        .map(
            r ->
                new Dispatched(
                    new WorkerLaunch(r.longValue("worker_id"), token, lane, r.string("slot")),
                    r.longValue("job_id"),
                    r.instant("expires_at"),
                    r.bool("more_to_do")));
  }

  /**
   * {@link #DISPATCH} followed by a claim of job events, in one round trip ({@code
   * build_lane_dispatch_claiming}, V009): for a request that publishes what it wrote. Always one
   * row.
   */
  private static final String DISPATCH_CLAIMING =
      """
      select * from build_lane_dispatch_claiming(:lane::text, :capacity::integer, :fair::boolean, :token::uuid,
                                                 :leaseMs::bigint, :now::timestamptz, :claimMs::bigint,
                                                 :claimLimit::integer)
      """;

  /**
   * As {@link #dispatch}, and claims up to {@code tail}'s limit of job events after it (the
   * dispatch's own history row among them), which the tail then sends and settles.
   */
  Optional<Dispatched> dispatchClaiming(String lane, RequestTail tail) {
    UUID token = UUID.randomUUID();
    Params params =
        Params.of("now", clock.now(), "lane", lane, "capacity", Lanes.capacity(lane, config))
            .and("token", token)
            .and("leaseMs", config.lease().toMillis())
            .and("fair", config.takesTurns(lane))
            .and("claimMs", OutboxTransitions.CLAIM.toMillis())
            .and("claimLimit", tail.claimLimit());
    Row r = db.query(DISPATCH_CLAIMING, params).get(0);
    tail.claimed(r.string("claimed_events"));
    if (r.get("job_id") == null) {
      return Optional.empty();
    }
    return Optional.of(
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

  private static final String CHOOSE_CAPACITY =
      """
      update build_worker w
      set capacity = case when c.setting = 'on-demand' then 'on-demand' else 'spot' end
      from (select case when j.reclaims >= :maxReclaims then 'on-demand'
                        else coalesce(:kindCapacities::jsonb ->> j.kind, :defaultCapacity) end as setting
            from build_job j
            where j.worker_id = :workerId and j.status in ('dispatched', 'running')) c
      where w.id = :workerId and w.token = :token::uuid and w.status <> 'exited'
      returning c.setting
      """;

  /**
   * What a worker about to be launched runs on: its job's kind's setting (or the stack's default),
   * and on-demand once the job has been reclaimed {@link ExitTransitions#MAX_RECLAIMS} times. The
   * worker's row records it ({@code capacity}: {@code spot} for both Spot settings until a launch
   * falls back, {@link #recordCapacity}). The same worker and job always give the same answer, so a
   * relaunch sends the same request. A worker with no job (cancelled meanwhile) gets the stack's
   * default.
   */
  public Capacity chooseCapacity(WorkerLaunch launch, Capacities capacities) {
    Params params =
        Params.of("workerId", launch.workerId(), "token", launch.token())
            .and("maxReclaims", ExitTransitions.MAX_RECLAIMS)
            .and("kindCapacities", capacities.kindsJson())
            .and("defaultCapacity", capacities.stackDefault().label());
    return db.queryOptional(CHOOSE_CAPACITY, params)
        .map(r -> Capacity.ofLabel(r.string("setting")))
        .orElse(capacities.stackDefault());
  }

  private static final String RECORD_CAPACITY =
      """
      update build_worker set capacity = :capacity
      where id = :workerId and token = :token::uuid and status <> 'exited'
      """;

  /** A launch that asked for Spot fell back to on-demand: the worker's row says what it runs on. */
  public boolean recordCapacity(WorkerLaunch launch, Capacity ranOn) {
    return db.update(
            RECORD_CAPACITY,
            Params.of(
                "workerId", launch.workerId(), "token", launch.token(), "capacity", ranOn.label()))
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
   * dispatch and launch) so that exactly one tick retries each with the same token; a claim holds
   * for {@link QueueConfig#launchGrace()}, longer than any caller lives, so no two relaunches of
   * one worker are ever in flight together. A worker that has started without its task id being
   * recorded is included: the idempotent relaunch returns its task, which makes it checkable
   * instead of leaving its slot to the lease.
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
