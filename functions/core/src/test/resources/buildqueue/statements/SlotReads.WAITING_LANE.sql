with recent as (
  select coalesce(:now::timestamptz, now()) as read_at,
         (select p.paused_at from build_lane_pause p where p.lane = :firstLane) as paused_at,
         (select p.paused_by from build_lane_pause p where p.lane = :firstLane) as paused_by,
         coalesce(jsonb_agg(jsonb_build_array(f.kind, f.start_ms, f.slot_ms) order by f.finished_at desc),
                  '[]'::jsonb) as samples
  from (
    select f.kind, f.finished_at,
           floor(extract(epoch from (f.started_at - f.dispatched_at)) * 1000)::bigint as start_ms,
           floor(extract(epoch from (f.finished_at - f.dispatched_at)) * 1000)::bigint as slot_ms
    from build_job f
    where f.lane = :firstLane and f.finished_at is not null
      and f.finished_at > coalesce(:now::timestamptz, now()) - make_interval(secs => :windowSeconds)
      and f.started_at is not null and f.dispatched_at is not null
    order by f.finished_at desc
    limit :maxSamples
  ) f
)
select lw.*, recent.read_at, recent.paused_at, recent.paused_by, case when lw.first is not false then recent.samples end as samples,
       floor(extract(epoch from (recent.read_at - j.dispatched_at)) * 1000)::bigint as job_held_ms
from recent
left join lateral (select w.*, row_number() over () = 1 as first from (with t as (select coalesce(:now::timestamptz, now()) as now)
select w.id, w.lane, w.slot, w.status, w.task_id, w.launched_at, w.started_at,
       floor(extract(epoch from (w.expires_at - t.now)))::bigint as lease_left_seconds,
       j.id as job_id, j.user_id as job_user_id, j.kind as job_kind, j.status as job_status,
       j.progress as job_progress,
       case when jsonb_typeof(j.payload -> 'steps') = 'number' and octet_length((j.payload -> 'steps')::text) <= 11
            then j.payload -> 'steps' end as job_steps
from build_worker w
cross join t
left join lateral (
  select c.id, c.user_id, c.kind, c.status, c.progress, c.payload from build_job c
  where c.worker_id = w.id and c.status in ('dispatched', 'running')
  order by c.id
  limit 1
) j on true
where w.status <> 'exited' and w.lane >= :firstLane and w.lane <= :lastLane
order by w.lane, substring(w.slot from '#([0-9]+)$')::int) w) lw on true
left join build_job j on j.id = lw.job_id
