with t as (select coalesce(:now::timestamptz, now()) as now),
target as (
  select j.id, j.status from build_job j
  where j.id = :jobId and (:userId::text is null or j.user_id = :userId)
  for update
),
changed as (
  update build_job j set
    status = case when j.status = 'queued' then 'cancelled' else j.status end,
    finished_at = case when j.status = 'queued' then t.now else j.finished_at end,
    cancel_requested = true
  from target, t
  where j.id = target.id
    and (j.status = 'queued' or (j.status in ('dispatched', 'running') and not j.cancel_requested))
  returning j.id, j.status, j.worker_id
),
event as (
  insert into build_job_event (job_id, type, detail, at)
  select c.id,
         case when c.status = 'cancelled' then 'cancelled' else 'cancel-requested' end,
         jsonb_build_object('message',
           case when c.status = 'cancelled' then 'cancelled while queued'
                else 'cancel requested, worker ' || c.worker_id || ' is told to stop' end),
         t.now
  from changed c, t
  returning id
)
select target.id, target.status as old_status, changed.status as new_status, changed.worker_id,
       w.task_id, w.status as worker_status,
       -- As the enqueue's: the claim (V009) runs after the history row is written (event_done).
       case when changed.id is not null and :claimLimit::integer > 0
            then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
from target
left join changed on true
left join build_worker w on w.id = changed.worker_id
cross join (select count(*) from event) as event_done
cross join t
