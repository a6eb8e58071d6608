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
retry_head as (
  select q.id, q.not_before from build_job q, t
  where q.lane = (select c.lane from choose c where c.fair) and q.status = 'queued' and q.attempts > 0
    and (:holdLane or q.not_before is null or q.not_before <= t.now)
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
           where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued'
             and (q.not_before is null or q.not_before <= t.now)
           order by q.id limit 1 for update of q skip locked),
          exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                  and a.status in ('queued', 'dispatched', 'running'))
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
          where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued'
            and (q.not_before is null or q.not_before <= t.now)
          order by q.id limit 1 for update of q skip locked),
         exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                 and a.status in ('queued', 'dispatched', 'running'))
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
  where q.lane = (select c.lane from choose c where c.fair and c.room) and q.status = 'queued'
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
served as (
  update build_lane_turn u set turn = nextval('build_lane_turn_served')
  from job x, fair_next f, choose c
  where x.id = f.job_id and u.lane = c.lane and u.user_id = f.user_id
  returning u.user_id
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
