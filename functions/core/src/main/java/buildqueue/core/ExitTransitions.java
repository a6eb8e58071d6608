package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * A worker is gone: the one transition that frees a slot. Called only on termination evidence (a
 * stop event, a check that says stopped, a local process confirmed gone) or by lease expiry for a
 * worker that cannot be checked.
 */
public final class ExitTransitions {
  /** The message a job fails with after four consecutive interruptions without progress. */
  public static final String REPEATED_EXIT_ERROR =
      "Build worker repeatedly exited without progress. Check worker logs and retry.";

  /** Interruptions without progress that are retried; the next one fails the job. */
  public static final int MAX_RECOVERIES = 3;

  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public ExitTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * The worker that exited, and what became of the job it had: {@code queued} again at the head of
   * its lane, {@code failed}, {@code cancelled}, or none. {@code slotHeld} is how long the worker
   * held its slot, from dispatch to this exit (what a slot costs, for metrics). The caller always
   * dispatches the lane next, in a fresh statement (see {@code BuildQueue#taskStopped}). {@code
   * neverStarted}: the worker exited before its start, so its job never ran and this counts as a
   * launch failure, not an interruption.
   */
  public record Exited(
      long workerId,
      String lane,
      Optional<Long> jobId,
      Optional<JobStatus> jobStatus,
      Duration slotHeld,
      boolean neverStarted) {}

  private static final String EXITED =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      evidence as (select e.worker_id from build_worker_of_evidence(:taskId::text, :workerId::bigint, :token::uuid) e),
      -- The job's row is locked before the worker's, the order every transition takes them in
      -- (held is read in worker's from list, so it runs before any worker row is locked).
      held as (
        select j.id from build_job j, evidence e, build_worker v
        where j.worker_id = e.worker_id and j.status in ('dispatched', 'running')
          and v.id = e.worker_id and v.status in ('running', 'draining')
        for update of j
      ),
      worker as (
        -- A worker that never started has its own transition (NOT_STARTED): its job never ran.
        update build_worker w set status = 'exited', exited_at = t.now, exit_reason = :reason
        from evidence e, t, (select count(*) from held) as job_locked
        where w.id = e.worker_id and w.status in ('running', 'draining')
        returning w.id, w.lane, (extract(epoch from w.exited_at - w.launched_at) * 1000)::bigint as slot_held_ms
      ),
      job as (
        update build_job j set (status, recoveries, worker_id, error, finished_at) = (
          select * from build_job_interruption(j.cancel_requested, j.progress, j.checkpoint, j.recoveries,
                                               :maxRecoveries::integer, j.worker_id, t.now, :repeatedExitError::text))
        from worker, t
        where j.worker_id = worker.id and j.status in ('dispatched', 'running')
        returning j.id, j.status, j.progress, j.checkpoint, j.recoveries, j.error
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select job.id, case job.status when 'queued' then 'interrupted' else job.status end,
               build_job_interruption_detail(job.status, job.checkpoint, job.progress, job.recoveries, job.error, :reason),
               t.now
        from job, t
      )
      select worker.id as worker_id, worker.lane, worker.slot_held_ms, job.id as job_id, job.status as job_status
      from worker left join job on true
      """;

  /**
   * Marks a worker {@code exited} and deals with its unfinished job: the recovery count resets if
   * the job made progress on this worker and grows by one if not; up to {@value #MAX_RECOVERIES}
   * the job goes back to {@code queued} (same id, so the head of its lane), beyond that it fails.
   * Duplicated or late evidence finds the worker already exited and changes nothing.
   *
   * @param taskId the platform's task id, or null
   * @param workerId the worker, or null when only the task id is known
   * @param token when given, the worker's token must match (a stop event carries it). An event
   *     naming a task that was never recorded for the worker must carry it: without it, the event
   *     may be about a task we never launched
   * @param reason why the worker is gone, as the evidence says; cut to {@link
   *     RowLimits#MAX_ERROR_BYTES}
   */
  public Optional<Exited> exited(String taskId, Long workerId, UUID token, String reason) {
    if (taskId == null && workerId == null) {
      throw new IllegalArgumentException("a worker exit needs a task id or a worker id");
    }
    Params params =
        Params.of("now", clock.now(), "taskId", taskId, "workerId", workerId)
            .and("token", token)
            .and("reason", RowLimits.boundedError(reason))
            .and("maxRecoveries", MAX_RECOVERIES)
            .and("repeatedExitError", REPEATED_EXIT_ERROR);
    return db.queryOptional(EXITED, params).map(r -> exitedOf(r, false));
  }

  private static final String NOT_STARTED =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      evidence as (select e.worker_id from build_worker_of_evidence(:taskId::text, :workerId::bigint, :token::uuid) e),
      -- The job before the worker, as in EXITED.
      held as (
        select j.id from build_job j, evidence e, build_worker v
        where j.worker_id = e.worker_id and j.status = 'dispatched' and v.id = e.worker_id and v.status = 'launching'
        for update of j
      ),
      worker as (
        update build_worker w set status = 'exited', exited_at = t.now, exit_reason = 'not started: ' || :reason
        from evidence e, t, (select count(*) from held) as job_locked
        where w.id = e.worker_id and w.status = 'launching'
        returning w.id, w.lane, (extract(epoch from w.exited_at - w.launched_at) * 1000)::bigint as slot_held_ms
      ),
      job as (
        update build_job j set (status, launch_failures, worker_id, not_before, error, finished_at) = (
          select * from build_job_launch_failure(j.cancel_requested, j.launch_failures, :retryable,
                                                 :maxFailures::integer, :backoffMs::bigint, j.worker_id, t.now,
                                                 :reason::text))
        from worker, t
        where j.worker_id = worker.id and j.status = 'dispatched'
        returning j.id, j.status, j.error, j.not_before
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select job.id, case job.status when 'queued' then 'launch-failed' else job.status end,
               jsonb_build_object('message',
                 case job.status
                   when 'queued' then 'worker not started (' || :reason || '), retrying after '
                                      || to_char(job.not_before at time zone 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS"Z"')
                   when 'cancelled' then 'cancelled, its worker never started'
                   else 'failed: ' || job.error end,
                 'reason', :reason),
               t.now
        from job, t
      )
      select worker.id as worker_id, worker.lane, worker.slot_held_ms, job.id as job_id, job.status as job_status,
             job.error
      from worker left join job on true
      """;

  /** A worker that never started is gone, and what became of its job, which never ran. */
  public record NotStarted(Exited exited, String jobError) {}

  /**
   * The launch definitely started nothing: the worker exits at once, freeing its slot, and its job
   * is queued again with backoff (capacity shortages, a bounded number of times) or fails with a
   * message the user can act on.
   */
  public Optional<NotStarted> launchFailed(WorkerLaunch launch, String reason, boolean retryable) {
    return notStarted(null, launch.workerId(), launch.token(), reason, retryable);
  }

  /**
   * Termination evidence for a worker that never started (it is still {@code launching}): a task
   * that failed to start (an image that cannot be pulled, a missing secret) or a process that died
   * before its first statement. Its job never ran, so this is a launch failure with backoff, not an
   * interruption, and the job's error quotes the real cause. Identifies the worker as {@link
   * #exited} does.
   */
  public Optional<NotStarted> exitedBeforeStart(
      String taskId, Long workerId, UUID token, String reason) {
    if (taskId == null && workerId == null) {
      throw new IllegalArgumentException("a worker exit needs a task id or a worker id");
    }
    return notStarted(taskId, workerId, token, reason, true);
  }

  /**
   * The platform's or the evidence's {@code reason} is cut to {@link RowLimits#MAX_ERROR_BYTES}.
   */
  private Optional<NotStarted> notStarted(
      String taskId, Long workerId, UUID token, String reason, boolean retryable) {
    Params params =
        Params.of("now", clock.now(), "taskId", taskId, "workerId", workerId)
            .and("token", token)
            .and("reason", RowLimits.boundedError(reason))
            .and("retryable", retryable)
            .and("maxFailures", config.maxLaunchFailures())
            .and("backoffMs", config.launchBackoff().toMillis());
    return db.queryOptional(NOT_STARTED, params)
        .map(r -> new NotStarted(exitedOf(r, true), r.string("error")));
  }

  private static Exited exitedOf(Row r, boolean neverStarted) {
    String jobStatus = r.string("job_status");
    return new Exited(
        r.longValue("worker_id"),
        r.string("lane"),
        Optional.ofNullable(r.longValue("job_id")),
        Optional.ofNullable(jobStatus).map(JobStatus::of),
        Duration.ofMillis(r.longOr("slot_held_ms", 0)),
        neverStarted);
  }
}
