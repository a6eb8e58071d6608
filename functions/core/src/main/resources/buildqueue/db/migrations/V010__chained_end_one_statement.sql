-- build_worker_end for a lane that takes its oldest job (every dedicated lane, and the shared lane
-- when it does not take turns) in one statement again, as V006 had it: the job ends (fenced), the
-- lane's oldest ready job is chosen and taken in the same statement, and the worker drains when
-- it took none (docs/architecture.md section 12, figure 3 in BENCHMARKS.md).
-- V008 ran it in three steps for every lane: the end, then build_lane_chain, which called
-- build_lane_next_job. Each call of a PL/pgSQL function with SET clauses saves and restores its
-- settings (search_path is looked up again), starts an executor for each of its statements and
-- returns its rows through a tuplestore, copied once more by the caller's RETURN QUERY; for a
-- chained no-op job that was about a fifth of the PostgreSQL CPU of its end (StatementCosts).
-- Written inline, the choice runs with the statement's own snapshot, so the snapshot hazard V008
-- describes (a function choosing, in a newer snapshot, a job the calling statement's UPDATE cannot
-- see) does not arise: the job fifo_head locks is the one taken sees. Rows are taken in the order
-- of every transition (section 12): the ended job, the taken job, then the worker.
-- Both history rows are written by one INSERT (the ended job's first, as before): one part of the
-- statement fewer to build and open at each execution.
-- The shared lane taking turns (p_fair) keeps V008's path: the end here, then build_lane_chain,
-- whose choice walks the turns in a statement of its own.
create or replace function build_worker_end(p_worker_id bigint, p_token uuid, p_job_id bigint, p_status text,
                                            p_error text, p_progress integer, p_log_tail text, p_log_bytes bigint,
                                            p_log_location text, p_chain_window_ms bigint,
                                            p_deadline_margin_ms bigint, p_linger boolean, p_fair boolean,
                                            p_now timestamptz)
returns table (fenced_in bigint, drained bigint, id bigint, user_id text, kind text, payload jsonb,
               progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_lane text;
  v_open boolean;
  v_turns boolean;
begin
  with ended as (
    update build_job j set status = p_status, error = p_error, finished_at = v_now,
      progress = coalesce(p_progress, j.progress)
    from build_worker w
    where j.id = p_job_id and j.worker_id = p_worker_id and j.status = 'running'
      and w.id = p_worker_id and w.token = p_token and w.status = 'running' and w.expires_at > v_now
      and p_status in ('succeeded', 'failed', 'cancelled')
    returning j.id, j.lane, j.status, j.error,
      v_now < w.started_at + p_chain_window_ms * interval '1 millisecond'
        and v_now < w.expires_at - p_deadline_margin_ms * interval '1 millisecond' as open,
      p_fair and j.lane = 'shared' as turns,
      -- The final log tail, saved by the row it belongs to (a function here runs only if fenced in).
      case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, v_now) end
  ),
  -- The lane's oldest ready job, as build_lane_next_job chooses it for chaining (p_hold_lane false).
  fifo_head as (
    select q.id from build_job q
    where q.lane = (select e.lane from ended e where e.open and not e.turns) and q.status = 'queued'
      and (q.not_before is null or q.not_before <= v_now)
    order by q.id
    limit 1
    for update of q skip locked
  ),
  taken as (
    update build_job j set status = 'running', worker_id = p_worker_id, checkpoint = j.progress,
      attempts = j.attempts + 1, dispatched_at = v_now, started_at = v_now
    from fifo_head h
    where j.id = h.id
    returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
  ),
  history as (
    insert into build_job_event (job_id, type, detail, at)
    select e.id, e.status,
           jsonb_build_object('message', case when e.status = 'failed' then 'failed: ' || e.error else e.status end,
                              'workerId', p_worker_id),
           v_now
    from ended e
    union all
    select n.id, 'dispatched',
           jsonb_build_object('message', 'chained onto worker ' || p_worker_id || ' (attempt ' || n.attempts || ')',
                              'workerId', p_worker_id, 'attempt', n.attempts, 'chained', true),
           v_now
    from taken n
  ),
  -- A lingering worker stays running while its window is open and polls with take-next.
  drain as (
    update build_worker w set status = 'draining'
    from ended e
    where w.id = p_worker_id and not e.turns and not exists (select 1 from taken)
      and not (p_linger and e.open)
    returning w.id
  )
  select e.lane, e.open, e.turns, coalesce((select count(*) from drain), 0),
         n.id, n.user_id, n.kind, n.payload, n.progress, n.attempts, n.cancel_requested
  into v_lane, v_open, v_turns, drained, id, user_id, kind, payload, progress, attempts, cancel_requested
  from (select 1) as one left join ended e on true left join taken n on true;

  if v_turns then
    return query select * from build_lane_chain(p_worker_id, v_lane, v_open, p_fair, not (p_linger and v_open),
                                                  'chained onto worker ', v_now);
    return;
  end if;
  fenced_in := case when v_lane is null then 0 else 1 end;
  return next;
end;
$$;
