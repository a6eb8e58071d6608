with t as (select coalesce(:now::timestamptz, now()) as now),
old as (select u.dedicated_worker, u.max_queued_jobs, u.budget_vcpu_seconds from build_user u where u.user_id = :userId),
wanted as (
  select coalesce(:dedicated::boolean, (select o.dedicated_worker from old o), false) as dedicated,
         case when :setMaxQueued then :maxQueued::integer else (select o.max_queued_jobs from old o) end
           as max_queued,
         case when :setBudget then :budget::bigint else (select o.budget_vcpu_seconds from old o) end
           as budget
),
lane as (select case when wanted.dedicated then 'user:' || :userId else 'shared' end as name from wanted),
saved as (
  insert into build_user (user_id, dedicated_worker, max_queued_jobs, budget_vcpu_seconds, updated_at)
  select :userId, wanted.dedicated, wanted.max_queued, wanted.budget, t.now from t, wanted
  on conflict (user_id) do update set dedicated_worker = excluded.dedicated_worker,
    max_queued_jobs = excluded.max_queued_jobs, budget_vcpu_seconds = excluded.budget_vcpu_seconds,
    updated_at = excluded.updated_at
  returning user_id
),
moved as (
  update build_job j set lane = lane.name
  from lane
  where j.user_id = :userId and j.status = 'queued' and j.lane <> lane.name
  returning j.id, j.lane, j.user_id
),
joined as (
  select build_lane_turn_join(q.lane, q.user_id, min(q.id)) from moved q group by q.lane, q.user_id
),

event as (
  insert into build_job_event (job_id, type, detail, at)
  select m.id, 'moved', jsonb_build_object('message', 'moved to lane ' || m.lane, 'lane', m.lane), t.now
  from moved m, t
  returning id
)
-- One row however many jobs move: a lane, a count and at most MAX_MOVED_LISTED ids (20 KB).
select lane.name as lane, wanted.dedicated, wanted.max_queued, wanted.budget, (select count(*) from saved) as saved,
       (select count(*) from moved) as moved_count,
       (select string_agg(m.id::text, ',' order by m.id)
        from (select id from moved order by id limit :maxListed) m) as moved_ids,
       -- As the enqueue's: the claim (V009) runs after the history rows are written (moved_events).
       case when moved_events.n > 0 and :claimLimit::integer > 0
            then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
from lane cross join wanted cross join (select count(*) from joined) as turn_joined
  cross join (select count(*) as n from event) as moved_events
  cross join t
