package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

/**
 * What a worker does to the queue. Every statement is fenced by the worker's id and token, its
 * status, and its lease: a worker that has been fenced off (its slot reclaimed, its job requeued)
 * changes nothing, and learns so from the zero rows it gets back.
 */
public final class WorkerTransitions {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public WorkerTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /** A job this worker now runs. {@code progress} is where the last attempt got to. */
  public record AssignedJob(
      long id, String userId, String kind, Json payload, int progress, int attempt, boolean cancelRequested) {}

  /** The worker is running. {@code job} is empty when its job went away (it was cancelled). */
  public record Started(Instant databaseNow, Instant expiresAt, Optional<AssignedJob> job) {}

  private static final String START =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      worker as (
        update build_worker w set status = 'running', started_at = t.now
        from t
        where w.id = :workerId and w.token = :token::uuid and w.status = 'launching'
          and w.expires_at - :deadlineMarginMs * interval '1 millisecond' > t.now
        returning w.id, w.expires_at
      ),
      job as (
        update build_job j set status = 'running', started_at = t.now
        from worker, t
        where j.worker_id = worker.id and j.status = 'dispatched'
        returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select job.id, 'started', jsonb_build_object('message', 'started on worker ' || :workerId, 'workerId', :workerId), t.now
        from job, t
      )
      -- One row carrying the job's payload: within RowLimits' job row (the payload at most
      -- MAX_PAYLOAD_BYTES as stored, checked when it was enqueued).
      select t.now as database_now, worker.expires_at,
             job.id, job.user_id, job.kind, job.payload, job.progress, job.attempts, job.cancel_requested
      from worker cross join t left join job on true
      """;

  /**
   * {@code launching → running} with the right token and before the lease, and its dispatched job
   * {@code → running}, in one statement. Empty means: wrong token, already started, or too late
   * (the slot may already be someone else's) — the worker must exit without doing anything.
   */
  public Optional<Started> start(long workerId, UUID token) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("deadlineMarginMs", config.deadlineMargin().toMillis());
    return db.queryOptional(START, params)
        .map(r -> new Started(r.instant("database_now"), r.instant("expires_at"), assignedJob(r)));
  }

  /**
   * A job's log tail to store: its last part, every byte of output so far, and where the whole
   * log is (null: unchanged).
   */
  public record LogWrite(String tail, long totalBytes, String location) {}

  private static final String CHECK_IN =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      job as (
        update build_job j set progress = coalesce(:progress::integer, j.progress)
        from build_worker w, t
        where j.id = :jobId and j.worker_id = :workerId and j.status = 'running'
          and w.id = :workerId and w.token = :token::uuid and w.status = 'running' and w.expires_at > t.now
        returning j.id, j.cancel_requested,
          -- The log tail, saved by the row it belongs to (a function here runs only if fenced in).
          case when :logTail::text is not null then build_job_log_save(j.id, :logTail::text, :logBytes::bigint, :logLocation::text, t.now) end
      )
      select job.cancel_requested from job
      """;

  /** Outcome of a progress report or check-in. */
  public enum ProgressAck {
    /** Recorded; go on. */
    RECORDED,
    /** Recorded, and the job's owner asked to cancel it: stop and end it {@code cancelled}. */
    CANCEL_REQUESTED,
    /** Nothing was written: this worker no longer owns the job. Stop at once. */
    FENCED_OFF
  }

  public ProgressAck progress(long workerId, UUID token, long jobId, int progress) {
    return checkIn(workerId, token, jobId, progress, null);
  }

  /**
   * Records the job's progress (null: unchanged) and its log tail (null: unchanged), fenced, in
   * one statement, and reads whether its owner asked to cancel it. With neither, it is only the
   * cancel check a running program needs, since a program may never report progress.
   */
  public ProgressAck checkIn(long workerId, UUID token, long jobId, Integer progress, LogWrite log) {
    Params params =
        logParams(Params.of("now", clock.now(), "workerId", workerId, "token", token), log)
            .and("jobId", jobId)
            .and("progress", progress);
    return db.queryOptional(CHECK_IN, params)
        .map(r -> r.bool("cancel_requested") ? ProgressAck.CANCEL_REQUESTED : ProgressAck.RECORDED)
        .orElse(ProgressAck.FENCED_OFF);
  }

  private static Params logParams(Params params, LogWrite log) {
    return params
        .and("logTail", log == null ? null : log.tail())
        .and("logBytes", log == null ? 0L : log.totalBytes())
        .and("logLocation", log == null ? null : log.location());
  }

  private static final String INTERRUPT =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      job as (
        update build_job j set (status, recoveries, worker_id, error, finished_at, progress) = (
          select d.*, coalesce(:progress::integer, j.progress)
          from build_job_interruption(j.cancel_requested, coalesce(:progress::integer, j.progress), j.checkpoint,
                                      j.recoveries, :maxRecoveries::integer, j.worker_id, t.now, :repeatedExitError::text) d)
        from build_worker w, t
        where j.id = :jobId and j.worker_id = :workerId and j.status = 'running'
          and w.id = :workerId and w.token = :token::uuid and w.status = 'running' and w.expires_at > t.now
        returning j.id, j.status, j.progress, j.checkpoint, j.recoveries, j.error,
          -- The log tail, saved by the row it belongs to (a function here runs only if fenced in).
          case when :logTail::text is not null then build_job_log_save(j.id, :logTail::text, :logBytes::bigint, :logLocation::text, t.now) end
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select job.id, case job.status when 'queued' then 'interrupted' else job.status end,
               build_job_interruption_detail(job.status, job.checkpoint, job.progress, job.recoveries, job.error, :reason),
               t.now
        from job, t
      )
      select job.status from job
      """;

  /**
   * The job's program asked to be retried (one of its kind's retry exit codes): the job is
   * interrupted as if its worker had exited — back to the head of its lane, or failed after too
   * many interruptions without progress — while this worker stays {@code running}. The caller
   * takes the next job with {@link #takeNext}, which sees the requeued job at the head of the lane.
   *
   * @param reason why, for the job's history; cut to {@link RowLimits#MAX_ERROR_BYTES}
   * @return the job's new status ({@code queued}, {@code failed}, {@code cancelled}), or empty if
   *     this worker was fenced off
   */
  public Optional<JobStatus> interrupt(long workerId, UUID token, long jobId, String reason, LogWrite log) {
    return interrupt(workerId, token, jobId, reason, null, log);
  }

  /**
   * As {@link #interrupt(long, UUID, long, String, LogWrite)}, recording the job's latest progress
   * first (null: unchanged): where the next attempt resumes, and what decides whether the job moved
   * forward on this attempt.
   */
  public Optional<JobStatus> interrupt(long workerId, UUID token, long jobId, String reason, Integer progress,
      LogWrite log) {
    Params params =
        logParams(Params.of("now", clock.now(), "workerId", workerId, "token", token), log)
            .and("jobId", jobId)
            .and("progress", progress)
            .and("reason", RowLimits.boundedError(reason))
            .and("maxRecoveries", ExitTransitions.MAX_RECOVERIES)
            .and("repeatedExitError", ExitTransitions.REPEATED_EXIT_ERROR);
    return db.queryOptional(INTERRUPT, params).map(r -> JobStatus.of(r.string("status")));
  }

  private static final String ADD_FOLLOW_UPS =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      fence as (
        select j.user_id from build_job j
        join build_worker w on w.id = j.worker_id, t
        where j.id = :jobId and j.status = 'running'
          and w.id = :workerId and w.token = :token::uuid and w.status = 'running' and w.expires_at > t.now
      ),
      follow_up as (
        select f.kind, coalesce(f.payload, '{}'::jsonb) as payload, f.n
        from rows from (jsonb_to_recordset(:followUps::jsonb) as (kind text, payload jsonb)) with ordinality as f(kind, payload, n)
      ),
      -- A follow-up whose worker could not read it back in one Data API row, as POST /jobs refuses
      -- one: then none of them is inserted.
      too_large as (
        select u.n, octet_length(u.payload::text) as payload_bytes, octet_length(u.kind) as kind_bytes
        from follow_up u
        where octet_length(u.payload::text) > :maxPayloadBytes or octet_length(u.kind) > :maxKindBytes
        order by u.n
        limit 1
      ),
      inserted as (
        insert into build_job (user_id, kind, payload, lane, created_at)
        select fence.user_id, u.kind, u.payload, build_lane_of(fence.user_id), t.now
        from fence, t, follow_up u
        where not exists (select 1 from too_large)
        order by u.n
        returning id, lane, user_id
      ),
      %s
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select i.id, 'enqueued',
               jsonb_build_object('message', 'enqueued in lane ' || i.lane || ' as a follow-up of job ' || :jobId,
                                  'lane', i.lane, 'followUpOf', :jobId),
               t.now
        from inserted i, t
      )
      select (select count(*) from fence) as fenced_in, (select count(*) from inserted) as inserted,
             too_large.n as too_large_n, too_large.payload_bytes, too_large.kind_bytes
      from (select 1) as one left join too_large on true
      """
          .formatted(LaneTurns.joined("inserted"));

  /** What {@link #addFollowUps} did. */
  public sealed interface FollowUps {
    /** All were inserted. */
    record Added() implements FollowUps {}

    /** Nothing was written: this worker no longer owns the job. Stop at once. */
    record FencedOff() implements FollowUps {}

    /**
     * None was inserted: follow-up {@code position} (1-based) has a payload over {@link
     * RowLimits#MAX_PAYLOAD_BYTES} as stored, or a kind over {@link RowLimits#MAX_KIND_BYTES}.
     */
    record TooLarge(long position, long payloadBytes, long kindBytes) implements FollowUps {
      /** Why the job fails, for its error. */
      public String message() {
        return payloadBytes > RowLimits.MAX_PAYLOAD_BYTES
            ? "Follow-up job " + position + " has a payload of " + payloadBytes + " bytes as stored; the limit is "
                + RowLimits.MAX_PAYLOAD_BYTES + " bytes. No follow-up was submitted. Keep large inputs in object"
                + " storage (e.g. S3) and pass a reference in the payload."
            : "Follow-up job " + position + " has a kind of " + kindBytes + " bytes; the limit is "
                + RowLimits.MAX_KIND_BYTES + " bytes. No follow-up was submitted.";
      }
    }
  }

  /**
   * Inserts follow-up jobs for the job's user, fenced like every worker write, all or none. Call it
   * in the same transaction as {@link #end}, so the follow-ups commit together with the success or
   * not at all.
   *
   * @param followUps a JSON array of {@code {"kind": …, "payload": {…}}}
   */
  public FollowUps addFollowUps(Database tx, long workerId, UUID token, long jobId, Json followUps) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("jobId", jobId)
            .and("followUps", followUps)
            .and("maxPayloadBytes", RowLimits.MAX_PAYLOAD_BYTES)
            .and("maxKindBytes", RowLimits.MAX_KIND_BYTES);
    Row r = tx.query(ADD_FOLLOW_UPS, params).get(0);
    if (r.longValue("fenced_in") == 0) {
      return new FollowUps.FencedOff();
    }
    if (r.get("too_large_n") != null) {
      return new FollowUps.TooLarge(r.longValue("too_large_n"), r.longValue("payload_bytes"), r.longValue("kind_bytes"));
    }
    return new FollowUps.Added();
  }

  /** What ending a job led to. */
  public sealed interface Ended {
    /** The chain window was open: this worker now runs {@code next}, keeping its slot and lease. */
    record Chained(AssignedJob next) implements Ended {}

    /** No job to chain (or the window closed): the worker is {@code draining} and must exit. */
    record Drained() implements Ended {}

    /** Nothing was written: this worker no longer owns the job. Stop at once. */
    record FencedOff() implements Ended {}

    /**
     * No job to chain yet, and the worker lingers ({@link QueueConfig#linger()}): it is still
     * {@code running} and must poll with {@link #takeNext} or {@link #drain}.
     */
    record Idle() implements Ended {}
  }

  /**
   * The CTEs {@link #END} and {@link #TAKE_NEXT} share, after a {@code fence} CTE that yields the
   * worker's id, its lane and whether its chain window is {@code open}: take the lane's next ready
   * job ({@link LaneTurns}: the oldest, or in a lane that takes turns by user, the oldest of the user
   * whose turn it is), skipping one another worker holds, start it on this worker, and record it.
   * Each statement then has its own {@code drained} CTE, and both end with {@link #ANSWER}.
   */
  private static final String TAKE_OLDEST_READY =
      """
      choose as (
        select f.lane, f.open and :fair and f.lane = 'shared' as fair,
               f.open and not (:fair and f.lane = 'shared') as fifo, true as room
        from fence f
      ),
      %s
      taken as (
        update build_job j set status = 'running', worker_id = :workerId, checkpoint = j.progress,
          attempts = j.attempts + 1, dispatched_at = t.now, started_at = t.now
        from ready, t
        where j.id = ready.id
        returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
      ),
      %s
      taken_event as (
        insert into build_job_event (job_id, type, detail, at)
        select n.id, 'dispatched',
               jsonb_build_object('message', :takenBy || ' ' || :workerId || ' (attempt ' || n.attempts || ')',
                                  'workerId', :workerId, 'attempt', n.attempts, 'chained', true),
               t.now
        from taken n, t
      ),
      """
          .formatted(LaneTurns.CHOOSE, LaneTurns.served("taken"));

  /** One row: whether the worker was fenced in, whether it drained, and the job it took, if any. */
  private static final String ANSWER =
      """
      -- One row carrying the taken job's payload: within RowLimits' job row, as START.
      select (select count(*) from fence) as fenced_in, (select count(*) from drained) as drained,
             taken.id, taken.user_id, taken.kind, taken.payload, taken.progress, taken.attempts, taken.cancel_requested
      from (select 1) as one left join taken on true
      """;

  /** Whether a worker's chain window is open: inside it, and far enough from its hard deadline. */
  private static final String WINDOW_OPEN =
      "t.now < %1$s.started_at + :chainWindowMs * interval '1 millisecond'"
          + " and t.now < %1$s.expires_at - :deadlineMarginMs * interval '1 millisecond'";

  private static final String END =
      """
      with recursive t as (select coalesce(:now::timestamptz, now()) as now),
      ended as (
        update build_job j set status = :status, error = :error, finished_at = t.now,
          progress = coalesce(:progress::integer, j.progress)
        from build_worker w, t
        where j.id = :jobId and j.worker_id = :workerId and j.status = 'running'
          and w.id = :workerId and w.token = :token::uuid and w.status = 'running' and w.expires_at > t.now
        returning j.id, j.lane, j.status, j.error, w.started_at, w.expires_at,
          -- The final log tail, saved by the row it belongs to (a function here runs only if fenced in).
          case when :logTail::text is not null then build_job_log_save(j.id, :logTail::text, :logBytes::bigint, :logLocation::text, t.now) end
      ),
      ended_event as (
        insert into build_job_event (job_id, type, detail, at)
        select e.id, e.status,
               jsonb_build_object('message', case when e.status = 'failed' then 'failed: ' || e.error else e.status end,
                                  'workerId', :workerId),
               t.now
        from ended e, t
      ),
      fence as (
        select :workerId::bigint as id, e.lane, %s as open from ended e, t
      ),
      %s
      drained as (
        -- A lingering worker stays running while its window is open and polls with TAKE_NEXT.
        update build_worker w set status = 'draining'
        from fence
        where w.id = fence.id and not exists (select 1 from taken) and not (:linger::boolean and fence.open)
        returning w.id
      )
      %s"""
          .formatted(WINDOW_OPEN.formatted("e"), TAKE_OLDEST_READY, ANSWER);

  /**
   * Ends the worker's job ({@code succeeded}, {@code failed} with an error, or {@code cancelled})
   * and, in the same statement, takes the next job of its lane (as dispatch would) if the chain window is
   * open, or else marks the worker {@code draining}. The slot stays held either way: only the
   * evidence of the worker's exit frees it. A failure's {@code error} is cut to {@link
   * RowLimits#MAX_ERROR_BYTES}.
   */
  public Ended end(Database tx, long workerId, UUID token, long jobId, JobStatus status, String error, LogWrite log) {
    return end(tx, workerId, token, jobId, status, error, null, log);
  }

  /**
   * As {@link #end(Database, long, UUID, long, JobStatus, String, LogWrite)}, also recording the
   * job's latest progress (null: unchanged), which a program may have reported after the last
   * check-in wrote it.
   */
  public Ended end(Database tx, long workerId, UUID token, long jobId, JobStatus status, String error,
      Integer progress, LogWrite log) {
    if (!status.finished()) {
      throw new IllegalArgumentException("a job ends succeeded, failed or cancelled, not " + status);
    }
    Params params =
        logParams(Params.of("now", clock.now(), "workerId", workerId, "token", token), log)
            .and("jobId", jobId)
            .and("status", status.sql())
            .and("progress", progress)
            .and("error", status == JobStatus.FAILED ? (error == null ? "failed" : RowLimits.boundedError(error)) : null)
            .and("chainWindowMs", config.chainWindow().toMillis())
            .and("deadlineMarginMs", config.deadlineMargin().toMillis())
            .and("linger", !config.linger().isZero())
            .and("takenBy", "chained onto worker")
            .and("fair", config.sharedOrder() == QueueConfig.SharedOrder.FAIR)
            .and("holdLane", false);
    return ended(tx.query(END, params).get(0));
  }

  /** What {@link #END} and {@link #TAKE_NEXT} answered, as the worker's next step. */
  private static Ended ended(Row r) {
    if (r.longValue("fenced_in") == 0) {
      return new Ended.FencedOff();
    }
    Optional<AssignedJob> next = assignedJob(r);
    if (next.isPresent()) {
      return new Ended.Chained(next.get());
    }
    return r.longValue("drained") == 1 ? new Ended.Drained() : new Ended.Idle();
  }

  public Ended end(long workerId, UUID token, long jobId, JobStatus status, String error) {
    return end(db, workerId, token, jobId, status, error, null);
  }

  public Ended end(long workerId, UUID token, long jobId, JobStatus status, String error, LogWrite log) {
    return end(db, workerId, token, jobId, status, error, log);
  }

  public Ended end(long workerId, UUID token, long jobId, JobStatus status, String error, Integer progress,
      LogWrite log) {
    return end(db, workerId, token, jobId, status, error, progress, log);
  }

  /** Runs worker writes that must commit together (follow-ups with their job's end). */
  public <T> T transactionally(java.util.function.Function<Database, T> work) {
    return db.transaction(work);
  }

  private static final String TAKE_NEXT =
      """
      with recursive t as (select coalesce(:now::timestamptz, now()) as now),
      fence as (
        select w.id, w.lane, %s as open
        from build_worker w, t
        where w.id = :workerId and w.token = :token::uuid and w.status = 'running' and w.expires_at > t.now
      ),
      %s
      drained as (
        update build_worker w set status = 'draining'
        from fence
        where w.id = fence.id and not fence.open
        returning w.id
      )
      %s"""
          .formatted(WINDOW_OPEN.formatted("w"), TAKE_OLDEST_READY, ANSWER);

  /**
   * For a lingering worker: takes the next ready job of its lane if its chain window and lease
   * still allow ({@link Ended.Chained}), finds none ({@link Ended.Idle}), or finds the window
   * closed and marks the worker {@code draining} ({@link Ended.Drained}), fenced like every write.
   */
  public Ended takeNext(long workerId, UUID token) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("chainWindowMs", config.chainWindow().toMillis())
            .and("deadlineMarginMs", config.deadlineMargin().toMillis())
            .and("takenBy", "taken by lingering worker")
            .and("fair", config.sharedOrder() == QueueConfig.SharedOrder.FAIR)
            .and("holdLane", false);
    return ended(db.query(TAKE_NEXT, params).get(0));
  }

  private static final String DRAIN =
      """
      update build_worker set status = 'draining'
      where id = :workerId and token = :token::uuid and status = 'running'
      """;

  /** For a worker that started without a job to run: {@code running → draining}. */
  public boolean drain(long workerId, UUID token) {
    return db.update(DRAIN, Params.of("workerId", workerId, "token", token)) == 1;
  }

  private static Optional<AssignedJob> assignedJob(Row r) {
    if (r.get("id") == null) {
      return Optional.empty();
    }
    return Optional.of(
        new AssignedJob(
            r.longValue("id"),
            r.string("user_id"),
            r.string("kind"),
            r.json("payload"),
            r.intValue("progress"),
            r.intValue("attempts"),
            r.bool("cancel_requested")));
  }
}
