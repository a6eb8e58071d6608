-- The compute ledger and budgets (docs/architecture.md section 4.8): what each worker was billed,
-- each job's share of it, and a per-user budget the enqueue checks.

-- What the worker was billed, recorded by its exit (build_ledger_bill): null until it exited.
-- billed_ms is whole seconds, at least a minute, on Fargate; the child's wall time locally.
alter table build_worker add column billed_ms bigint check (billed_ms >= 0);
alter table build_worker add column vcpu_milli integer check (vcpu_milli > 0);
alter table build_worker add column memory_mb integer check (memory_mb > 0);

-- A user's budget per period (QueueConfig.budgetPeriod) in vCPU-seconds; null: the queue's default.
alter table build_user add column budget_vcpu_seconds bigint check (budget_vcpu_seconds >= 0);

-- Each job's share of each worker that ran it (a job interrupted and run again has one row per
-- worker). The shares of one worker add up to its billed_ms exactly. user_id and at (the worker's
-- exit) are copied here so a user's usage in a period reads this table's index alone. No foreign
-- keys: the housekeeping deletes finished jobs and exited workers after the retention (7 days by
-- default), and a month's usage and budget must outlive them.
create table build_job_cost (
  job_id     bigint not null,
  worker_id  bigint not null,
  user_id    text not null,
  at         timestamptz not null,
  held_ms    bigint not null check (held_ms >= 0),
  billed_ms  bigint not null check (billed_ms >= 0),
  vcpu_milli integer not null,
  memory_mb  integer not null,
  capacity   text not null,
  primary key (job_id, worker_id)
);
create index build_job_cost_user on build_job_cost (user_id, at) include (billed_ms, vcpu_milli, memory_mb, capacity);
create index build_job_cost_at on build_job_cost (at);

-- The jobs a worker was given: its dispatch events (a first dispatch and a chained one both name
-- the worker), found by index at the worker's exit instead of by a scan of the history.
create index build_job_event_dispatched_to on build_job_event (((detail ->> 'workerId')::bigint))
  where type = 'dispatched';

-- Records what exited worker p_worker_id was billed and shares it among the jobs it was given;
-- does nothing for a worker not exited or already billed (a duplicate stop). Called by the exit's
-- own statement (ExitTransitions.STOPPED and NOT_STARTED), after the exit: a statement of its own
-- inside it, so it sees the exit's row.
--
-- Billed: from p_billed_from (the task's pull start, else its creation; null: the worker's launch)
-- to p_billed_to (the task's stop; null, or later than the exit: the exit), rounded up to
-- p_round_ms, at least p_min_ms.
--
-- The share (docs/architecture.md section 4.8): each job held the worker from its dispatch to it
-- until the job's next event that took it off (an end, an interruption, a launch failure), or to
-- the exit. The worker's billed time B is split pro rata to the time each job held it, which is
-- each job's held time plus the same fraction of the start-up and idle time; when no job held it
-- for any time, equally. Whole milliseconds: each job gets floor(B * held / total held), and the
-- remainder (fewer milliseconds than jobs) goes one each to the jobs in id order, so the shares
-- add up to B exactly and the same rows always give the same split.
create function build_ledger_bill(p_worker_id bigint, p_billed_from timestamptz, p_billed_to timestamptz, p_round_ms bigint,
                                  p_min_ms bigint, p_vcpu_milli integer, p_memory_mb integer)
returns bigint
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_billed bigint;
  v_exited_at timestamptz;
begin
  if p_worker_id is null then
    return null;
  end if;
  update build_worker w set
    -- (least() skips nulls, so each bound is taken only when given.)
    billed_ms = greatest(p_min_ms, ceil(greatest(0, extract(epoch from
                  case when p_billed_to is null then w.exited_at else least(p_billed_to, w.exited_at) end
                  - case when p_billed_from is null then w.launched_at else least(p_billed_from, w.exited_at) end)
                  * 1000) / p_round_ms) * p_round_ms)::bigint,
    vcpu_milli = p_vcpu_milli, memory_mb = p_memory_mb
  where w.id = p_worker_id and w.status = 'exited' and w.billed_ms is null
  returning w.billed_ms, w.exited_at into v_billed, v_exited_at;
  if not found then
    return null;
  end if;
  with held as (
    select d.job_id,
           sum(greatest(0, (extract(epoch from coalesce(
             (select min(x.at) from build_job_event x
              where x.job_id = d.job_id and x.id > d.id
                and x.type in ('succeeded', 'failed', 'cancelled', 'interrupted', 'launch-failed', 'dispatched')),
             v_exited_at) - d.at) * 1000)::bigint))::bigint as held_ms
    from build_job_event d
    where ((d.detail ->> 'workerId')::bigint) = p_worker_id and d.type = 'dispatched'
    group by d.job_id
  ),
  totals as (select sum(h.held_ms) as held, count(*) as jobs from held h),
  floor_share as (
    select h.job_id, h.held_ms,
           case when t.held > 0 then (v_billed::numeric * h.held_ms / t.held)::numeric
                else v_billed::numeric / t.jobs end as exact,
           row_number() over (order by h.job_id) as n
    from held h, totals t
  ),
  shares as (
    select f.job_id, f.held_ms, floor(f.exact)::bigint as base, f.n from floor_share f
  ),
  remainder as (select v_billed - coalesce(sum(s.base), 0) as r from shares s)
  insert into build_job_cost (job_id, worker_id, user_id, at, held_ms, billed_ms, vcpu_milli, memory_mb, capacity)
  select s.job_id, p_worker_id, j.user_id, v_exited_at, s.held_ms,
         s.base + case when s.n <= r.r then 1 else 0 end, p_vcpu_milli, p_memory_mb, w.capacity
  from shares s cross join remainder r join build_job j on j.id = s.job_id
    join build_worker w on w.id = p_worker_id;
  -- The job's history says what it was billed on this worker; published like any event, it is
  -- the final word on the job's cost for that worker (a job's end event comes before its worker's stop).
  insert into build_job_event (job_id, type, detail, at)
  select c.job_id, 'cost',
         jsonb_build_object('message', 'billed ' || round(c.billed_ms / 1000.0, 3) || ' s of worker ' || c.worker_id
                              || ' (' || c.capacity || ', ' || round(c.vcpu_milli / 1000.0, 3) || ' vCPU, '
                              || c.memory_mb || ' MiB)',
                            'workerId', c.worker_id, 'billedMs', c.billed_ms, 'vcpuMilli', c.vcpu_milli,
                            'memoryMb', c.memory_mb, 'capacity', c.capacity),
         v_exited_at
  from build_job_cost c where c.worker_id = p_worker_id;
  return v_billed;
end;
$$;
revoke all on function build_ledger_bill(bigint, timestamptz, timestamptz, bigint, bigint, integer, integer) from public;
