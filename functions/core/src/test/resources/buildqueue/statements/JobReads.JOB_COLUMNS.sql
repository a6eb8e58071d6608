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