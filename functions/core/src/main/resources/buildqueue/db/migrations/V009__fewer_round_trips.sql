-- Fewer round trips per request (docs/architecture.md section 4.3 and the decisions in section 12).
-- Over the Data API every statement is an HTTPS call, so a request's cost is its statements. Two
-- things here let a request make fewer:
--
-- build_outbox_claim claims unpublished job events (the outbox, V002) as OutboxTransitions'
-- CLAIM_PENDING does, and answers them as JSON text, so that a statement the request makes anyway
-- (the enqueue, a dispatch, a worker's exit) claims them too instead of a statement of its own. Called
-- inside a statement, it sees what that statement had written when the call came (V008's header):
-- the enqueue calls it after its history rows are written, so it claims them.
--
-- build_exit_worker_and_dispatch is a stop event's whole transition in one call: the worker's exit (or, when
-- it never started, its exit before start), then the dispatch of its lane, then the claim, each a
-- statement of its own so each takes a snapshot after the one before. The exits it runs,
-- build_exit_worker and build_exit_worker_before_start, are ExitTransitions' EXITED and NOT_STARTED
-- moved here unchanged, so that they have one source: ExitTransitions.NOT_STARTED calls the second
-- for a launch failure.
--
-- Bodies are PL/pgSQL with a generic plan, as V006's and V008's (section 12).

-- Claims up to p_limit unpublished job events for p_claim_ms, oldest first, as
-- OutboxTransitions.CLAIM_PENDING: rows another claimer holds are skipped, a claimed row no longer
-- matches. The answer is a JSON array (null when nothing was claimed) of at most p_limit events of
-- at most 6 KB each; at is in microseconds since the epoch, so no time zone setting changes it.
create function build_outbox_claim(p_now timestamptz, p_claim_ms bigint, p_limit integer)
returns text
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  v_events text;
begin
  with claimed as (
    update build_job_event e set publish_claimed_until = v_now + p_claim_ms * interval '1 millisecond'
    where e.id = any(array(
      select c.id from build_job_event c
      where c.published_at is null
        and (c.publish_claimed_until is null or c.publish_claimed_until <= v_now)
      order by c.id
      limit p_limit
      for update skip locked))
    returning e.id, e.job_id, e.type, e.detail, e.at
  )
  select json_agg(json_build_object('id', c.id, 'jobId', c.job_id, 'userId', j.user_id, 'kind', j.kind,
                                    'type', c.type, 'message', c.detail ->> 'message',
                                    'atMicros', (extract(epoch from c.at) * 1000000)::bigint)
                  order by c.id)::text
  into v_events
  from claimed c join build_job j on j.id = c.job_id;
  return v_events;
end;
$$;
revoke all on function build_outbox_claim(timestamptz, bigint, integer) from public;

-- ExitTransitions.EXITED, unchanged: worker p_worker_id (or the one of task p_task_id, with token
-- p_token when given) that was running or draining exits, and its unfinished job is recovered or
-- fails. The job's row is locked before the worker's, the order every transition takes them in
-- (held is read in worker's from list, so it runs before any worker row is locked). No row when
-- no such worker is live (a duplicate, a late event, a worker that never started).
create function build_exit_worker(p_task_id text, p_worker_id bigint, p_token uuid, p_reason text,
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
    returning w.id, w.lane, (extract(epoch from w.exited_at - w.launched_at) * 1000)::bigint as slot_held_ms
  ),
  job as (
    update build_job j set (status, recoveries, worker_id, error, finished_at) = (
      select * from build_job_interruption(j.cancel_requested, j.progress, j.checkpoint, j.recoveries,
                                           p_max_recoveries, j.worker_id, t.now, p_repeated_exit_error))
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
revoke all on function build_exit_worker(text, bigint, uuid, text, integer, text, timestamptz) from public;

-- ExitTransitions.NOT_STARTED, unchanged: a worker that is still launching exits, its job never
-- ran, so this is a launch failure (retried with backoff while p_retryable and under
-- p_max_failures), not an interruption. The job before the worker, as in build_exit_worker.
create function build_exit_worker_before_start(p_task_id text, p_worker_id bigint, p_token uuid, p_reason text,
                                               p_retryable boolean, p_max_failures integer, p_backoff_ms bigint,
                                               p_now timestamptz)
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
    where j.worker_id = e.worker_id and j.status = 'dispatched' and v.id = e.worker_id and v.status = 'launching'
    for update of j
  ),
  worker as (
    update build_worker w set status = 'exited', exited_at = t.now, exit_reason = 'not started: ' || p_reason
    from evidence e, t, (select count(*) from held) as job_locked
    where w.id = e.worker_id and w.status = 'launching'
    returning w.id, w.lane, (extract(epoch from w.exited_at - w.launched_at) * 1000)::bigint as slot_held_ms
  ),
  job as (
    update build_job j set (status, launch_failures, worker_id, not_before, error, finished_at) = (
      select * from build_job_launch_failure(j.cancel_requested, j.launch_failures, p_retryable,
                                             p_max_failures, p_backoff_ms, j.worker_id, t.now, p_reason))
    from worker, t
    where j.worker_id = worker.id and j.status = 'dispatched'
    returning j.id, j.status, j.error, j.not_before
  ),
  event as (
    insert into build_job_event (job_id, type, detail, at)
    select job.id, case job.status when 'queued' then 'launch-failed' else job.status end,
           jsonb_build_object('message',
             case job.status
               when 'queued' then 'worker not started (' || p_reason || '), retrying after '
                                  || to_char(job.not_before at time zone 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS"Z"')
               when 'cancelled' then 'cancelled, its worker never started'
               else 'failed: ' || job.error end,
             'reason', p_reason),
           t.now
    from job, t
  )
  select worker.id, worker.lane, worker.slot_held_ms, job.id, job.status, job.error
  from worker left join job on true;
end;
$$;
revoke all on function build_exit_worker_before_start(text, bigint, uuid, text, boolean, integer, bigint, timestamptz)
  from public;

-- The dispatch of V008 followed by a claim of job events (p_claim_limit 0: none), for a request
-- that dispatches after its own statement: the claim is a later statement than the dispatch, so it
-- sees the dispatch's history row. Always one row; the dispatch's columns are null when nothing was
-- dispatched. A unique violation (a concurrent dispatcher took the slot) propagates, as from
-- build_lane_dispatch: nothing was claimed then.
create function build_lane_dispatch_claiming(p_lane text, p_capacity integer, p_fair boolean, p_token uuid,
                                             p_lease_ms bigint, p_now timestamptz, p_claim_ms bigint,
                                             p_claim_limit integer)
returns table (job_id bigint, worker_id bigint, slot text, expires_at timestamptz, more_to_do boolean,
               claimed_events text)
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_job_id bigint;
  v_worker_id bigint;
  v_slot text;
  v_expires_at timestamptz;
  v_more_to_do boolean;
  v_events text;
begin
  select d.job_id, d.worker_id, d.slot, d.expires_at, d.more_to_do
  into v_job_id, v_worker_id, v_slot, v_expires_at, v_more_to_do
  from build_lane_dispatch(p_lane, p_capacity, p_fair, p_token, p_lease_ms, p_now) d;
  if p_claim_limit > 0 then
    v_events := build_outbox_claim(p_now, p_claim_ms, p_claim_limit);
  end if;
  return query select v_job_id, v_worker_id, v_slot, v_expires_at, v_more_to_do, v_events;
end;
$$;
revoke all on function build_lane_dispatch_claiming(text, integer, boolean, uuid, bigint, timestamptz, bigint, integer)
  from public;

-- A stop event's transition (BuildQueue.taskStopped) in one round trip: the worker exits
-- (build_exit_worker; when that finds no running worker, build_exit_worker_before_start, retryable),
-- then, if p_dispatch, its lane is dispatched (build_lane_dispatch with the lane's capacity: the
-- shared lane p_shared_slots, taking turns when p_fair_shared, any other lane 1), then up to
-- p_claim_limit job events are claimed. No row when no live worker matched (nothing is dispatched
-- or claimed then). dispatch_outcome: 'dispatched' (the d_ columns), 'none' (no free slot or no
-- ready job, or p_dispatch false), 'raced' (a concurrent dispatcher took the slot: the caller
-- dispatches again), 'failed' (a deadlock or lock failure in the dispatch: the caller logs it and
-- the next tick dispatches). The dispatch runs in a block of its own, so its failure undoes only
-- itself: the exit stands, as when the two were separate transactions.
--
-- Why the dispatch still sees every job it must (the comment in BuildQueue.taskStopped): each
-- statement here takes a fresh snapshot, so the dispatch starts after the exit. An enqueue that
-- share-locked this worker before the exit made the exit wait for its commit, so the dispatch sees
-- its job; one that comes to the worker's row after the exit waits for this whole transaction (the
-- row lock is held to the end, after the dispatch), then finds the worker exited, counts the slot
-- free and dispatches itself. Holding the exit's locks through the dispatch adds no wait on a lock
-- the dispatch takes: the choice locks turn and job rows skip locked (V008), and the worker it
-- inserts is new.
create function build_exit_worker_and_dispatch(p_task_id text, p_worker_id bigint, p_token uuid, p_reason text,
                                     p_max_recoveries integer, p_repeated_exit_error text,
                                     p_max_failures integer, p_backoff_ms bigint,
                                     p_dispatch boolean, p_shared_slots integer, p_fair_shared boolean,
                                     p_new_token uuid, p_lease_ms bigint,
                                     p_claim_ms bigint, p_claim_limit integer, p_now timestamptz)
returns table (worker_id bigint, lane text, slot_held_ms bigint, job_id bigint, job_status text, error text,
               never_started boolean, dispatch_outcome text, d_job_id bigint, d_worker_id bigint, d_slot text,
               d_expires_at timestamptz, d_more_to_do boolean, claimed_events text)
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_exit record;
  v_never_started boolean := false;
  v_outcome text := 'none';
  v_d_job_id bigint;
  v_d_worker_id bigint;
  v_d_slot text;
  v_d_expires_at timestamptz;
  v_d_more_to_do boolean;
  v_events text;
begin
  select x.* into v_exit
  from build_exit_worker(p_task_id, p_worker_id, p_token, p_reason, p_max_recoveries, p_repeated_exit_error, p_now) x;
  if not found then
    -- Rare: the worker never started (its task failed to start, its process died first), or this
    -- is a duplicate.
    select x.* into v_exit
    from build_exit_worker_before_start(p_task_id, p_worker_id, p_token, p_reason, true, p_max_failures,
                                        p_backoff_ms, p_now) x;
    if not found then
      return;
    end if;
    v_never_started := true;
  end if;
  if p_dispatch then
    begin
      select d.job_id, d.worker_id, d.slot, d.expires_at, d.more_to_do
      into v_d_job_id, v_d_worker_id, v_d_slot, v_d_expires_at, v_d_more_to_do
      from build_lane_dispatch(v_exit.lane, case when v_exit.lane = 'shared' then p_shared_slots else 1 end,
                               p_fair_shared and v_exit.lane = 'shared', p_new_token, p_lease_ms, p_now) d;
      if found then
        v_outcome := 'dispatched';
      end if;
    exception
      when unique_violation then
        v_outcome := 'raced';
      when deadlock_detected or lock_not_available or serialization_failure then
        v_outcome := 'failed';
    end;
  end if;
  if p_claim_limit > 0 then
    v_events := build_outbox_claim(p_now, p_claim_ms, p_claim_limit);
  end if;
  return query select v_exit.worker_id, v_exit.lane, v_exit.slot_held_ms, v_exit.job_id, v_exit.job_status,
                      v_exit.error, v_never_started, v_outcome,
                      v_d_job_id, v_d_worker_id, v_d_slot, v_d_expires_at, v_d_more_to_do, v_events;
end;
$$;
revoke all on function build_exit_worker_and_dispatch(text, bigint, uuid, text, integer, text, integer, bigint, boolean,
                                            integer, boolean, uuid, bigint, bigint, integer, timestamptz)
  from public;
