with recursive t as (select coalesce(:now::timestamptz, now()) as now),
slot as (
  select :lane || '#' || n as name
  from generate_series(1, :capacity::int) n
  where not exists (
    select 1 from build_worker w where w.slot = :lane || '#' || n and w.status <> 'exited')
  order by n
  limit 1
),
choose as (
  select :lane::text as lane, :fair::boolean as fair, not :fair::boolean as fifo,
         exists (select 1 from slot) as room
),
fifo_head as (
  select q.id, q.not_before from build_job q, t
  where q.lane = (select c.lane from choose c where c.fifo) and q.status = 'queued'
    and (:holdLane or q.not_before is null or q.not_before <= t.now)
  order by q.id
  limit 1
  for update of q skip locked
),
ready as (select h.id from fifo_head h, t where h.not_before is null or h.not_before <= t.now),

worker as (
  insert into build_worker (lane, slot, token, status, expires_at, launched_at)
  select :lane, slot.name, :token::uuid, 'launching', t.now + :leaseMs * interval '1 millisecond', t.now
  from slot, ready, t
  returning id, slot, expires_at
),
job as (
  update build_job j set status = 'dispatched', worker_id = worker.id, checkpoint = j.progress,
    attempts = j.attempts + 1, dispatched_at = t.now, not_before = null
  from worker, ready, t
  where j.id = ready.id
  returning j.id, j.attempts, worker.id as worker_id, worker.slot, worker.expires_at
),

event as (
  insert into build_job_event (job_id, type, detail, at)
  select job.id, 'dispatched',
         jsonb_build_object('message', 'dispatched to worker ' || job.worker_id || ' in slot ' || job.slot
                              || ' (attempt ' || job.attempts || ')',
                            'workerId', job.worker_id, 'slot', job.slot, 'attempt', job.attempts),
         t.now
  from job, t
)
select job.id as job_id, job.worker_id, job.slot, job.expires_at,
       (select count(*) from generate_series(1, :capacity::int) n
        where not exists (
          select 1 from build_worker w where w.slot = :lane || '#' || n and w.status <> 'exited')) > 1
       and exists (select 1 from build_job q where q.lane = :lane and q.status = 'queued' and q.id <> job.id)
         as more_to_do
from job
