-- Priorities within a user, an admin's "run next", and pausing a lane (issue 27, docs/architecture.md
-- section 4.7 and section 12).
--
-- A job's priority orders its user's own queued jobs: -1 low, 0 normal (the default), 1 high. The
-- turns between users are unchanged: the choice still picks the user whose turn it is, then takes
-- that user's highest-priority ready job (the oldest among equals) instead of the oldest. A lane
-- without turns (a dedicated lane, which holds one user's jobs; the shared lane in fifo mode) takes
-- its jobs by priority, then age. Priority 2 is an admin's "run next": such a job is the head of
-- its lane, taken before a retried job and before the turns (the oldest first when there are
-- several), and taking it serves nobody's turn.
--
-- A paused lane (a row in build_lane_pause) starts nothing: the choice finds no job in it, so
-- neither the dispatch nor chaining takes one; running jobs finish, and enqueue still queues.
--
-- Two functions are replaced, each with the smallest change:
-- - build_lane_next_job (V008): returns null in a paused lane; takes the lane's oldest ready
--   priority-2 job first; orders a user's jobs in the walk, the FIFO branch and the fallback by
--   priority desc, id (was id).
-- - build_worker_end (V010): its inline FIFO head (the choice's FIFO branch for chaining, held to it
--   by LaneTurnsTest) takes no job in a paused lane and orders by priority desc, id (was id).
alter table build_job add column priority smallint not null default 0 check (priority between -1 and 2);

create table build_lane_pause (
  lane      text primary key,
  paused_at timestamptz not null,
  paused_by text not null
);

-- "The next job of user U in lane L" (the walk) and "the next job of lane L" (a lane without
-- turns, run next): the order is priority, then age, so neither build_job_user_waiting nor
-- build_job_queued (both by id) can serve it without a sort of every queued job.
create index build_job_user_order on build_job (user_id, lane, priority desc, id) where status = 'queued';
create index build_job_lane_order on build_job (lane, priority desc, id) where status = 'queued';

-- build_lane_next_job as V008 defines it: a paused lane has no next job; a job to run next goes
-- first; a user's jobs (and a lane's without turns) by priority, then age.
create or replace function build_lane_next_job(p_lane text, p_fair boolean, p_hold_lane boolean, p_now timestamptz)
returns bigint
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_job bigint;
  v_not_before timestamptz;
begin
  if exists (select 1 from build_lane_pause p where p.lane = p_lane) then
    return null;
  end if;
  -- A job an admin moved to the head of the lane (priority 2): before retries and turns.
  select q.id into v_job from build_job q
  where q.lane = p_lane and q.status = 'queued' and q.priority = 2
    and (q.not_before is null or q.not_before <= v_now)
  order by q.priority desc, q.id
  limit 1
  for update of q skip locked;
  if v_job is not null then
    return v_job;
  end if;

  if not p_fair then
    select q.id, q.not_before into v_job, v_not_before from build_job q
    where q.lane = p_lane and q.status = 'queued'
      and (p_hold_lane or q.not_before is null or q.not_before <= v_now)
    order by q.priority desc, q.id
    limit 1
    for update of q skip locked;
    return case when v_not_before is null or v_not_before <= v_now then v_job end;
  end if;

  with recursive retry_head as (
    select q.id, q.not_before from build_job q
    where q.lane = p_lane and q.status = 'queued' and q.attempts > 0
      and (p_hold_lane or q.not_before is null or q.not_before <= v_now)
    order by q.id
    limit 1
    for update of q skip locked
  ),
  -- Waiting users in turn order, each with its oldest ready queued job (locked) and whether it
  -- has any job in the lane at all: the walk goes on only past users without a job to take.
  walk(n, user_id, turn, version, job_id, active) as (
    (select 1, u.user_id, u.turn,
            (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
            (select q.id from build_job q
             where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued'
               and (q.not_before is null or q.not_before <= v_now)
             order by q.priority desc, q.id limit 1 for update of q skip locked),
            exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                    and a.status in ('queued', 'dispatched', 'running'))
     from (select u.lane, u.user_id, u.turn from build_lane_turn u
           where u.lane = p_lane and u.waiting and not exists (select 1 from retry_head)
           order by u.turn, u.user_id
           limit 1
           for update of u skip locked) u)
    union all
    select w.n + 1, u.user_id, u.turn,
           (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
           (select q.id from build_job q
            where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued'
              and (q.not_before is null or q.not_before <= v_now)
            order by q.priority desc, q.id limit 1 for update of q skip locked),
           exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                   and a.status in ('queued', 'dispatched', 'running'))
    from walk w
    cross join lateral (
      select u.lane, u.user_id, u.turn from build_lane_turn u
      where u.lane = p_lane and u.waiting and (u.turn, u.user_id) > (w.turn, w.user_id)
      order by u.turn, u.user_id
      limit 1
      for update of u skip locked) u
    where w.job_id is null
  ),
  fair_next as (select w.user_id, w.job_id from walk w where w.job_id is not null),
  idled as (
    update build_lane_turn u set waiting = false
    from walk w
    where u.lane = p_lane and u.user_id = w.user_id and w.job_id is null and not w.active
      and u.version = w.version
    returning u.user_id
  ),
  -- The chosen user's turn becomes the newest served (the walk holds its row: this never waits).
  served as (
    update build_lane_turn u set turn = nextval('build_lane_turn_served')
    from fair_next f
    where u.lane = p_lane and u.user_id = f.user_id
    returning u.user_id
  ),
  fallback as (
    select q.id from build_job q
    where q.lane = p_lane and q.status = 'queued'
      and (q.not_before is null or q.not_before <= v_now)
      and not exists (select 1 from retry_head) and not exists (select 1 from fair_next)
    order by q.priority desc, q.id
    limit 1
    for update of q skip locked
  ),
  head as (
    select id, not_before from retry_head
    union all select job_id, null from fair_next
    union all select id, null from fallback
  )
  select h.id into v_job from head h where h.not_before is null or h.not_before <= v_now;
  return v_job;
end;
$$;

-- build_worker_end as V010 defines it; its inline FIFO head (the choice's FIFO branch for chaining)
-- takes nothing in a paused lane and takes the lane's jobs by priority, then age.
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
  -- The lane's next ready job, as build_lane_next_job chooses it for chaining (p_hold_lane false)
  -- in a lane without turns: none while the lane is paused, else by priority, then age.
  fifo_head as (
    select q.id from build_job q
    where q.lane = (select e.lane from ended e where e.open and not e.turns
                      and not exists (select 1 from build_lane_pause p where p.lane = e.lane))
      and q.status = 'queued'
      and (q.not_before is null or q.not_before <= v_now)
    order by q.priority desc, q.id
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
