-- build_worker_start as V006 defines it, but taking its rows in the order every transition takes
-- them (docs/architecture.md section 12): the job's row before the worker's. V006 updated the
-- worker row first and then its dispatched job. A statement that holds that job's row and then
-- waits for the worker's row (a chaining worker's or a dispatch's walk locks a row it read as
-- queued and keeps the lock when it finds the row dispatched; an ending worker then updates its
-- own worker row, a dispatch inserts into the slot's unique index) crossed it and deadlocked,
-- and an enqueue share-locking the lane's workers waited in the same cycle (LockOrderTest).
-- The job is locked in held, read in worker's from list, so before the worker row is locked.
-- Function bodies are written plainly: the migrator sends each as an escape string (SqlScript).
create or replace function build_worker_start(p_worker_id bigint, p_token uuid, p_deadline_margin_ms bigint,
                                              p_now timestamptz)
returns table (database_now timestamptz, expires_at timestamptz, id bigint, user_id text, kind text,
               payload jsonb, progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  held as (
    select j.id from build_job j
    join build_worker w on w.id = j.worker_id
    where j.worker_id = p_worker_id and j.status = 'dispatched' and w.token = p_token
    for update of j
  ),
  worker as (
    update build_worker w set status = 'running', started_at = t.now
    from t, (select count(*) from held) as job_locked
    where w.id = p_worker_id and w.token = p_token and w.status = 'launching'
      and w.expires_at - p_deadline_margin_ms * interval '1 millisecond' > t.now
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
    select job.id, 'started', jsonb_build_object('message', 'started on worker ' || p_worker_id, 'workerId', p_worker_id), t.now
    from job, t
  )
  -- One row carrying the job payload, within the job row of RowLimits (the payload at most
  -- MAX_PAYLOAD_BYTES as stored, checked when it was enqueued).
  select t.now, worker.expires_at,
         job.id, job.user_id, job.kind, job.payload, job.progress, job.attempts, job.cancel_requested
  from worker cross join t left join job on true;
end;
$$;
