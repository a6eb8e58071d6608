package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Instant;
import java.util.List;

/** The scheduled tick's reads and claims: liveness checks, expired leases, lanes, housekeeping. */
public final class TickTransitions {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public TickTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * What one look at the queue found due, part by part, and the queue's gauges. Each flag is true
   * when the part's own claim or read, run at the same time, would find at least one row, so a tick
   * may skip every part whose flag is false: what becomes due after the look is found by the next
   * tick, as what becomes due after a part's own claim always was.
   *
   * @param dueChecks workers due for a liveness check ({@link #claimDueChecks})
   * @param unresolvedLaunches launches to resolve ({@link
   *     DispatchTransitions#claimUnresolvedLaunches})
   * @param expiredLeases live workers past their lease ({@link #expiredLeases})
   * @param lanesToDispatch a lane with a queued job and a free slot ({@link #lanesToDispatch})
   * @param eventsPending job events a publisher may claim ({@link OutboxTransitions#claimPending})
   * @param housekeeping rows {@link #housekeep} would delete
   * @param webhooksDue webhook deliveries a deliverer may claim ({@link
   *     WebhookDeliveries#claimDue}); false whenever no endpoint is registered, so the deliverer
   *     then never runs
   * @param artifactsToSweep an upload record whose attempt can no longer publish and whose worker
   *     has exited ({@link ArtifactSweep}'s unpublished half): a sweep would remove its files. The
   *     sweep's other half, the files of jobs the housekeeping deleted, is due only after a tick's
   *     housekeeping deleted some ({@code TickReport.housekeptJobs}), which its caller knows
   * @param work the queue has work: a queued job, a worker not exited, a job event not yet
   *     published, a webhook delivery pending, or an upload to sweep ({@code artifactsToSweep}).
   *     Without any, the tick may disarm its schedule ({@link #disarm})
   * @param gauges the queue's gauges, when asked for; else null
   */
  public record Survey(
      boolean dueChecks,
      boolean unresolvedLaunches,
      boolean expiredLeases,
      boolean lanesToDispatch,
      boolean eventsPending,
      boolean housekeeping,
      boolean webhooksDue,
      boolean artifactsToSweep,
      boolean work,
      Gauges gauges) {}

  /**
   * The queue's gauges.
   *
   * @param queued jobs queued (the metric {@code QueueDepth})
   * @param longestWaitSeconds how long the oldest queued job has waited, 0 when none does
   */
  public record Gauges(long queued, long longestWaitSeconds) {}

  /**
   * Each test is the predicate of the claim or read it stands for, as an {@code exists}, so it
   * stops at the first row and uses the same partial indexes (live workers, queued jobs by lane,
   * unpublished events, finished jobs, exited workers). On an empty queue every test is an empty
   * index probe; on a busy one the lane walk stops at the first lane with room.
   */
  private static final String SURVEY =
      """
      with recursive t as (select coalesce(:now::timestamptz, now()) as now),
      lanes(lane) as (
        (select lane from build_job where status = 'queued' order by lane limit 1)
        union all
        select (select q.lane from build_job q where q.status = 'queued' and q.lane > lanes.lane
                order by q.lane limit 1)
        from lanes where lanes.lane is not null
      ),
      -- Counting visits every queued job, so only a caller that reports the gauges pays for it.
      queued as (
        select count(j.id) as queued, min(j.created_at) as oldest
        from build_job j where :gauges::boolean and j.status = 'queued'
      )
      -- Size: one row of nine booleans and two numbers.
      select
        exists(select 1 from build_worker d
               where d.status <> 'exited' and d.task_id is not null
                 and (d.checked_at is null
                      or d.checked_at <= t.now - :intervalMs * interval '1 millisecond')) as due_checks,
        exists(select 1 from build_worker u
               where u.status <> 'exited' and u.task_id is null and u.expires_at > t.now
                 and u.launched_at <= t.now - :graceMs * interval '1 millisecond'
                 and (u.checked_at is null
                      or u.checked_at <= t.now - :graceMs * interval '1 millisecond')) as unresolved_launches,
        exists(select 1 from build_worker w
               where w.status <> 'exited' and w.expires_at <= t.now) as expired_leases,
        exists(select 1 from lanes l
               where l.lane is not null
                 and (select count(*) from build_worker w where w.lane = l.lane and w.status <> 'exited')
                       < case when l.lane = 'shared' then :sharedSlots else 1 end) as lanes_to_dispatch,
        exists(select 1 from build_job_event e
               where e.published_at is null
                 and (e.publish_claimed_until is null or e.publish_claimed_until <= t.now)) as events_pending,
        (exists(select 1 from build_job o
                where o.finished_at < t.now - :retentionMs * interval '1 millisecond'
                  and not exists (select 1 from build_job_event e
                                  where e.job_id = o.id and e.published_at is null))
         or exists(select 1 from build_worker o
                   where o.status = 'exited'
                     and o.exited_at < t.now - :retentionMs * interval '1 millisecond')) as housekeeping,
        -- WebhookDeliveries' claim, with its order per job: a delivery waiting behind an earlier
        -- one of its job (backing off) is not due, or every tick would start a pass for nothing.
        exists(select 1 from build_webhook_delivery h
               where h.status = 'pending' and h.next_attempt_at <= t.now
                 and (h.claimed_until is null or h.claimed_until <= t.now)
                 and not exists (select 1 from build_webhook_delivery p
                                 where p.endpoint_id = h.endpoint_id and p.job_id = h.job_id
                                   and p.status = 'pending' and p.event_id < h.event_id)) as webhooks_due,
        -- ArtifactSweep's claim of uploads, as an exists (TickSurveyTest holds the two together).
        -- An upload record lives only from a worker's stage to its end, so the table is small.
        exists(select 1 from build_artifact_upload u
               left join build_job j on j.id = u.job_id
               where (j.id is null or j.status <> 'running' or j.worker_id is distinct from u.worker_id
                      or j.attempts <> u.attempt)
                 and not exists (select 1 from build_worker w
                                 where w.id = u.worker_id and w.status <> 'exited')) as artifacts_to_sweep,
        -- What build_tick_disarm (V014) checks, so a tick that finds none of it disarms, and a
        -- pending webhook delivery, which keeps the tick (and so its deliverer) running until it is
        -- acknowledged or dead. A replay arms the tick again (BuildQueue.replayWebhookDelivery).
        (exists(select 1 from build_job j where j.status = 'queued')
         or exists(select 1 from build_worker w where w.status <> 'exited')
         or exists(select 1 from build_job_event e where e.published_at is null)
         or exists(select 1 from build_webhook_delivery h where h.status = 'pending')) as work,
        q.queued,
        coalesce(floor(extract(epoch from (t.now - q.oldest))), 0)::bigint as longest_wait_seconds
      from t, queued q
      """;

  /**
   * Looks at every part of the tick in one statement ({@link Survey}): an idle tick costs this
   * statement and nothing else. With {@code gauges}, it also reads the queue's gauges; counting the
   * queued jobs visits each, so a caller that does not report them (the local server's tick every
   * few seconds) does without.
   */
  public Survey survey(boolean gauges) {
    Params params =
        Params.of(
                "now",
                clock.now(),
                "intervalMs",
                config.livenessInterval().toMillis(),
                "graceMs",
                config.launchGrace().toMillis())
            .and("sharedSlots", config.sharedSlots())
            .and("retentionMs", config.retention().toMillis())
            .and("gauges", gauges);
    Row r = db.query(SURVEY, params).get(0);
    return new Survey(
        r.bool("due_checks"),
        r.bool("unresolved_launches"),
        r.bool("expired_leases"),
        r.bool("lanes_to_dispatch"),
        r.bool("events_pending"),
        r.bool("housekeeping"),
        r.bool("webhooks_due"),
        r.bool("artifacts_to_sweep"),
        // An upload to sweep keeps the tick armed until a sweep removed it: a sweep that failed in
        // the tick that disarmed would otherwise leave the files for the daily fallback.
        r.bool("work") || r.bool("artifacts_to_sweep"),
        gauges
            ? new Gauges(r.longValue("queued"), Math.max(0, r.longValue("longest_wait_seconds")))
            : null);
  }

  private static final String DISARM = "select build_tick_disarm() as disarmed";

  /**
   * Clears the tick's armed flag if the queue has no work (V014's {@code build_tick_disarm}, which
   * says why it locks): true when it is clear now. False when work exists or a writer was in
   * flight; the caller then arms its schedule again. Called after the schedule was turned off, so
   * an enqueue that commits after this reads the flag clear and arms the schedule itself.
   */
  public boolean disarm() {
    return db.query(DISARM, Params.none()).get(0).bool("disarmed");
  }

  /**
   * A worker whose task this caller, and no concurrent one, is to check now. {@code claimedAt} is
   * the time of the claim: passed back as {@code asOf}, it keeps a tick's later batches from
   * claiming again the workers its earlier ones checked.
   */
  public record DueCheck(long workerId, String taskId, boolean leaseExpired, Instant claimedAt) {}

  private static final String CLAIM_DUE_CHECKS =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      claimed as (
        update build_worker w set checked_at = t.now
        from t
        -- A batch by array, as in housekeep below
        where w.id = any(array(
          select d.id from build_worker d, t
          where d.status <> 'exited' and d.task_id is not null
            -- Due as of the tick's first claim, and not checked since: a worker this tick has
            -- checked, or launched, is not due again in it, however long the tick takes.
            and (:asOf::timestamptz is null or coalesce(d.checked_at, d.launched_at) < :asOf::timestamptz)
            and (d.checked_at is null
                 or d.checked_at <= coalesce(:asOf::timestamptz, t.now) - :intervalMs * interval '1 millisecond')
          order by d.checked_at nulls first, d.id
          limit :limit
          for update skip locked))
        returning w.id, w.task_id, w.expires_at <= t.now as lease_expired, t.now as claimed_at
      )
      -- RETURNING has no order, so a tick that works through its claims in id order is reproducible.
      -- Size: at most the limit (the tick's 100) of rows of an id, a task id and two times (450 bytes).
      select * from claimed order by id
      """;

  /**
   * Claims workers due for a liveness check in one {@code UPDATE … RETURNING}: each worker is
   * checked at most once per {@link QueueConfig#livenessInterval()}, and concurrent ticks claim
   * disjoint sets (rows locked by one are skipped by the other, and a row it has claimed no longer
   * matches). The least recently checked come first, so a tick that cannot check every live worker
   * leaves the rest to be first in the next one.
   */
  public List<DueCheck> claimDueChecks(int limit) {
    return claimDueChecks(limit, null);
  }

  /**
   * As {@link #claimDueChecks(int)}, counting as due only workers due at {@code asOf} (the {@code
   * claimedAt} of the tick's first batch; null for the first batch): a tick that works through ten
   * thousand workers in batches ends when it has checked each once.
   */
  public List<DueCheck> claimDueChecks(int limit, Instant asOf) {
    Params params =
        Params.of(
                "now",
                clock.now(),
                "intervalMs",
                config.livenessInterval().toMillis(),
                "limit",
                limit)
            .and("asOf", asOf);
    return db.query(CLAIM_DUE_CHECKS, params).stream()
        .map(
            r ->
                new DueCheck(
                    r.longValue("id"),
                    r.string("task_id"),
                    r.bool("lease_expired"),
                    r.instant("claimed_at")))
        .toList();
  }

  /** A live worker whose lease has run out. */
  public record ExpiredLease(long workerId, String taskId) {}

  private static final String EXPIRED_LEASES =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now)
      -- Size: at most the limit (the tick's 100) of rows of an id and a task id (400 bytes).
      select w.id, w.task_id from build_worker w, t
      where w.status <> 'exited' and w.expires_at <= t.now and w.id > :afterId::bigint
      order by w.id
      limit :limit
      """;

  /**
   * Live workers past their lease, in id order, after {@code afterId} (0 for the first page); the
   * caller reclaims only those it cannot check, and pages on past the ones it can.
   */
  public List<ExpiredLease> expiredLeases(long afterId, int limit) {
    return db
        .query(EXPIRED_LEASES, Params.of("now", clock.now(), "afterId", afterId, "limit", limit))
        .stream()
        .map(r -> new ExpiredLease(r.longValue("id"), r.string("task_id")))
        .toList();
  }

  private static final String LANES_TO_DISPATCH =
      """
      with recursive lanes(lane) as (
        (select lane from build_job where status = 'queued' and (:after::text is null or lane > :after)
         order by lane limit 1)
        union all
        select (select q.lane from build_job q where q.status = 'queued' and q.lane > lanes.lane
                order by q.lane limit 1)
        from lanes where lanes.lane is not null
      )
      -- Size: at most the limit (the tick's 100) of rows of a lane (RowLimits.MAX_LANE_BYTES).
      select l.lane from lanes l
      where l.lane is not null
        and (select count(*) from build_worker w where w.lane = l.lane and w.status <> 'exited')
              < case when l.lane = 'shared' then :sharedSlots else 1 end
      order by l.lane
      limit :limit
      """;

  /**
   * Lanes with queued jobs and a free slot, in name order, at most {@code limit} of them (lanes are
   * as many as dedicated users: the answer must stay under the Data API's 1 MiB). Walks the
   * distinct lanes of the queued-job index (a loose index scan), so it costs one index probe per
   * lane however many jobs wait.
   *
   * @param after only lanes after this one (the last of the previous batch); null for the first
   */
  public List<String> lanesToDispatch(String after, int limit) {
    Params params = Params.of("sharedSlots", config.sharedSlots(), "after", after, "limit", limit);
    return db.query(LANES_TO_DISPATCH, params).stream().map(r -> r.string("lane")).toList();
  }

  /** What housekeeping deleted. */
  public record Housekept(long workers, long jobs) {}

  private static final String HOUSEKEEP =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      old_jobs as (
        delete from build_job j
        where j.id = any(array(
          select o.id from build_job o, t
          where o.finished_at < t.now - :retentionMs * interval '1 millisecond'
            and not exists (select 1 from build_job_event e where e.job_id = o.id and e.published_at is null)
          order by o.finished_at
          limit :limit))
        returning j.id
      ),
      old_workers as (
        delete from build_worker w
        where w.id = any(array(
          select o.id from build_worker o, t
          where o.status = 'exited' and o.exited_at < t.now - :retentionMs * interval '1 millisecond'
          order by o.exited_at
          limit :limit))
        returning w.id
      )
      select (select count(*) from old_workers) as workers, (select count(*) from old_jobs) as jobs
      """;

  /**
   * Deletes exited workers and finished jobs older than the retention, a bounded batch per call.
   * Only {@code exited} workers are candidates, so the identity of a worker that may still run (and
   * holds its slot) is never deleted; jobs whose history is not yet published stay.
   *
   * <p>The batch is an array, not an {@code in (select … limit :limit)}, here and in every batch
   * claim of the queue: the array's subquery runs once, before the update, and the update finds its
   * rows by primary key. With {@code in}, a prepared statement that JDBC reuses may settle on a
   * generic plan, which cannot see the limit: a hash join over a sequential scan of the whole table
   * (290 ms at a million jobs, against 2 ms, on PostgreSQL 15 with {@code plan_cache_mode =
   * force_generic_plan}).
   */
  public Housekept housekeep(int limit) {
    Row r =
        db.query(
                HOUSEKEEP,
                Params.of(
                    "now",
                    clock.now(),
                    "retentionMs",
                    config.retention().toMillis(),
                    "limit",
                    limit))
            .get(0);
    return new Housekept(r.longValue("workers"), r.longValue("jobs"));
  }
}
