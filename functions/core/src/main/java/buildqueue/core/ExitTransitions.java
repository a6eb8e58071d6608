package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * A worker is gone: the one transition that frees a slot. Called only on termination evidence
 * (a stop event, a check that says stopped, a local process confirmed gone) or by lease expiry for
 * a worker that cannot be checked.
 */
public final class ExitTransitions {
  /** The message a job fails with after four consecutive interruptions without progress. */
  public static final String REPEATED_EXIT_ERROR =
      "Build worker repeatedly exited without progress. Check worker logs and retry.";

  /** Interruptions without progress that are retried; the next one fails the job. */
  public static final int MAX_RECOVERIES = 3;

  private final Database db;
  private final QueueClock clock;

  public ExitTransitions(Database db, QueueClock clock) {
    this.db = db;
    this.clock = clock;
  }

  /**
   * The worker that exited, and what became of the job it had: {@code queued} again at the head of
   * its lane, {@code failed}, {@code cancelled}, or none. {@code slotHeld} is how long the worker
   * held its slot, from dispatch to this exit (what a slot costs, for metrics). The caller always
   * dispatches the lane next, in a fresh statement (see {@code BuildQueue#taskStopped}).
   */
  public record Exited(
      long workerId, String lane, Optional<Long> jobId, Optional<JobStatus> jobStatus, Duration slotHeld) {}

  private static final String EXITED =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      target as (
        select w.id from build_worker w
        where w.task_id = :taskId and w.status <> 'exited'
        union all
        -- By worker id: when the caller names no task (the tick, about its own worker), names the
        -- recorded task, or names a task not yet recorded and proves it with the worker's token.
        select w.id from build_worker w
        where w.id = :workerId and w.status <> 'exited'
          and (:taskId::text is null or w.task_id = :taskId or (w.task_id is null and :token::uuid is not null))
        limit 1
      ),
      worker as (
        update build_worker w set status = 'exited', exited_at = t.now, exit_reason = :reason
        from target, t
        where w.id = target.id and w.status <> 'exited'
          and (:token::uuid is null or w.token = :token::uuid)
        returning w.id, w.lane, (extract(epoch from w.exited_at - w.launched_at) * 1000)::bigint as slot_held_ms
      ),
      job as (
        update build_job j set
          recoveries = case when j.progress > j.checkpoint then 0 else j.recoveries + 1 end,
          status = case when j.cancel_requested then 'cancelled'
                        when (case when j.progress > j.checkpoint then 0 else j.recoveries + 1 end) <= :maxRecoveries
                          then 'queued'
                        else 'failed' end,
          worker_id = case when not j.cancel_requested
                             and (case when j.progress > j.checkpoint then 0 else j.recoveries + 1 end) <= :maxRecoveries
                           then null else j.worker_id end,
          error = case when not j.cancel_requested
                        and (case when j.progress > j.checkpoint then 0 else j.recoveries + 1 end) > :maxRecoveries
                       then :repeatedExitError end,
          finished_at = case when j.cancel_requested
                              or (case when j.progress > j.checkpoint then 0 else j.recoveries + 1 end) > :maxRecoveries
                             then t.now end
        from worker, t
        where j.worker_id = worker.id and j.status in ('dispatched', 'running')
        returning j.id, j.status, j.progress, j.checkpoint, j.recoveries, j.error
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select job.id,
               case job.status when 'queued' then 'interrupted' else job.status end,
               jsonb_build_object(
                 'message',
                 case job.status when 'failed' then 'failed: ' || job.error || ' ' else '' end
                   || case job.status when 'cancelled' then 'cancelled, its worker exited: ' || :reason
                      else 'interrupted: progress ' || job.checkpoint || '→' || job.progress
                           || ', recoveries ' || job.recoveries || ', stop reason ' || :reason end,
                 'progressFrom', job.checkpoint, 'progressTo', job.progress, 'recoveries', job.recoveries,
                 'stopReason', :reason),
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
   */
  public Optional<Exited> exited(String taskId, Long workerId, UUID token, String reason) {
    if (taskId == null && workerId == null) {
      throw new IllegalArgumentException("a worker exit needs a task id or a worker id");
    }
    Params params =
        Params.of("now", clock.now(), "taskId", taskId, "workerId", workerId)
            .and("token", token)
            .and("reason", reason)
            .and("maxRecoveries", MAX_RECOVERIES)
            .and("repeatedExitError", REPEATED_EXIT_ERROR);
    return db.queryOptional(EXITED, params).map(ExitTransitions::exitedOf);
  }

  private static Exited exitedOf(Row r) {
    String jobStatus = r.string("job_status");
    return new Exited(
        r.longValue("worker_id"),
        r.string("lane"),
        Optional.ofNullable(r.longValue("job_id")),
        Optional.ofNullable(jobStatus).map(JobStatus::of),
        Duration.ofMillis(r.longOr("slot_held_ms", 0)));
  }
}
