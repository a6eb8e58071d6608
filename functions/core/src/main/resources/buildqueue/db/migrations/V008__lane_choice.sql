-- One source for the choice of a lane's next job (docs/architecture.md section 4.7 and the
-- decision in section 12). Until now the choice was written out three times: LaneTurns' fragments in
-- the dispatch statements, and build_worker_end and build_worker_take_next of V006 (V005's two
-- copies are history). Here it is written once, in build_lane_next_job, and dispatch and chaining
-- call it. Likewise a user joining the turns when a job enters the shared lane (enqueue, a lane
-- change, a follow-up): build_lane_turn_join.
--
-- The choice is always its own statement, and the job is taken by a later one. A function called
-- inside a statement runs its queries with snapshots of its own, newer than the calling
-- statement's (and it sees what that statement had written when the call came, not what it writes
-- after): a job enqueued in between could be chosen and locked by the function and yet be missing
-- to the statement's UPDATE, which would then take nothing (and a dispatch insert a worker with no
-- job). So the dispatch is a function too, build_lane_dispatch, whose statements run one after the
-- other: find a free slot, choose, then insert the worker and take the job; build_worker_end and
-- build_worker_take_next end or fence, choose, then take. Each is still one statement for its
-- caller (the Data API runs one per call).
--
-- Bodies are PL/pgSQL with a generic plan, as V006's (section 12): each statement is planned once
-- per connection. The helpers run as their caller: the worker's functions are security definer,
-- so the choice runs as the owner there; the worker role itself cannot call them.

-- The next job of lane p_lane, locked, or null: in a lane that takes turns by user (p_fair), a
-- retried job first, else the oldest ready job of the waiting user with the smallest turn (that
-- user's turn becomes the newest served), else the lane's oldest ready job; in any other lane its
-- oldest queued job. p_hold_lane (dispatch): a head that is backing off after a launch failure
-- holds the lane, so the jobs behind it wait too; chaining passes it (false) and takes the oldest
-- ready job past it. The caller must take the job it gets in this transaction: its user's turn is
-- already served.
-- Concurrency (READ COMMITTED) is LaneTurns' class comment: each turn row the walk reads is locked
-- skip locked, so two choosers never serve one user at once; marking a user idle is guarded by the
-- version the walk read without a lock, so an enqueue that committed meanwhile keeps it waiting.
create function build_lane_next_job(p_lane text, p_fair boolean, p_hold_lane boolean, p_now timestamptz)
returns bigint
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_job bigint;
  v_not_before timestamptz;
begin
  if not p_fair then
    select q.id, q.not_before into v_job, v_not_before from build_job q
    where q.lane = p_lane and q.status = 'queued'
      and (p_hold_lane or q.not_before is null or q.not_before <= v_now)
    order by q.id
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
             order by q.id limit 1 for update of q skip locked),
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
            order by q.id limit 1 for update of q skip locked),
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
    order by q.id
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
revoke all on function build_lane_next_job(text, boolean, boolean, timestamptz) from public;

-- A user with a job entering the shared lane (p_first_job_id: the first of them) waits for its
-- turn: a new user's turn is placed by its first job (below every served turn, newcomers in the
-- order they came); a known user keeps its turn. Bumping version tells a concurrent walk not to
-- mark the user idle. Other lanes take no turns: nothing happens.
create function build_lane_turn_join(p_lane text, p_user_id text, p_first_job_id bigint) returns void
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
begin
  if p_lane = 'shared' then
    insert into build_lane_turn (lane, user_id, turn)
    values (p_lane, p_user_id, p_first_job_id - 4611686018427387904)
    on conflict (lane, user_id) do update set waiting = true, version = build_lane_turn.version + 1;
  end if;
end;
$$;
revoke all on function build_lane_turn_join(text, text, bigint) from public;

-- The dispatch (DispatchTransitions.DISPATCH): if lane p_lane has a free slot of its p_capacity and
-- a next job (build_lane_next_job, holding the lane behind a head that is backing off), a new
-- launching worker with token p_token and a lease of p_lease_ms takes the slot and the job becomes
-- its dispatched job. No row when there is nothing to do; a unique violation when a concurrent
-- dispatcher took the slot first. more_to_do: another slot was free and another job queued.
create function build_lane_dispatch(p_lane text, p_capacity integer, p_fair boolean, p_token uuid,
                                    p_lease_ms bigint, p_now timestamptz)
returns table (job_id bigint, worker_id bigint, slot text, expires_at timestamptz, more_to_do boolean)
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_slot text;
  v_job bigint;
begin
  select p_lane || '#' || n into v_slot
  from generate_series(1, p_capacity) n
  where not exists (select 1 from build_worker w where w.slot = p_lane || '#' || n and w.status <> 'exited')
  order by n
  limit 1;
  if v_slot is null then
    return;
  end if;
  v_job := build_lane_next_job(p_lane, p_fair, true, v_now);
  if v_job is null then
    return;
  end if;

  return query
  with worker as (
    insert into build_worker (lane, slot, token, status, expires_at, launched_at)
    values (p_lane, v_slot, p_token, 'launching', v_now + p_lease_ms * interval '1 millisecond', v_now)
    returning id, slot, expires_at
  ),
  job as (
    update build_job j set status = 'dispatched', worker_id = worker.id, checkpoint = j.progress,
      attempts = j.attempts + 1, dispatched_at = v_now, not_before = null
    from worker
    where j.id = v_job
    returning j.id, j.attempts, worker.id as worker_id, worker.slot, worker.expires_at
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select job.id, 'dispatched',
           jsonb_build_object('message', 'dispatched to worker ' || job.worker_id || ' in slot ' || job.slot
                                || ' (attempt ' || job.attempts || ')',
                              'workerId', job.worker_id, 'slot', job.slot, 'attempt', job.attempts),
           v_now
    from job
  )
  select job.id, job.worker_id, job.slot, job.expires_at,
         (select count(*) from generate_series(1, p_capacity) n
          where not exists (
            select 1 from build_worker w where w.slot = p_lane || '#' || n and w.status <> 'exited')) > 1
         and exists (select 1 from build_job q where q.lane = p_lane and q.status = 'queued' and q.id <> job.id)
  from job;
end;
$$;
revoke all on function build_lane_dispatch(text, integer, boolean, uuid, bigint, timestamptz) from public;

-- The chaining half of build_worker_end and build_worker_take_next, and the row they answer. The
-- worker p_worker_id, fenced in by its caller in lane p_lane (null: fenced off, nothing happens),
-- takes the lane's next job if its chain window is open (p_open): chosen by build_lane_next_job in
-- a statement of its own, then taken straight to running (a chained job skips dispatched, section
-- 12). With no job taken and p_may_drain, the worker goes draining. The taken job's payload is
-- within the job row of RowLimits, as build_worker_start's.
create function build_lane_chain(p_worker_id bigint, p_lane text, p_open boolean, p_fair boolean,
                                   p_may_drain boolean, p_taken_by text, p_now timestamptz)
returns table (fenced_in bigint, drained bigint, id bigint, user_id text, kind text, payload jsonb,
               progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_next bigint;
begin
  if p_lane is null then
    return query select 0::bigint, 0::bigint, null::bigint, null::text, null::text, null::jsonb, null::integer,
                        null::integer, null::boolean;
    return;
  end if;
  if p_open then
    v_next := build_lane_next_job(p_lane, p_fair and p_lane = 'shared', false, p_now);
  end if;

  return query
  with taken as (
    update build_job j set status = 'running', worker_id = p_worker_id, checkpoint = j.progress,
      attempts = j.attempts + 1, dispatched_at = p_now, started_at = p_now
    where j.id = v_next
    returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
  ),
  taken_event as (
    insert into build_job_event (job_id, type, detail, at)
    select n.id, 'dispatched',
           jsonb_build_object('message', p_taken_by || p_worker_id || ' (attempt ' || n.attempts || ')',
                              'workerId', p_worker_id, 'attempt', n.attempts, 'chained', true),
           p_now
    from taken n
  ),
  drained as (
    update build_worker w set status = 'draining'
    where w.id = p_worker_id and p_may_drain and not exists (select 1 from taken)
    returning w.id
  )
  select 1::bigint, (select count(*) from drained),
         taken.id, taken.user_id, taken.kind, taken.payload, taken.progress, taken.attempts, taken.cancel_requested
  from (select 1) as one left join taken on true;
end;
$$;
revoke all on function build_lane_chain(bigint, text, boolean, boolean, boolean, text, timestamptz) from public;

-- build_worker_add_follow_ups as V006 defines it, its user joining the turns by build_lane_turn_join.
create or replace function build_worker_add_follow_ups(p_worker_id bigint, p_token uuid, p_job_id bigint,
                                                       p_follow_ups jsonb, p_now timestamptz)
returns table (fenced_in bigint, inserted bigint, too_large_n bigint, payload_bytes integer, kind_bytes integer)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  fence as (
    select j.user_id from build_job j
    join build_worker w on w.id = j.worker_id, t
    where j.id = p_job_id and j.status = 'running'
      and w.id = p_worker_id and w.token = p_token and w.status = 'running' and w.expires_at > t.now
  ),
  follow_up as (
    select f.kind, coalesce(f.payload, '{}'::jsonb) as payload, f.n
    from rows from (jsonb_to_recordset(p_follow_ups) as (kind text, payload jsonb)) with ordinality as f(kind, payload, n)
  ),
  -- A follow-up whose worker could not read it back in one Data API row, as POST /jobs refuses
  -- one, and then none of them is inserted.
  too_large as (
    select u.n, octet_length(u.payload::text) as payload_bytes, octet_length(u.kind) as kind_bytes
    from follow_up u
    where octet_length(u.payload::text) > 55000 or octet_length(u.kind) > 200
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
  joined as (
    select build_lane_turn_join(q.lane, q.user_id, min(q.id)) from inserted q group by q.lane, q.user_id
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select i.id, 'enqueued',
           jsonb_build_object('message', 'enqueued in lane ' || i.lane || ' as a follow-up of job ' || p_job_id,
                              'lane', i.lane, 'followUpOf', p_job_id),
           t.now
    from inserted i, t
  )
  select (select count(*) from fence), (select count(*) from inserted),
         too_large.n, too_large.payload_bytes, too_large.kind_bytes
  from (select 1) as one left join too_large on true
    cross join (select count(*) from joined) as turn_joined;
end;
$$;

-- build_worker_end as V006 defines it, in three statements: the job ends (fenced), the lane's next
-- job is chosen (build_lane_next_job) if the chain window is open, and the worker takes it or, with
-- none, goes draining or stays running to linger (build_lane_chain). A lane that takes its oldest job runs the
-- choice's FIFO branch alone, as V006's second statement did.
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
begin
  with ended as (
    update build_job j set status = p_status, error = p_error, finished_at = v_now,
      progress = coalesce(p_progress, j.progress)
    from build_worker w
    where j.id = p_job_id and j.worker_id = p_worker_id and j.status = 'running'
      and w.id = p_worker_id and w.token = p_token and w.status = 'running' and w.expires_at > v_now
      and p_status in ('succeeded', 'failed', 'cancelled')
    returning j.id, j.lane, j.status, j.error, w.started_at, w.expires_at,
      -- The final log tail, saved by the row it belongs to (a function here runs only if fenced in).
      case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, v_now) end
  ),
  ended_event as (
    insert into build_job_event (job_id, type, detail, at)
    select e.id, e.status,
           jsonb_build_object('message', case when e.status = 'failed' then 'failed: ' || e.error else e.status end,
                              'workerId', p_worker_id),
           v_now
    from ended e
  )
  select e.lane,
         v_now < e.started_at + p_chain_window_ms * interval '1 millisecond'
           and v_now < e.expires_at - p_deadline_margin_ms * interval '1 millisecond'
  into v_lane, v_open
  from ended e;
  -- A lingering worker stays running while its window is open and polls with take-next.
  return query select * from build_lane_chain(p_worker_id, v_lane, v_open, p_fair, not (p_linger and v_open),
                                                'chained onto worker ', v_now);
end;
$$;

-- build_worker_take_next as V006 defines it, in the same three steps (build_lane_chain): the worker is fenced (its
-- token, running, within its lease), the next job chosen if its window is open, then taken, or the
-- worker goes draining once the window has closed.
create or replace function build_worker_take_next(p_worker_id bigint, p_token uuid, p_chain_window_ms bigint,
                                                  p_deadline_margin_ms bigint, p_fair boolean, p_now timestamptz)
returns table (fenced_in bigint, drained bigint, id bigint, user_id text, kind text, payload jsonb,
               progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_lane text;
  v_open boolean;
begin
  select w.lane,
         v_now < w.started_at + p_chain_window_ms * interval '1 millisecond'
           and v_now < w.expires_at - p_deadline_margin_ms * interval '1 millisecond'
  into v_lane, v_open
  from build_worker w
  where w.id = p_worker_id and w.token = p_token and w.status = 'running' and w.expires_at > v_now;
  return query select * from build_lane_chain(p_worker_id, v_lane, v_open, p_fair, not v_open,
                                                'taken by lingering worker ', v_now);
end;
$$;
