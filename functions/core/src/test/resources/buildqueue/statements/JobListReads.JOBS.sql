with candidate as (
  select j.id,
         sum(octet_length(j.payload::text) + coalesce(octet_length(j.error), 0) + octet_length(j.user_id)
             + octet_length(j.lane) + octet_length(j.kind) + coalesce(octet_length(l.location), 0)
             + :rowFixedBytes)
           over (order by j.id desc) as running_bytes,
         row_number() over (order by j.id desc) as n
  from build_job j
  left join build_job_log l on l.job_id = j.id
  where (:userId::text is null or j.user_id = :userId)
    and (:statuses::text is null or j.status = any (string_to_array(:statuses, ',')))
    and (:before::bigint is null or j.id < :before)
  order by j.id desc
  limit :limit + 1
),
page as (
  select c.id from candidate c where c.n <= :limit and (c.n = 1 or c.running_bytes <= :budgetBytes)
)
select j.id, j.user_id, j.kind, j.payload, j.status, j.lane, j.progress, j.attempts, j.recoveries,
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
       from build_job_cost c where c.job_id = j.id group by c.capacity) s) as cost_lines,
  (select count(*) from candidate) > (select count(*) from page) as more
from page
join build_job j on j.id = page.id
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
order by j.id desc
