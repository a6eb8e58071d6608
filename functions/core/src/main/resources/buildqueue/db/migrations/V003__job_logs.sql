-- Jobs that run a program have output. Its whole text goes to the worker's log (a file per job
-- locally, CloudWatch Logs on AWS, as `location` says), and the queue keeps only its last part, so
-- a user can read it beside the job and no row grows past what the RDS Data API returns (64 KB).
-- One row per job: a retried job's tail is its latest attempt's.
create table build_job_log (
  job_id      bigint primary key references build_job (id) on delete cascade,
  tail        text not null,
  total_bytes bigint not null check (total_bytes >= 0),
  location    text,
  updated_at  timestamptz not null
);

-- Saves a job's log tail. Every worker statement that writes one (check-in, end, interruption)
-- calls this, so the upsert is written once.
create function build_job_log_save(p_job_id bigint, p_tail text, p_total_bytes bigint, p_location text,
                                   p_at timestamptz) returns bigint
language sql volatile as $$
  insert into build_job_log (job_id, tail, total_bytes, location, updated_at)
  values (p_job_id, p_tail, p_total_bytes, p_location, p_at)
  on conflict (job_id) do update
    set tail = excluded.tail, total_bytes = excluded.total_bytes,
        location = coalesce(excluded.location, build_job_log.location), updated_at = excluded.updated_at
  returning job_id
$$;

-- The live worker a piece of termination evidence is about: the worker whose task it names, or the
-- worker it names by id when it names no task (the tick, about its own worker), names the recorded
-- task, or names a task not yet recorded and proves it with the worker's token. When a token is
-- given it must match. The exit of a running worker and the exit of one that never started are
-- different transitions, and both find their worker here.
create function build_worker_of_evidence(p_task_id text, p_worker_id bigint, p_token uuid)
returns table (worker_id bigint)
language sql stable as $$
  select w.id from build_worker w
  where w.status <> 'exited'
    and (p_token is null or w.token = p_token)
    and (w.task_id = p_task_id
         or (w.id = p_worker_id
             and (p_task_id is null or w.task_id = p_task_id or (w.task_id is null and p_token is not null))))
  order by w.id
  limit 1
$$;

-- What an interruption does to a job: its worker exited under it, or its program exited with a
-- code that asks to be retried. A job that moved forward on this attempt starts counting again, one
-- that did not counts one more. Up to p_max_recoveries it goes back to the queue (same id, so the
-- head of its lane, off its worker), beyond that it fails with p_error. A job whose owner asked to
-- cancel it ends cancelled. The answer is the job's new (status, recoveries, worker_id, error,
-- finished_at). Callers pass the job's columns from their UPDATE's SET, so under READ COMMITTED a
-- row changed by a concurrent cancel is decided again on its newest version.
create function build_job_interruption(p_cancel_requested boolean, p_progress integer, p_checkpoint integer,
                                       p_recoveries integer, p_max_recoveries integer, p_worker_id bigint,
                                       p_now timestamptz, p_error text)
returns table (status text, recoveries integer, worker_id bigint, error text, finished_at timestamptz)
language sql immutable as $$
  select d.status, d.n,
         case when d.status = 'queued' then null else p_worker_id end,
         case when d.status = 'failed' then p_error end,
         case when d.status = 'queued' then null else p_now end
  from (select case when p_cancel_requested then 'cancelled' when r.n <= p_max_recoveries then 'queued'
                    else 'failed' end as status,
               r.n
        from (select case when p_progress > p_checkpoint then 0 else p_recoveries + 1 end as n) r) d
$$;

-- The history entry of an interruption, written by both transitions that interrupt a job.
create function build_job_interruption_detail(p_status text, p_progress_from integer, p_progress_to integer,
                                              p_recoveries integer, p_error text, p_reason text)
returns jsonb
language sql immutable as $$
  select jsonb_build_object(
    'message',
    case p_status when 'failed' then 'failed: ' || p_error || ' ' else '' end
      || case p_status when 'cancelled' then 'cancelled when interrupted, stop reason ' || p_reason
         else 'interrupted: progress ' || p_progress_from || '→' || p_progress_to
              || ', recoveries ' || p_recoveries || ', stop reason ' || p_reason end,
    'progressFrom', p_progress_from, 'progressTo', p_progress_to, 'recoveries', p_recoveries,
    'stopReason', p_reason)
$$;

-- What a failed launch does to its job, which never ran: a launch failure more. A retryable failure
-- (a capacity shortage, a task that failed to start) puts the job back with a doubling backoff
-- until p_max_failures, then fails it saying how many tries and the last cause; a configuration
-- failure fails it at once. A job whose owner asked to cancel it ends cancelled. The answer is the
-- job's new (status, launch_failures, worker_id, not_before, error, finished_at), read, as for an
-- interruption, from the job's columns in the caller's SET.
create function build_job_launch_failure(p_cancel_requested boolean, p_launch_failures integer,
                                         p_retryable boolean, p_max_failures integer, p_backoff_ms bigint,
                                         p_worker_id bigint, p_now timestamptz, p_reason text)
returns table (status text, launch_failures integer, worker_id bigint, not_before timestamptz, error text,
               finished_at timestamptz)
language sql immutable as $$
  select d.status, d.n,
         case when d.status = 'queued' then null else p_worker_id end,
         case when d.status = 'queued'
              then p_now + p_backoff_ms * power(2, p_launch_failures) * interval '1 millisecond' end,
         case when d.status <> 'failed' then null
              when not p_retryable
                then 'Could not start a build worker: ' || p_reason || '. Check the worker configuration and retry.'
              else 'Could not start a build worker after ' || d.n || ' attempts: ' || p_reason || '. Retry later.' end,
         case when d.status = 'queued' then null else p_now end
  from (select p_launch_failures + 1 as n,
               case when p_cancel_requested then 'cancelled'
                    when p_retryable and p_launch_failures + 1 < p_max_failures then 'queued'
                    else 'failed' end as status) d
$$;
