-- Fargate Spot with resume (issue 25). A worker records what it runs on, and a job counts its Spot
-- reclaims apart from its recoveries: a reclaim is the platform taking its capacity back, not the
-- job failing to move forward, so it never brings the job closer to REPEATED_EXIT_ERROR. After
-- ExitTransitions.MAX_RECLAIMS reclaims the job's next workers run on on-demand
-- (DispatchTransitions.chooseCapacity), which bounds the reclaims.
alter table build_worker add column if not exists capacity text not null default 'on-demand';

alter table build_worker add constraint build_worker_capacity_known
  check (capacity in ('on-demand', 'spot'));

alter table build_job add column if not exists reclaims integer not null default 0;

-- Whether a stop is a Spot reclaim. Stop evidence names its stop code first in its reason
-- (TaskState.SPOT_INTERRUPTION: "SpotInterruption: Your Spot Task was interrupted.", from the ECS
-- event, DescribeTasks or the local reclaim). The worker's own interruption when it is told to stop
-- (JobRun: "stopped with its worker: ...") cannot know why it got SIGTERM: on a Spot worker it is
-- taken for a reclaim, which at worst moves the job to on-demand after MAX_RECLAIMS, where stops
-- count as recoveries again.
create function build_stop_is_reclaim(p_capacity text, p_reason text)
returns boolean
language sql immutable as $$
  select coalesce(p_reason like 'SpotInterruption%'
                  or (p_capacity = 'spot' and p_reason like 'stopped with its worker%'), false)
$$;

-- build_job_interruption (V003), or for a reclaim: back to the queue (cancelled if its owner asked)
-- with its recoveries as they were. Same answer columns, so callers swap one for the other.
create function build_job_interruption_or_reclaim(p_reclaim boolean, p_cancel_requested boolean,
                                                  p_progress integer, p_checkpoint integer,
                                                  p_recoveries integer, p_max_recoveries integer,
                                                  p_worker_id bigint, p_now timestamptz, p_error text)
returns table (status text, recoveries integer, worker_id bigint, error text, finished_at timestamptz)
language sql immutable as $$
  select * from build_job_interruption(p_cancel_requested, p_progress, p_checkpoint, p_recoveries,
                                       p_max_recoveries, p_worker_id, p_now, p_error)
  where not p_reclaim
  union all
  select case when p_cancel_requested then 'cancelled' else 'queued' end, p_recoveries,
         case when p_cancel_requested then p_worker_id end, null::text,
         case when p_cancel_requested then p_now end
  where p_reclaim
$$;
revoke all on function build_stop_is_reclaim(text, text) from public;
revoke all on function build_job_interruption_or_reclaim(boolean, boolean, integer, integer, integer, integer, bigint,
                                                         timestamptz, text) from public;

-- build_exit_worker as in V009, changed only where the job is interrupted: the worker's CTE returns
-- its capacity, and the job's update calls build_job_interruption_or_reclaim and counts a reclaim.
create or replace function build_exit_worker(p_task_id text, p_worker_id bigint, p_token uuid, p_reason text,
                                  p_max_recoveries integer, p_repeated_exit_error text, p_now timestamptz)
returns table (worker_id bigint, lane text, slot_held_ms bigint, job_id bigint, job_status text, error text)
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  evidence as (select e.worker_id from build_worker_of_evidence(p_task_id, p_worker_id, p_token) e),
  held as (
    select j.id from build_job j, evidence e, build_worker v
    where j.worker_id = e.worker_id and j.status in ('dispatched', 'running')
      and v.id = e.worker_id and v.status in ('running', 'draining')
    for update of j
  ),
  worker as (
    -- A worker that never started has its own transition (build_exit_worker_before_start).
    update build_worker w set status = 'exited', exited_at = t.now, exit_reason = p_reason
    from evidence e, t, (select count(*) from held) as job_locked
    where w.id = e.worker_id and w.status in ('running', 'draining')
    returning w.id, w.lane, (extract(epoch from w.exited_at - w.launched_at) * 1000)::bigint as slot_held_ms,
              build_stop_is_reclaim(w.capacity, p_reason) as reclaimed
  ),
  job as (
    update build_job j set (status, recoveries, worker_id, error, finished_at) = (
      select * from build_job_interruption_or_reclaim(worker.reclaimed, j.cancel_requested, j.progress,
                                                      j.checkpoint, j.recoveries, p_max_recoveries,
                                                      j.worker_id, t.now, p_repeated_exit_error)),
      reclaims = j.reclaims + case when worker.reclaimed then 1 else 0 end
    from worker, t
    where j.worker_id = worker.id and j.status in ('dispatched', 'running')
    returning j.id, j.status, j.progress, j.checkpoint, j.recoveries, j.error
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select job.id, case job.status when 'queued' then 'interrupted' else job.status end,
           build_job_interruption_detail(job.status, job.checkpoint, job.progress, job.recoveries, job.error, p_reason),
           t.now
    from job, t
  )
  select worker.id, worker.lane, worker.slot_held_ms, job.id, job.status, null::text
  from worker left join job on true;
end;
$$;

-- build_worker_interrupt as in V006, changed only in the job's update: a worker told to stop on
-- Spot interrupts its job as a reclaim (build_stop_is_reclaim), counted in reclaims, not
-- recoveries. The progress the program wrote in its two-minute warning is kept either way.
create or replace function build_worker_interrupt(p_worker_id bigint, p_token uuid, p_job_id bigint, p_progress integer,
                                       p_reason text, p_max_recoveries integer, p_repeated_exit_error text,
                                       p_log_tail text, p_log_bytes bigint, p_log_location text,
                                       p_now timestamptz)
returns table (status text)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  job as (
    update build_job j set (status, recoveries, worker_id, error, finished_at, progress) = (
      select d.*, coalesce(p_progress, j.progress)
      from build_job_interruption_or_reclaim(build_stop_is_reclaim(w.capacity, p_reason), j.cancel_requested,
                                             coalesce(p_progress, j.progress), j.checkpoint, j.recoveries,
                                             p_max_recoveries, j.worker_id, t.now, p_repeated_exit_error) d),
      reclaims = j.reclaims + case when build_stop_is_reclaim(w.capacity, p_reason) then 1 else 0 end
    from build_worker w, t
    where j.id = p_job_id and j.worker_id = p_worker_id and j.status = 'running'
      and w.id = p_worker_id and w.token = p_token and w.status = 'running' and w.expires_at > t.now
    returning j.id, j.status, j.progress, j.checkpoint, j.recoveries, j.error,
      -- The log tail, saved by the row it belongs to (a function here runs only if fenced in).
      case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, t.now) end
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select job.id, case job.status when 'queued' then 'interrupted' else job.status end,
           build_job_interruption_detail(job.status, job.checkpoint, job.progress, job.recoveries, job.error, p_reason),
           t.now
    from job, t
  )
  select job.status from job;
end;
$$;
