-- build_outbox_claim (V009) answers its events as one JSON text value, and that value rides in the
-- row of the statement that called it (the enqueue, a cancel, a dispatch, a stop's one call). The
-- Data API refuses a result row over 64 KB (RowLimits.MAX_ROW_BYTES), and V009 bounded the answer by
-- rows only: 50 events of failed jobs, each with an error cut to 4,000 bytes, make over 200 KB, and
-- the request's own statement would then fail with them. Now the claim takes events, oldest first,
-- while their JSON stays within p_budget bytes (the first always fits: an event is at most 6 KB);
-- the rest stay unclaimed for the next claimer, as rows past p_limit always did.
create or replace function build_outbox_claim(p_now timestamptz, p_claim_ms bigint, p_limit integer)
returns text
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  -- Of the calling statement row of 64,000 bytes: its other columns are ids, counts and short texts.
  v_budget constant integer := 48000;
  v_events text;
begin
  with candidate as (
    select c.id from build_job_event c
    where c.published_at is null
      and (c.publish_claimed_until is null or c.publish_claimed_until <= v_now)
    order by c.id
    limit p_limit
    for update skip locked
  ),
  shaped as (
    select e.id, json_build_object('id', e.id, 'jobId', e.job_id, 'userId', j.user_id, 'kind', j.kind,
                                   'type', e.type, 'message', e.detail ->> 'message',
                                   'atMicros', (extract(epoch from e.at) * 1000000)::bigint) as event
    from candidate k join build_job_event e on e.id = k.id join build_job j on j.id = e.job_id
  ),
  fitting as (
    select s.id, s.event,
           sum(octet_length(s.event::text) + 1) over (order by s.id) as running_bytes
    from shaped s
  ),
  claimed as (
    update build_job_event e set publish_claimed_until = v_now + p_claim_ms * interval '1 millisecond'
    from fitting f
    where e.id = f.id and f.running_bytes <= v_budget
    returning e.id
  )
  select json_agg(f.event order by f.id)::text
  into v_events
  from fitting f join claimed c on c.id = f.id;
  return v_events;
end;
$$;
