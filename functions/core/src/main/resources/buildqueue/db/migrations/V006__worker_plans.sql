-- The worker's functions of V005 again, with the same statements, in PL/pgSQL rather than SQL
-- (docs/architecture.md section 12). PostgreSQL never inlines a security definer function, and it
-- parses and plans the body of a SQL function that is not inlined at every call: for
-- build_worker_end, planning took five times as long as execution (2.9 ms against 0.6 ms per
-- chained job with one user on the benchmark machine, StatementCosts), and PostgreSQL spent 4.7 ms
-- of CPU per chained job, 0.9 ms once the plan is kept. PL/pgSQL keeps each statement's plan
-- for the life of the connection (and plans again when a table's statistics or definition change).
-- force_generic_plan makes that plan the generic one from the first call: every choice in these
-- statements reads its lane and user from a value the statement computes at run time, so a plan
-- made for particular arguments could not be better, and planning five custom plans first (the
-- default) would only delay the saving. #variable_conflict use_column: the bodies name columns
-- (id, user_id, progress, ...) that are also the names of the functions' result columns, which
-- are variables in PL/pgSQL; the column is always what is meant. Each body is written as an escape
-- string, as V005 wrote its plpgsql, so that no semicolon stands before a statement's end
-- (StatementTextTest): \073 is the one that ends the statement inside, and quotes are doubled.
-- CREATE OR REPLACE keeps each function's owner and grants.

-- build_worker_start, as in V005.
create or replace function build_worker_start(p_worker_id bigint, p_token uuid, p_deadline_margin_ms bigint,
                                   p_now timestamptz)
returns table (database_now timestamptz, expires_at timestamptz, id bigint, user_id text, kind text,
               payload jsonb, progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as E'#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  worker as (
    update build_worker w set status = ''running'', started_at = t.now
    from t
    where w.id = p_worker_id and w.token = p_token and w.status = ''launching''
      and w.expires_at - p_deadline_margin_ms * interval ''1 millisecond'' > t.now
    returning w.id, w.expires_at
  ),
  job as (
    update build_job j set status = ''running'', started_at = t.now
    from worker, t
    where j.worker_id = worker.id and j.status = ''dispatched''
    returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select job.id, ''started'', jsonb_build_object(''message'', ''started on worker '' || p_worker_id, ''workerId'', p_worker_id), t.now
    from job, t
  )
  -- One row carrying the job payload, within the job row of RowLimits (the payload at most
  -- MAX_PAYLOAD_BYTES as stored, checked when it was enqueued).
  select t.now, worker.expires_at,
         job.id, job.user_id, job.kind, job.payload, job.progress, job.attempts, job.cancel_requested
  from worker cross join t left join job on true\073
end';

-- build_worker_check_in, as in V005.
create or replace function build_worker_check_in(p_worker_id bigint, p_token uuid, p_job_id bigint, p_progress integer,
                                      p_log_tail text, p_log_bytes bigint, p_log_location text, p_now timestamptz)
returns table (cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as E'#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  job as (
    update build_job j set progress = coalesce(p_progress, j.progress)
    from build_worker w, t
    where j.id = p_job_id and j.worker_id = p_worker_id and j.status = ''running''
      and w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
    returning j.id, j.cancel_requested,
      -- The log tail, saved by the row it belongs to (a function here runs only if fenced in).
      case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, t.now) end
  )
  select job.cancel_requested from job\073
end';

-- build_worker_interrupt, as in V005.
create or replace function build_worker_interrupt(p_worker_id bigint, p_token uuid, p_job_id bigint, p_progress integer,
                                       p_reason text, p_max_recoveries integer, p_repeated_exit_error text,
                                       p_log_tail text, p_log_bytes bigint, p_log_location text,
                                       p_now timestamptz)
returns table (status text)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as E'#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  job as (
    update build_job j set (status, recoveries, worker_id, error, finished_at, progress) = (
      select d.*, coalesce(p_progress, j.progress)
      from build_job_interruption(j.cancel_requested, coalesce(p_progress, j.progress), j.checkpoint,
                                  j.recoveries, p_max_recoveries, j.worker_id, t.now, p_repeated_exit_error) d)
    from build_worker w, t
    where j.id = p_job_id and j.worker_id = p_worker_id and j.status = ''running''
      and w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
    returning j.id, j.status, j.progress, j.checkpoint, j.recoveries, j.error,
      -- The log tail, saved by the row it belongs to (a function here runs only if fenced in).
      case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, t.now) end
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select job.id, case job.status when ''queued'' then ''interrupted'' else job.status end,
           build_job_interruption_detail(job.status, job.checkpoint, job.progress, job.recoveries, job.error, p_reason),
           t.now
    from job, t
  )
  select job.status from job\073
end';

-- build_worker_add_follow_ups, as in V005.
create or replace function build_worker_add_follow_ups(p_worker_id bigint, p_token uuid, p_job_id bigint, p_follow_ups jsonb,
                                            p_now timestamptz)
returns table (fenced_in bigint, inserted bigint, too_large_n bigint, payload_bytes integer, kind_bytes integer)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as E'#variable_conflict use_column
begin
  return query
  with t as (select coalesce(p_now, now()) as now),
  fence as (
    select j.user_id from build_job j
    join build_worker w on w.id = j.worker_id, t
    where j.id = p_job_id and j.status = ''running''
      and w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
  ),
  follow_up as (
    select f.kind, coalesce(f.payload, ''{}''::jsonb) as payload, f.n
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
    insert into build_lane_turn (lane, user_id, turn)
    select q.lane, q.user_id, min(q.id) - 4611686018427387904 from inserted q
    where q.lane = ''shared''
    group by q.lane, q.user_id
    on conflict (lane, user_id) do update set waiting = true, version = build_lane_turn.version + 1
    returning user_id
  ),
    event as (
    insert into build_job_event (job_id, type, detail, at)
    select i.id, ''enqueued'',
           jsonb_build_object(''message'', ''enqueued in lane '' || i.lane || '' as a follow-up of job '' || p_job_id,
                              ''lane'', i.lane, ''followUpOf'', p_job_id),
           t.now
    from inserted i, t
  )
  select (select count(*) from fence), (select count(*) from inserted),
         too_large.n, too_large.payload_bytes, too_large.kind_bytes
  from (select 1) as one left join too_large on true\073
end';

-- build_worker_end, as in V005, and for a job of a lane that takes its oldest job (every dedicated
-- lane, and the shared lane when p_fair is false) the same statement without the turns: the
-- choice of LaneTurns.CHOOSE reduced to its fifo_head, which is what the whole choice takes in
-- such a lane. PostgreSQL builds the executor state of every part of a plan at each execution,
-- parts that never run included, and for the turns (the walk, the retry and fallback probes, the
-- two updates of build_lane_turn) that was about a sixth of the CPU of a chained job in a
-- dedicated lane.
-- The branch reads the job lane, as the statement would: a running job never changes lane (a
-- lane change moves queued jobs only), and a job that is not this worker's running job is
-- fenced off by either statement alike.
create or replace function build_worker_end(p_worker_id bigint, p_token uuid, p_job_id bigint, p_status text, p_error text,
                                 p_progress integer, p_log_tail text, p_log_bytes bigint, p_log_location text,
                                 p_chain_window_ms bigint, p_deadline_margin_ms bigint, p_linger boolean,
                                 p_fair boolean, p_now timestamptz)
returns table (fenced_in bigint, drained bigint, id bigint, user_id text, kind text, payload jsonb,
               progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as E'#variable_conflict use_column
begin
  if p_fair and exists (select 1 from build_job j where j.id = p_job_id and j.lane = ''shared'') then
    return query
    with recursive t as (select coalesce(p_now, now()) as now),
    ended as (
      update build_job j set status = p_status, error = p_error, finished_at = t.now,
        progress = coalesce(p_progress, j.progress)
      from build_worker w, t
      where j.id = p_job_id and j.worker_id = p_worker_id and j.status = ''running''
        and w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
        and p_status in (''succeeded'', ''failed'', ''cancelled'')
      returning j.id, j.lane, j.status, j.error, w.started_at, w.expires_at,
        -- The final log tail, saved by the row it belongs to (a function here runs only if fenced in).
        case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, t.now) end
    ),
    ended_event as (
      insert into build_job_event (job_id, type, detail, at)
      select e.id, e.status,
             jsonb_build_object(''message'', case when e.status = ''failed'' then ''failed: '' || e.error else e.status end,
                                ''workerId'', p_worker_id),
             t.now
      from ended e, t
    ),
    fence as (
      select p_worker_id as id, e.lane,
             t.now < e.started_at + p_chain_window_ms * interval ''1 millisecond''
               and t.now < e.expires_at - p_deadline_margin_ms * interval ''1 millisecond'' as open
      from ended e, t
    ),
    choose as (
      select f.lane, f.open and p_fair and f.lane = ''shared'' as fair,
             f.open and not (p_fair and f.lane = ''shared'') as fifo, true as room
      from fence f
    ),
    fifo_head as (
      select q.id, q.not_before from build_job q, t
      where q.lane = (select c.lane from choose c where c.fifo) and q.status = ''queued''
        and (q.not_before is null or q.not_before <= t.now)
      order by q.id
      limit 1
      for update of q skip locked
    ),
    retry_head as (
      select q.id, q.not_before from build_job q, t
      where q.lane = (select c.lane from choose c where c.fair) and q.status = ''queued'' and q.attempts > 0
        and (q.not_before is null or q.not_before <= t.now)
      order by q.id
      limit 1
      for update of q skip locked
    ),
    -- Waiting users in turn order, each with its oldest ready queued job (locked) and whether it
    -- has any job in the lane at all: the walk goes on only past users without a job to take.
    walk(n, user_id, turn, version, job_id, active) as (
      (select 1, u.user_id, u.turn,
              (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
              (select q.id from build_job q, t
               where q.user_id = u.user_id and q.lane = u.lane and q.status = ''queued''
                 and (q.not_before is null or q.not_before <= t.now)
               order by q.id limit 1 for update of q skip locked),
              exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                      and a.status in (''queued'', ''dispatched'', ''running''))
       from (select u.lane, u.user_id, u.turn from build_lane_turn u
             where u.lane = (select c.lane from choose c where c.fair and c.room) and u.waiting
               and not exists (select 1 from retry_head)
             order by u.turn, u.user_id
             limit 1
             for update of u skip locked) u)
      union all
      select w.n + 1, u.user_id, u.turn,
             (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
             (select q.id from build_job q, t
              where q.user_id = u.user_id and q.lane = u.lane and q.status = ''queued''
                and (q.not_before is null or q.not_before <= t.now)
              order by q.id limit 1 for update of q skip locked),
             exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                     and a.status in (''queued'', ''dispatched'', ''running''))
      from walk w
      cross join lateral (
        select u.lane, u.user_id, u.turn from build_lane_turn u
        where u.lane = (select c.lane from choose c) and u.waiting and (u.turn, u.user_id) > (w.turn, w.user_id)
        order by u.turn, u.user_id
        limit 1
        for update of u skip locked) u
      where w.job_id is null
    ),
    fair_next as (select w.user_id, w.job_id from walk w where w.job_id is not null),
    idled as (
      update build_lane_turn u set waiting = false
      from walk w, choose c
      where u.lane = c.lane and u.user_id = w.user_id and w.job_id is null and not w.active
        and u.version = w.version
      returning u.user_id
    ),
    fallback as (
      select q.id from build_job q, t
      where q.lane = (select c.lane from choose c where c.fair and c.room) and q.status = ''queued''
        and (q.not_before is null or q.not_before <= t.now)
        and not exists (select 1 from retry_head) and not exists (select 1 from fair_next)
      order by q.id
      limit 1
      for update of q skip locked
    ),
    head as (
      select id, not_before from fifo_head
      union all select id, not_before from retry_head
      union all select job_id, null from fair_next
      union all select id, null from fallback
    ),
    ready as (select head.id from head, t where head.not_before is null or head.not_before <= t.now),
      taken as (
      update build_job j set status = ''running'', worker_id = p_worker_id, checkpoint = j.progress,
        attempts = j.attempts + 1, dispatched_at = t.now, started_at = t.now
      from ready, t
      where j.id = ready.id
      returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
    ),
    served as (
      update build_lane_turn u set turn = nextval(''build_lane_turn_served'')
      from taken x, fair_next f, choose c
      where x.id = f.job_id and u.lane = c.lane and u.user_id = f.user_id
      returning u.user_id
    ),
      taken_event as (
      insert into build_job_event (job_id, type, detail, at)
      select n.id, ''dispatched'',
             jsonb_build_object(''message'', ''chained onto worker '' || p_worker_id || '' (attempt '' || n.attempts || '')'',
                                ''workerId'', p_worker_id, ''attempt'', n.attempts, ''chained'', true),
             t.now
      from taken n, t
    ),
    drained as (
      -- A lingering worker stays running while its window is open and polls with take-next.
      update build_worker w set status = ''draining''
      from fence
      where w.id = fence.id and not exists (select 1 from taken) and not (p_linger and fence.open)
      returning w.id
    )
    -- One row carrying the taken job payload, within the job row of RowLimits, as build_worker_start.
    select (select count(*) from fence), (select count(*) from drained),
           taken.id, taken.user_id, taken.kind, taken.payload, taken.progress, taken.attempts, taken.cancel_requested
    from (select 1) as one left join taken on true\073
  else
    return query
    with t as (select coalesce(p_now, now()) as now),
    ended as (
      update build_job j set status = p_status, error = p_error, finished_at = t.now,
        progress = coalesce(p_progress, j.progress)
      from build_worker w, t
      where j.id = p_job_id and j.worker_id = p_worker_id and j.status = ''running''
        and w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
        and p_status in (''succeeded'', ''failed'', ''cancelled'')
      returning j.id, j.lane, j.status, j.error, w.started_at, w.expires_at,
        -- The final log tail, saved by the row it belongs to (a function here runs only if fenced in).
        case when p_log_tail is not null then build_job_log_save(j.id, p_log_tail, p_log_bytes, p_log_location, t.now) end
    ),
    ended_event as (
      insert into build_job_event (job_id, type, detail, at)
      select e.id, e.status,
             jsonb_build_object(''message'', case when e.status = ''failed'' then ''failed: '' || e.error else e.status end,
                                ''workerId'', p_worker_id),
             t.now
      from ended e, t
    ),
    fence as (
      select p_worker_id as id, e.lane,
             t.now < e.started_at + p_chain_window_ms * interval ''1 millisecond''
               and t.now < e.expires_at - p_deadline_margin_ms * interval ''1 millisecond'' as open
      from ended e, t
    ),
    choose as (select f.lane, f.open as fifo from fence f),
    fifo_head as (
      select q.id, q.not_before from build_job q, t
      where q.lane = (select c.lane from choose c where c.fifo) and q.status = ''queued''
        and (q.not_before is null or q.not_before <= t.now)
      order by q.id
      limit 1
      for update of q skip locked
    ),
    taken as (
      update build_job j set status = ''running'', worker_id = p_worker_id, checkpoint = j.progress,
        attempts = j.attempts + 1, dispatched_at = t.now, started_at = t.now
      from fifo_head, t
      where j.id = fifo_head.id
      returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
    ),
    taken_event as (
      insert into build_job_event (job_id, type, detail, at)
      select n.id, ''dispatched'',
             jsonb_build_object(''message'', ''chained onto worker '' || p_worker_id || '' (attempt '' || n.attempts || '')'',
                                ''workerId'', p_worker_id, ''attempt'', n.attempts, ''chained'', true),
             t.now
      from taken n, t
    ),
    drained as (
      -- A lingering worker stays running while its window is open and polls with take-next.
      update build_worker w set status = ''draining''
      from fence
      where w.id = fence.id and not exists (select 1 from taken) and not (p_linger and fence.open)
      returning w.id
    )
    select (select count(*) from fence), (select count(*) from drained),
           taken.id, taken.user_id, taken.kind, taken.payload, taken.progress, taken.attempts, taken.cancel_requested
    from (select 1) as one left join taken on true\073
  end if\073
end';

-- build_worker_take_next, as in V005.
create or replace function build_worker_take_next(p_worker_id bigint, p_token uuid, p_chain_window_ms bigint,
                                       p_deadline_margin_ms bigint, p_fair boolean, p_now timestamptz)
returns table (fenced_in bigint, drained bigint, id bigint, user_id text, kind text, payload jsonb,
               progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as E'#variable_conflict use_column
begin
  return query
  with recursive t as (select coalesce(p_now, now()) as now),
  fence as (
    select w.id, w.lane,
           t.now < w.started_at + p_chain_window_ms * interval ''1 millisecond''
             and t.now < w.expires_at - p_deadline_margin_ms * interval ''1 millisecond'' as open
    from build_worker w, t
    where w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
  ),
  choose as (
    select f.lane, f.open and p_fair and f.lane = ''shared'' as fair,
           f.open and not (p_fair and f.lane = ''shared'') as fifo, true as room
    from fence f
  ),
  fifo_head as (
    select q.id, q.not_before from build_job q, t
    where q.lane = (select c.lane from choose c where c.fifo) and q.status = ''queued''
      and (q.not_before is null or q.not_before <= t.now)
    order by q.id
    limit 1
    for update of q skip locked
  ),
  retry_head as (
    select q.id, q.not_before from build_job q, t
    where q.lane = (select c.lane from choose c where c.fair) and q.status = ''queued'' and q.attempts > 0
      and (q.not_before is null or q.not_before <= t.now)
    order by q.id
    limit 1
    for update of q skip locked
  ),
  -- Waiting users in turn order, each with its oldest ready queued job (locked) and whether it
  -- has any job in the lane at all: the walk goes on only past users without a job to take.
  walk(n, user_id, turn, version, job_id, active) as (
    (select 1, u.user_id, u.turn,
            (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
            (select q.id from build_job q, t
             where q.user_id = u.user_id and q.lane = u.lane and q.status = ''queued''
               and (q.not_before is null or q.not_before <= t.now)
             order by q.id limit 1 for update of q skip locked),
            exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                    and a.status in (''queued'', ''dispatched'', ''running''))
     from (select u.lane, u.user_id, u.turn from build_lane_turn u
           where u.lane = (select c.lane from choose c where c.fair and c.room) and u.waiting
             and not exists (select 1 from retry_head)
           order by u.turn, u.user_id
           limit 1
           for update of u skip locked) u)
    union all
    select w.n + 1, u.user_id, u.turn,
           (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
           (select q.id from build_job q, t
            where q.user_id = u.user_id and q.lane = u.lane and q.status = ''queued''
              and (q.not_before is null or q.not_before <= t.now)
            order by q.id limit 1 for update of q skip locked),
           exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                   and a.status in (''queued'', ''dispatched'', ''running''))
    from walk w
    cross join lateral (
      select u.lane, u.user_id, u.turn from build_lane_turn u
      where u.lane = (select c.lane from choose c) and u.waiting and (u.turn, u.user_id) > (w.turn, w.user_id)
      order by u.turn, u.user_id
      limit 1
      for update of u skip locked) u
    where w.job_id is null
  ),
  fair_next as (select w.user_id, w.job_id from walk w where w.job_id is not null),
  idled as (
    update build_lane_turn u set waiting = false
    from walk w, choose c
    where u.lane = c.lane and u.user_id = w.user_id and w.job_id is null and not w.active
      and u.version = w.version
    returning u.user_id
  ),
  fallback as (
    select q.id from build_job q, t
    where q.lane = (select c.lane from choose c where c.fair and c.room) and q.status = ''queued''
      and (q.not_before is null or q.not_before <= t.now)
      and not exists (select 1 from retry_head) and not exists (select 1 from fair_next)
    order by q.id
    limit 1
    for update of q skip locked
  ),
  head as (
    select id, not_before from fifo_head
    union all select id, not_before from retry_head
    union all select job_id, null from fair_next
    union all select id, null from fallback
  ),
  ready as (select head.id from head, t where head.not_before is null or head.not_before <= t.now),
    taken as (
    update build_job j set status = ''running'', worker_id = p_worker_id, checkpoint = j.progress,
      attempts = j.attempts + 1, dispatched_at = t.now, started_at = t.now
    from ready, t
    where j.id = ready.id
    returning j.id, j.user_id, j.kind, j.payload, j.progress, j.attempts, j.cancel_requested
  ),
  served as (
    update build_lane_turn u set turn = nextval(''build_lane_turn_served'')
    from taken x, fair_next f, choose c
    where x.id = f.job_id and u.lane = c.lane and u.user_id = f.user_id
    returning u.user_id
  ),
    taken_event as (
    insert into build_job_event (job_id, type, detail, at)
    select n.id, ''dispatched'',
           jsonb_build_object(''message'', ''taken by lingering worker '' || p_worker_id || '' (attempt '' || n.attempts || '')'',
                              ''workerId'', p_worker_id, ''attempt'', n.attempts, ''chained'', true),
           t.now
    from taken n, t
  ),
  drained as (
    update build_worker w set status = ''draining''
    from fence
    where w.id = fence.id and not fence.open
    returning w.id
  )
  select (select count(*) from fence), (select count(*) from drained),
         taken.id, taken.user_id, taken.kind, taken.payload, taken.progress, taken.attempts, taken.cancel_requested
  from (select 1) as one left join taken on true\073
end';

-- build_worker_drain, as in V005: running -> draining, and whether this worker was the one.
create or replace function build_worker_drain(p_worker_id bigint, p_token uuid) returns boolean
language plpgsql volatile security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as
E'begin
  update build_worker set status = ''draining''
  where id = p_worker_id and token = p_token and status = ''running''\073
  return found\073
end';

-- build_lane_of, as in V001, in PL/pgSQL for the same reason: its body reads build_user in a
-- subquery, which keeps PostgreSQL from inlining it, so every enqueue and follow-up planned it
-- again (0.07 ms of a 0.5 ms enqueue on the benchmark machine).
create or replace function build_lane_of(p_user_id text) returns text
language plpgsql stable set plan_cache_mode = force_generic_plan as
E'begin
  return case when coalesce((select u.dedicated_worker from build_user u where u.user_id = p_user_id), false)
              then ''user:'' || p_user_id else ''shared'' end\073
end';
