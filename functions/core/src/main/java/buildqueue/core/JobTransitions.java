package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.List;
import java.util.Optional;

/** The transitions users cause: enqueue, cancel, and moving a user between lanes. */
public final class JobTransitions {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public JobTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * A new job, or the one the user already submitted with this idempotency key. {@code laneHasRoom}
   * says whether a dispatch could succeed now, so a caller skips the dispatch round trip when the
   * lane's slots are all held (the worker there will chain the job, or its exit will dispatch it).
   *
   * @param superseded the user's queued jobs with the same supersede key that the new job cancelled
   *     (the first {@link #MAX_SUPERSEDED_LISTED}, in order), and how many in all
   * @param cancelRequested the user's jobs with that key already on a worker, whose cancel was
   *     requested
   * @param cancelRequestedTaskIds the tasks of those jobs' workers (those with one yet), which the
   *     caller asks the platform to stop: that stop is what ends the jobs {@code cancelled}
   * @param armTick this statement found the tick disarmed and armed it (V014): the caller arms the
   *     tick's schedule ({@link TickSchedule#arm}) after the commit
   */
  public record Enqueued(
      long jobId,
      String lane,
      boolean created,
      boolean laneHasRoom,
      List<Long> superseded,
      long supersededCount,
      List<Long> cancelRequested,
      List<String> cancelRequestedTaskIds,
      boolean armTick) {
    public Enqueued(long jobId, String lane, boolean created, boolean laneHasRoom) {
      this(jobId, lane, created, laneHasRoom, List.of(), 0, List.of(), List.of(), false);
    }
  }

  /** The most superseded job ids an enqueue lists: its statement answers them in one row. */
  public static final int MAX_SUPERSEDED_LISTED = 100;

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String ENQUEUE =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      -- The payload's size as it is stored and read back, which is what a worker's row carries.
      doc as (select :payload::jsonb as payload),
      size as (select coalesce(octet_length(doc.payload::text), 0) as payload_bytes from doc),
      -- The quota: the user's own limit, else the queue's. Queued jobs are counted only to one past
      -- it (plus those this job would supersede), so the check reads at most that many index entries.
      -- Two submissions of one user at the same moment can each see the other's job missing: the
      -- quota may be passed by as many jobs as arrive together, never more.
      quota as (
        select coalesce((select u.max_queued_jobs from build_user u where u.user_id = :userId),
                        :defaultMaxQueued::integer) as max_queued
      ),
      replaced as (
        select count(*) as n from build_job r
        where :supersedeKey::text is not null and r.user_id = :userId and r.supersede_key = :supersedeKey
          and r.status = 'queued'
      ),
      queued as (
        select count(*) as n from (
          select 1 from build_job q
          where q.user_id = :userId and q.status = 'queued'
          limit (select max_queued from quota) + (select n from replaced) + 1) q
      ),
      -- The budget (docs/architecture.md section 4.8): the user's own, else the queue's, in
      -- vCPU-seconds per period (UTC), and what the user's jobs were billed in this period, summed
      -- from the ledger's index only when there is a budget. A job still on its worker is not billed
      -- yet, so it is not counted: a budget refuses new jobs, never stops one.
      period as (
        select date_trunc(:budgetPeriod::text, t.now at time zone 'UTC') at time zone 'UTC' as starts,
               (date_trunc(:budgetPeriod::text, t.now at time zone 'UTC') + ('1 ' || :budgetPeriod::text)::interval)
                 at time zone 'UTC' as ends
        from t
      ),
      budget as (
        select b.vcpu_seconds, period.ends,
               case when b.vcpu_seconds is null then 0
                    else (select coalesce(sum(c.billed_ms * c.vcpu_milli), 0)::bigint from build_job_cost c
                          where c.user_id = :userId and c.at >= period.starts) end as used_vcpu_micros
        from period, (select coalesce((select u.budget_vcpu_seconds from build_user u where u.user_id = :userId),
                                      :defaultBudget::bigint) as vcpu_seconds) b
      ),
      fits as (
        select size.payload_bytes <= :maxPayloadBytes as small, queued.n - replaced.n < quota.max_queued as room,
               queued.n = quota.max_queued + replaced.n + 1 as counted_past,
               budget.vcpu_seconds is null or budget.used_vcpu_micros < budget.vcpu_seconds * 1000000 as in_budget
        from size, queued, replaced, quota, budget
      ),
      inserted as (
        insert into build_job (user_id, kind, payload, idempotency_key, supersede_key, priority, lane, created_at,
                               traceparent)
        select :userId, :kind, doc.payload, :key, :supersedeKey, :priority::smallint, build_lane_of(:userId), t.now,
               :traceparent
        from t, doc, fits
        where fits.small and fits.room and fits.in_budget
        on conflict (user_id, idempotency_key) do nothing
        returning id, lane, user_id
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select i.id, 'enqueued', jsonb_build_object('message', 'enqueued in lane ' || i.lane, 'lane', i.lane), t.now
        from inserted i, t
        returning id
      ),
      -- The first enqueue after idle flips the tick's flag (V014) and arms the tick's schedule after
      -- its commit. An armed queue's enqueue only reads the row, so enqueues take no common lock.
      tick_armed as (
        update build_tick_arm a set armed = true
        where not a.armed and exists (select 1 from inserted)
        returning a.id
      ),
      %s
      -- The same user's unfinished jobs with this supersede key: queued ones are cancelled, and a
      -- worker running one sees its cancel at its next check-in, as after POST /jobs/{id}/cancel.
      superseded as (
        update build_job j set
          status = case when j.status = 'queued' then 'cancelled' else j.status end,
          finished_at = case when j.status = 'queued' then t.now else j.finished_at end,
          cancel_requested = true, superseded_by = i.id
        from inserted i, t
        where :supersedeKey::text is not null and j.user_id = :userId and j.supersede_key = :supersedeKey
          and (j.status = 'queued' or (j.status in ('dispatched', 'running') and not j.cancel_requested))
        returning j.id, j.status, j.worker_id, i.id as by_id
      ),
      superseded_event as (
        insert into build_job_event (job_id, type, detail, at)
        select s.id, case when s.status = 'cancelled' then 'cancelled' else 'cancel-requested' end,
               jsonb_build_object('message',
                 case when s.status = 'cancelled' then 'superseded by job ' || s.by_id
                      else 'superseded by job ' || s.by_id || ': cancel requested, worker ' || s.worker_id
                           || ' is told to stop' end,
                 'supersededBy', s.by_id),
               t.now
        from superseded s, t
        returning id
      ),
      job as (
        select id, lane, true as created from inserted
        union all
        select id, lane, false from build_job
        where user_id = :userId and idempotency_key = :key and not exists (select 1 from inserted)
      )
      -- One row: sizes, counts, and at most MAX_SUPERSEDED_LISTED ids plus the user's running jobs
      -- with the key (at most the shared lane's 100 slots): under 4 KB.
      select size.payload_bytes, fits.room, fits.counted_past, queued.n as queued_count, quota.max_queued,
             fits.in_budget, budget.vcpu_seconds as budget_vcpu_seconds, budget.used_vcpu_micros,
             budget.ends as budget_ends, ceil(extract(epoch from budget.ends - t.now))::bigint as budget_retry_s,
             job.id, job.lane, job.created,
             -- The share lock makes a concurrent worker exit wait for this insert to commit (so
             -- its follow-up dispatch sees the job), or this count wait for the exit (so it sees
             -- the free slot): a new job never waits for the tick because of that race. It is
             -- taken last, after the user's turn row and the superseded jobs (joined and
             -- superseded, read in the from list below, so run before this list): a worker
             -- ending its job holds the job's row and then a turn row from its walk while it
             -- updates its own worker row, so an enqueue that share-locked that worker first and
             -- then waited for either row would deadlock with it (EnqueueLockOrderTest).
             (select count(*) from (
                select 1 from build_worker w where w.lane = job.lane and w.status <> 'exited' for share of w) live)
               < case when job.lane = 'shared' then :sharedSlots else 1 end as lane_has_room,
             exists (select 1 from tick_armed) as arm_tick,
             (select count(*) from superseded s where s.status = 'cancelled') as superseded_count,
             (select string_agg(c.id::text, ',' order by c.id)
              from (select s.id from superseded s where s.status = 'cancelled' order by s.id limit :maxListed) c)
               as superseded_ids,
             (select string_agg(s.id::text, ',' order by s.id) from superseded s where s.status <> 'cancelled')
               as cancel_requested_ids,
             -- Their workers' tasks, for the caller to stop: the cancel is pushed, not polled.
             (select string_agg(w.task_id, ',' order by s.id) from superseded s
              join build_worker w on w.id = s.worker_id where s.status <> 'cancelled' and w.task_id is not null)
               as cancel_requested_task_ids,
             -- A new job's request publishes what it wrote: the claim (V009) runs after the history
             -- rows are written (event_done and superseded_event_done, in the from list) and in a
             -- snapshot of its own, so it takes them with any older unpublished rows.
             case when job.created and :claimLimit::integer > 0
                  then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
      from size cross join fits cross join queued cross join quota cross join budget left join job on true
        cross join (select count(*) from joined) as turn_joined
        cross join (select count(*) from superseded) as supersede_done
        cross join (select count(*) from event) as event_done
        cross join (select count(*) from superseded_event) as superseded_event_done
        cross join t
      """
          .formatted(LaneTurns.joined("inserted"));

  /**
   * Inserts a queued job in the user's current lane, deduplicated by (user, idempotency key).
   *
   * @throws PayloadTooLargeException when the payload, as stored, is over {@link
   *     RowLimits#MAX_PAYLOAD_BYTES}; nothing is written, whether or not the key was used before
   */
  public Enqueued enqueue(String userId, String kind, Json payload, String idempotencyKey) {
    return enqueue(userId, kind, payload, idempotencyKey, null);
  }

  /**
   * As {@link #enqueue(String, String, Json, String)}; with a {@code supersedeKey}, the new job
   * also cancels the user's queued jobs with that key and requests the cancel of those on a worker,
   * in the same statement (a repeated idempotency key changes nothing).
   *
   * @throws QueueFullException when the user already has their quota of queued jobs (those this job
   *     supersedes not counted) and the idempotency key is new; nothing is written
   * @throws BudgetExceededException when the user's jobs used their budget of this period and the
   *     idempotency key is new; nothing is written
   */
  public Enqueued enqueue(
      String userId, String kind, Json payload, String idempotencyKey, String supersedeKey) {
    return enqueue(
        userId, kind, payload, idempotencyKey, supersedeKey, Priority.NORMAL, null, null);
  }

  /** As the method below, without a traceparent. */
  Enqueued enqueue(
      String userId,
      String kind,
      Json payload,
      String idempotencyKey,
      String supersedeKey,
      Priority priority,
      RequestTail tail) {
    return enqueue(userId, kind, payload, idempotencyKey, supersedeKey, priority, null, tail);
  }

  /**
   * As {@link #enqueue(String, String, Json, String, String)}, the new job with {@code priority}
   * among its user's queued jobs; when a job is created, its statement also claims job events for
   * {@code tail} (null: none), its own history rows among them. A new job keeps {@code traceparent}
   * (null: none; docs/architecture.md "Trace context").
   */
  Enqueued enqueue(
      String userId,
      String kind,
      Json payload,
      String idempotencyKey,
      String supersedeKey,
      Priority priority,
      TraceContext traceparent,
      RequestTail tail) {
    Params params =
        Params.of("now", clock.now(), "userId", userId, "kind", kind)
            .and("payload", payload)
            .and("key", idempotencyKey)
            .and("supersedeKey", supersedeKey)
            .and("priority", priority.value())
            .and("traceparent", traceparent == null ? null : traceparent.header())
            .and("sharedSlots", config.sharedSlots())
            .and("maxPayloadBytes", RowLimits.MAX_PAYLOAD_BYTES)
            .and("defaultMaxQueued", config.maxQueuedJobs())
            .and("defaultBudget", config.ledger().defaultBudgetVcpuSeconds())
            .and("budgetPeriod", config.ledger().budgetPeriod())
            .and("maxListed", MAX_SUPERSEDED_LISTED)
            .and("claimMs", OutboxTransitions.CLAIM.toMillis())
            .and("claimLimit", tail == null ? 0 : tail.claimLimit());
    // With a concurrent insert of the same key, "do nothing" waits for it, but this statement's
    // snapshot predates it and finds no row: the next attempt sees the committed job.
    for (int attempt = 0; attempt < 3; attempt++) {
      Row r = db.query(ENQUEUE, params).get(0);
      if (r.longValue("payload_bytes") > RowLimits.MAX_PAYLOAD_BYTES) {
        throw new PayloadTooLargeException("The payload", r.longValue("payload_bytes"));
      }
      if (r.get("id") != null) {
        if (tail != null) {
          tail.claimed(r.string("claimed_events"));
        }
        return new Enqueued(
            r.longValue("id"),
            r.string("lane"),
            r.bool("created"),
            r.bool("lane_has_room"),
            ids(r.string("superseded_ids")),
            r.longValue("superseded_count"),
            ids(r.string("cancel_requested_ids")),
            taskIds(r.string("cancel_requested_task_ids")),
            r.bool("arm_tick"));
      }
      if (!r.bool("room")) {
        throw new QueueFullException(
            userId, r.longValue("queued_count"), r.bool("counted_past"), r.intValue("max_queued"));
      }
      if (!r.bool("in_budget")) {
        throw new BudgetExceededException(
            userId,
            r.longValue("used_vcpu_micros") / 1_000_000,
            r.longValue("budget_vcpu_seconds"),
            config.ledger().budgetPeriod(),
            r.instant("budget_ends"),
            Math.max(1, r.longValue("budget_retry_s")));
      }
    }
    throw new buildqueue.BuildQueueException(
        "enqueue for user "
            + userId
            + " with idempotency key "
            + idempotencyKey
            + " found neither a new nor an existing job after 3 attempts; retry the request");
  }

  static List<Long> ids(String commaSeparated) {
    return commaSeparated == null
        ? List.of()
        : java.util.Arrays.stream(commaSeparated.split(",")).map(Long::valueOf).toList();
  }

  static List<String> taskIds(String commaSeparated) {
    // Task ids never hold a comma: ECS task ARNs, local "host:pid:start", in-process "inproc-N".
    return commaSeparated == null ? List.of() : List.of(commaSeparated.split(","));
  }

  /** What a cancel request did. */
  public sealed interface Cancelled {
    /** The job was queued and is now {@code cancelled}. */
    record Now(long jobId) implements Cancelled {}

    /**
     * The job is on a worker, which the caller asks its platform to stop ({@code taskId}, null
     * while the launch is unrecorded: the worker then sees the flag at its next check-in).
     */
    record Requested(long jobId, long workerId, String taskId, String workerStatus)
        implements Cancelled {}

    /** The job had already finished (or was already being cancelled): nothing changed. */
    record Unchanged(long jobId, JobStatus status) implements Cancelled {}

    /** No such job, or not the caller's. */
    record NotFound(long jobId) implements Cancelled {}
  }

  /**
   * The cancel of the jobs in a statement's {@code target} (by {@code id}, locked), as its CTEs
   * {@code changed} and {@code event}: a queued job is cancelled at once, one on a worker gets its
   * flag (its worker is then stopped by the caller); each changed job gets its history row. The
   * {@code %s} is a further guard on {@code j} (empty: none). One text for the single cancel and
   * the bulk one ({@link OperatorTransitions}), so both write the same rows.
   */
  static final String CANCELLING =
      """
      changed as (
        update build_job j set
          status = case when j.status = 'queued' then 'cancelled' else j.status end,
          finished_at = case when j.status = 'queued' then t.now else j.finished_at end,
          cancel_requested = true
        from target, t
        where j.id = target.id
          and (j.status = 'queued' or (j.status in ('dispatched', 'running') and not j.cancel_requested))%s
        returning j.id, j.status, j.worker_id
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select c.id,
               case when c.status = 'cancelled' then 'cancelled' else 'cancel-requested' end,
               jsonb_build_object('message',
                 case when c.status = 'cancelled' then 'cancelled while queued'
                      else 'cancel requested, worker ' || c.worker_id || ' is told to stop' end),
               t.now
        from changed c, t
        returning id
      )""";

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String CANCEL =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      target as (
        select j.id, j.status from build_job j
        where j.id = :jobId and (:userId::text is null or j.user_id = :userId)
        for update
      ),
      %s
      select target.id, target.status as old_status, changed.status as new_status, changed.worker_id,
             w.task_id, w.status as worker_status,
             -- As the enqueue's: the claim (V009) runs after the history row is written (event_done).
             case when changed.id is not null and :claimLimit::integer > 0
                  then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
      from target
      left join changed on true
      left join build_worker w on w.id = changed.worker_id
      cross join (select count(*) from event) as event_done
      cross join t
      """
          .formatted(CANCELLING.formatted(""));

  /**
   * Cancels a job: a queued one at once, one on a worker by a flag that the worker's interruption
   * (once the caller stopped it) or its next check-in reads (its job then ends {@code cancelled}).
   * {@code userId} null means an admin.
   */
  public Cancelled cancel(long jobId, String userId) {
    return cancel(jobId, userId, null);
  }

  /**
   * As {@link #cancel(long, String)}; a cancel that changed the job claims events for {@code tail}.
   */
  Cancelled cancel(long jobId, String userId, RequestTail tail) {
    Optional<Row> row =
        db.queryOptional(
            CANCEL,
            Params.of("now", clock.now(), "jobId", jobId, "userId", userId)
                .and("claimMs", OutboxTransitions.CLAIM.toMillis())
                .and("claimLimit", tail == null ? 0 : tail.claimLimit()));
    if (row.isEmpty()) {
      return new Cancelled.NotFound(jobId);
    }
    Row r = row.get();
    if (tail != null) {
      tail.claimed(r.string("claimed_events"));
    }
    String newStatus = r.string("new_status");
    if (newStatus == null) {
      return new Cancelled.Unchanged(jobId, JobStatus.of(r.string("old_status")));
    }
    if (newStatus.equals("cancelled")) {
      return new Cancelled.Now(jobId);
    }
    return new Cancelled.Requested(
        jobId, r.longValue("worker_id"), r.string("task_id"), r.string("worker_status"));
  }

  /**
   * The user's settings after the change, the lane their queued jobs are now in, how many moved.
   *
   * @param movedJobs the ids of the first {@link #MAX_MOVED_LISTED} moved jobs, in order
   * @param maxQueuedJobs the user's quota of queued jobs: their own, else the queue's default
   * @param ownMaxQueuedJobs whether {@code maxQueuedJobs} is the user's own (set by an admin)
   */
  public record LaneChange(
      String userId,
      boolean dedicatedWorker,
      String lane,
      long movedCount,
      List<Long> movedJobs,
      int maxQueuedJobs,
      boolean ownMaxQueuedJobs,
      Long budgetVcpuSeconds,
      boolean ownBudget) {}

  /** The most moved job ids a lane change lists: the statement answers them in one row. */
  public static final int MAX_MOVED_LISTED = 1000;

  /**
   * What to change of a user; an empty field is left as it is.
   *
   * @param maxQueuedJobs present: set the user's own quota, {@code OptionalInt.empty()} inside it:
   *     back to the queue's default
   */
  public record UserChange(
      Optional<Boolean> dedicatedWorker,
      Optional<java.util.OptionalInt> maxQueuedJobs,
      Optional<java.util.OptionalLong> budgetVcpuSeconds) {
    public UserChange(
        Optional<Boolean> dedicatedWorker, Optional<java.util.OptionalInt> maxQueuedJobs) {
      this(dedicatedWorker, maxQueuedJobs, Optional.empty());
    }

    public static UserChange dedicated(boolean dedicated) {
      return new UserChange(Optional.of(dedicated), Optional.empty());
    }
  }

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String SET_USER =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      old as (select u.dedicated_worker, u.max_queued_jobs, u.budget_vcpu_seconds from build_user u where u.user_id = :userId),
      wanted as (
        select coalesce(:dedicated::boolean, (select o.dedicated_worker from old o), false) as dedicated,
               case when :setMaxQueued then :maxQueued::integer else (select o.max_queued_jobs from old o) end
                 as max_queued,
               case when :setBudget then :budget::bigint else (select o.budget_vcpu_seconds from old o) end
                 as budget
      ),
      lane as (select case when wanted.dedicated then 'user:' || :userId else 'shared' end as name from wanted),
      saved as (
        insert into build_user (user_id, dedicated_worker, max_queued_jobs, budget_vcpu_seconds, updated_at)
        select :userId, wanted.dedicated, wanted.max_queued, wanted.budget, t.now from t, wanted
        on conflict (user_id) do update set dedicated_worker = excluded.dedicated_worker,
          max_queued_jobs = excluded.max_queued_jobs, budget_vcpu_seconds = excluded.budget_vcpu_seconds,
          updated_at = excluded.updated_at
        returning user_id
      ),
      moved as (
        update build_job j set lane = lane.name
        from lane
        where j.user_id = :userId and j.status = 'queued' and j.lane <> lane.name
        returning j.id, j.lane, j.user_id
      ),
      %s
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select m.id, 'moved', jsonb_build_object('message', 'moved to lane ' || m.lane, 'lane', m.lane), t.now
        from moved m, t
        returning id
      )
      -- One row however many jobs move: a lane, a count and at most MAX_MOVED_LISTED ids (20 KB).
      select lane.name as lane, wanted.dedicated, wanted.max_queued, wanted.budget, (select count(*) from saved) as saved,
             (select count(*) from moved) as moved_count,
             (select string_agg(m.id::text, ',' order by m.id)
              from (select id from moved order by id limit :maxListed) m) as moved_ids,
             -- As the enqueue's: the claim (V009) runs after the history rows are written (moved_events).
             case when moved_events.n > 0 and :claimLimit::integer > 0
                  then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
      from lane cross join wanted cross join (select count(*) from joined) as turn_joined
        cross join (select count(*) as n from event) as moved_events
        cross join t
      """
          .formatted(LaneTurns.joined("moved"));

  /** Gives or takes a user's dedicated worker; their queued jobs move to the new lane in order. */
  public LaneChange setDedicated(String userId, boolean dedicated) {
    return updateUser(userId, UserChange.dedicated(dedicated));
  }

  /**
   * Changes a user's dedicated worker and quota in one statement; when the lane changes, their
   * queued jobs move to the new one in order.
   */
  public LaneChange updateUser(String userId, UserChange change) {
    return updateUser(userId, change, null);
  }

  /**
   * As {@link #updateUser(String, UserChange)}; moved jobs' events are claimed for {@code tail}.
   */
  LaneChange updateUser(String userId, UserChange change, RequestTail tail) {
    java.util.OptionalInt max = change.maxQueuedJobs().orElse(java.util.OptionalInt.empty());
    Row r =
        db.query(
                SET_USER,
                Params.of(
                        "now",
                        clock.now(),
                        "userId",
                        userId,
                        "dedicated",
                        change.dedicatedWorker().orElse(null))
                    .and("setMaxQueued", change.maxQueuedJobs().isPresent())
                    .and("maxQueued", max.isPresent() ? max.getAsInt() : null)
                    .and("setBudget", change.budgetVcpuSeconds().isPresent())
                    .and(
                        "budget",
                        change
                            .budgetVcpuSeconds()
                            .filter(java.util.OptionalLong::isPresent)
                            .map(b -> (Object) b.getAsLong())
                            .orElse(null))
                    .and("maxListed", MAX_MOVED_LISTED)
                    .and("claimMs", OutboxTransitions.CLAIM.toMillis())
                    .and("claimLimit", tail == null ? 0 : tail.claimLimit()))
            .get(0);
    if (tail != null) {
      tail.claimed(r.string("claimed_events"));
    }
    Integer own = r.get("max_queued") == null ? null : r.intValue("max_queued");
    return new LaneChange(
        userId,
        r.bool("dedicated"),
        r.string("lane"),
        r.longValue("moved_count"),
        ids(r.string("moved_ids")),
        own == null ? config.maxQueuedJobs() : own,
        own != null,
        r.get("budget") == null
            ? config.ledger().defaultBudgetVcpuSeconds()
            : Long.valueOf(r.longValue("budget")),
        r.get("budget") != null);
  }
}
