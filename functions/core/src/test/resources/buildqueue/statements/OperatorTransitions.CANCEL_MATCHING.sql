with t as (select coalesce(:now::timestamptz, now()) as now),
target as (
  select j.id from build_job j
  where j.id = any(array(
    select m.id from (
      select q.id from build_job q
      where :queued and q.status = 'queued'
        and (:userId::text is null or q.user_id = :userId) and (:kind::text is null or q.kind = :kind)
      union all
      select r.id from build_job r
      where :running and r.status in ('dispatched', 'running') and not r.cancel_requested
        and (:userId::text is null or r.user_id = :userId) and (:kind::text is null or r.kind = :kind)
    ) m
    order by m.id
    limit :limit))
  for update skip locked
),
changed as (
  update build_job j set
    status = case when j.status = 'queued' then 'cancelled' else j.status end,
    finished_at = case when j.status = 'queued' then t.now else j.finished_at end,
    cancel_requested = true
  from target, t
  where j.id = target.id
    and (j.status = 'queued' or (j.status in ('dispatched', 'running') and not j.cancel_requested))
    and ((:queued and j.status = 'queued') or (:running and j.status <> 'queued'))
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
select (select string_agg(c.id::text, ',' order by c.id) from changed c where c.status = 'cancelled')
         as cancelled_ids,
       (select string_agg(c.id::text, ',' order by c.id) from changed c where c.status <> 'cancelled')
         as requested_ids,
       (select string_agg(w.task_id, ',' order by c.id) from changed c
        join build_worker w on w.id = c.worker_id where c.status <> 'cancelled' and w.task_id is not null)
         as requested_task_ids,
       -- This statement's snapshot still sees the jobs it changed as they were: leave them out.
       (select count(*) from (
          select 1 from build_job q
          where :queued and q.status = 'queued'
            and (:userId::text is null or q.user_id = :userId) and (:kind::text is null or q.kind = :kind)
            and not exists (select 1 from changed c where c.id = q.id)
          union all
          select 1 from build_job r
          where :running and r.status in ('dispatched', 'running') and not r.cancel_requested
            and (:userId::text is null or r.user_id = :userId) and (:kind::text is null or r.kind = :kind)
            and not exists (select 1 from changed c where c.id = r.id)
          limit :maxCounted) left_over) as remaining,
       -- As the single cancel's: the claim (V009) runs after the history rows are written.
       case when event_done.n > 0 and :claimLimit::integer > 0
            then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
from (select count(*) as n from event) as event_done
  cross join t
