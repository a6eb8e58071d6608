with t as (select coalesce(:now::timestamptz, now()) as now),
settle_outcome as (
  select unnest(string_to_array(:published::text, ',')::bigint[]) as id, true as published
  union all
  select unnest(string_to_array(:refused::text, ',')::bigint[]), false
),
settled as (
  update build_job_event e set
    published_at = case when o.published then t.now end,
    publish_claimed_until = case when o.published then null
                                 else t.now + :retryMs * interval '1 millisecond' end
  from settle_outcome o, t
  where e.id = o.id and e.published_at is null
  returning e.id, e.job_id, e.type, e.published_at
),
webhook_owed as (
  insert into build_webhook_delivery (endpoint_id, event_id, job_id, created_at, next_attempt_at)
  select w.id, s.id, s.job_id, t.now, t.now
  from settled s
  join build_job j on j.id = s.job_id
  join build_webhook_endpoint w
    on (w.user_id is null or w.user_id = j.user_id)
   and (w.event_types is null or w.event_types @> jsonb_build_array(s.type))
  cross join t
  where s.published_at is not null
  on conflict (endpoint_id, event_id) do nothing
  returning id
),
recorded as (
  update build_worker set task_id = :taskId
  where id = :workerId and token = :token::uuid and status <> 'exited'
    and (task_id is null or task_id = :taskId)
  returning id
)
-- One row: whether the task was recorded, and the job read back (all null when none is asked):
-- its columns as JobReads.JOB reads them.
select (select count(*) from recorded) as recorded, (select count(*) from settled) as settled_count,
  j.id, j.user_id, j.kind, j.payload, j.status, j.lane, j.progress, j.attempts, j.recoveries,
  j.cancel_requested, j.error, j.worker_id, j.created_at, j.dispatched_at, j.started_at,
  j.finished_at, j.not_before, j.supersede_key, j.superseded_by, j.priority, j.retry_of, j.retried_by,
  l.total_bytes as log_bytes,
  l.location as log_location, l.updated_at as log_updated_at,
  case when j.status = 'queued' and fair.retry is null then
    (select count(*) + 1 from build_job q
     where q.lane = j.lane and q.status = 'queued' and (q.priority, -q.id) > (j.priority, -j.id))
  when j.status = 'queued' then fair.position end as position,
  fair.retry as turn_retry, fair.own_ahead as turn_own_ahead, fair.users_ahead as turn_users_ahead,
  fair.others_waiting as turn_others_waiting,
  (select string_agg(s.capacity || ':' || s.billed || ':' || s.vcpu || ':' || s.mib, ',' order by s.capacity)
 from (select c.capacity, sum(c.billed_ms)::bigint as billed, sum(c.billed_ms * c.vcpu_milli)::bigint as vcpu,
              sum(c.billed_ms * c.memory_mb)::bigint as mib
       from build_job_cost c where c.job_id = j.id group by c.capacity) s) as cost_lines
from (select 1) as one
left join build_job j on j.id = :jobId
left join build_job_log l on l.job_id = j.id
left join lateral (
  select p.retry, p.own_ahead, o.users_ahead, o.others_waiting,
         case when p.retry then p.retries_before + 1
              else p.retries + p.own_ahead + o.jobs_ahead + 1 end as position
  from (
    select j.attempts > 0 as retry,
           (select count(*) from build_job q
            where q.lane = j.lane and q.status = 'queued' and q.attempts > 0 and q.id < j.id) as retries_before,
           (select count(*) from build_job q
            where q.lane = j.lane and q.status = 'queued' and q.attempts > 0) as retries,
           (select count(*) from build_job q
            where q.user_id = j.user_id and q.lane = j.lane and q.status = 'queued' and q.attempts = 0
              and (q.priority, -q.id) > (j.priority, -j.id)) as own_ahead,
           coalesce((select u.turn from build_lane_turn u where u.lane = j.lane and u.user_id = j.user_id), 0)
             as turn
  ) p
  cross join lateral (
    select count(*) filter (where x.has and x.before) as users_ahead,
           count(*) filter (where x.has) as others_waiting,
           coalesce(sum(x.n), 0)::bigint as jobs_ahead
    from (
      select exists (select 1 from build_job q
                     where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued' and q.attempts = 0)
               as has,
             (u.turn, u.user_id) < (p.turn, j.user_id) as before,
             (select count(*) from (
                select 1 from build_job q
                where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued' and q.attempts = 0
                limit p.own_ahead + case when (u.turn, u.user_id) < (p.turn, j.user_id) then 1 else 0 end) c)
               as n
      from build_lane_turn u
      where u.lane = j.lane and u.waiting and u.user_id <> j.user_id
    ) x
  ) o
  where :fair and j.status = 'queued' and j.lane = 'shared'
) fair on true
