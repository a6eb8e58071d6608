with t as (select coalesce(:now::timestamptz, now()) as now),
-- The payload's size as it is stored and read back, which is what a worker's row carries.
doc as (select :payload::jsonb as payload),
size as (select coalesce(octet_length(doc.payload::text), 0) as payload_bytes from doc),
-- The quota: the user's own limit, else the queue's. Queued jobs are counted only to one past
-- it (plus those this job would supersede), so the check reads at most that many index entries.
-- Two submissions of one user at the same moment can each see the other's job missing: the
-- quota may be passed by as many jobs as arrive together, never more.
quota as (
  select coalesce((select u.max_queued_jobs from build_user u where u.user_id = :userId),
                  :defaultMaxQueued::integer) as max_queued
),
replaced as (
  select count(*) as n from build_job r
  where :supersedeKey::text is not null and r.user_id = :userId and r.supersede_key = :supersedeKey
    and r.status = 'queued'
),
queued as (
  select count(*) as n from (
    select 1 from build_job q
    where q.user_id = :userId and q.status = 'queued'
    limit (select max_queued from quota) + (select n from replaced) + 1) q
),
-- The budget (docs/architecture.md section 4.8): the user's own, else the queue's, in
-- vCPU-seconds per period (UTC), and what the user's jobs were billed in this period, summed
-- from the ledger's index only when there is a budget. A job still on its worker is not billed
-- yet, so it is not counted: a budget refuses new jobs, never stops one.
period as (
  select date_trunc(:budgetPeriod::text, t.now at time zone 'UTC') at time zone 'UTC' as starts,
         (date_trunc(:budgetPeriod::text, t.now at time zone 'UTC') + ('1 ' || :budgetPeriod::text)::interval)
           at time zone 'UTC' as ends
  from t
),
budget as (
  select b.vcpu_seconds, period.ends,
         case when b.vcpu_seconds is null then 0
              else (select coalesce(sum(c.billed_ms * c.vcpu_milli), 0)::bigint from build_job_cost c
                    where c.user_id = :userId and c.at >= period.starts) end as used_vcpu_micros
  from period, (select coalesce((select u.budget_vcpu_seconds from build_user u where u.user_id = :userId),
                                :defaultBudget::bigint) as vcpu_seconds) b
),
fits as (
  select size.payload_bytes <= :maxPayloadBytes as small, queued.n - replaced.n < quota.max_queued as room,
         queued.n = quota.max_queued + replaced.n + 1 as counted_past,
         budget.vcpu_seconds is null or budget.used_vcpu_micros < budget.vcpu_seconds * 1000000 as in_budget
  from size, queued, replaced, quota, budget
),
inserted as (
  insert into build_job (user_id, kind, payload, idempotency_key, supersede_key, priority, lane, created_at,
                         traceparent)
  select :userId, :kind, doc.payload, :key, :supersedeKey, :priority::smallint, build_lane_of(:userId), t.now,
         :traceparent
  from t, doc, fits
  where fits.small and fits.room and fits.in_budget
  on conflict (user_id, idempotency_key) do nothing
  returning id, lane, user_id
),
event as (
  insert into build_job_event (job_id, type, detail, at)
  select i.id, 'enqueued', jsonb_build_object('message', 'enqueued in lane ' || i.lane, 'lane', i.lane), t.now
  from inserted i, t
  returning id
),
-- The first enqueue after idle flips the tick's flag (V014) and arms the tick's schedule after
-- its commit. An armed queue's enqueue only reads the row, so enqueues take no common lock.
tick_armed as (
  update build_tick_arm a set armed = true
  where not a.armed and exists (select 1 from inserted)
  returning a.id
),
joined as (
  select build_lane_turn_join(q.lane, q.user_id, min(q.id)) from inserted q group by q.lane, q.user_id
),

-- The same user's unfinished jobs with this supersede key: queued ones are cancelled, and a
-- worker running one sees its cancel at its next check-in, as after POST /jobs/{id}/cancel.
superseded as (
  update build_job j set
    status = case when j.status = 'queued' then 'cancelled' else j.status end,
    finished_at = case when j.status = 'queued' then t.now else j.finished_at end,
    cancel_requested = true, superseded_by = i.id
  from inserted i, t
  where :supersedeKey::text is not null and j.user_id = :userId and j.supersede_key = :supersedeKey
    and (j.status = 'queued' or (j.status in ('dispatched', 'running') and not j.cancel_requested))
  returning j.id, j.status, j.worker_id, i.id as by_id
),
superseded_event as (
  insert into build_job_event (job_id, type, detail, at)
  select s.id, case when s.status = 'cancelled' then 'cancelled' else 'cancel-requested' end,
         jsonb_build_object('message',
           case when s.status = 'cancelled' then 'superseded by job ' || s.by_id
                else 'superseded by job ' || s.by_id || ': cancel requested, worker ' || s.worker_id
                     || ' is told to stop' end,
           'supersededBy', s.by_id),
         t.now
  from superseded s, t
  returning id
),
job as (
  select id, lane, true as created from inserted
  union all
  select id, lane, false from build_job
  where user_id = :userId and idempotency_key = :key and not exists (select 1 from inserted)
)
-- One row: sizes, counts, and at most MAX_SUPERSEDED_LISTED ids plus the user's running jobs
-- with the key (at most the shared lane's 100 slots): under 4 KB.
select size.payload_bytes, fits.room, fits.counted_past, queued.n as queued_count, quota.max_queued,
       fits.in_budget, budget.vcpu_seconds as budget_vcpu_seconds, budget.used_vcpu_micros,
       budget.ends as budget_ends, ceil(extract(epoch from budget.ends - t.now))::bigint as budget_retry_s,
       job.id, job.lane, job.created,
       -- The share lock makes a concurrent worker exit wait for this insert to commit (so
       -- its follow-up dispatch sees the job), or this count wait for the exit (so it sees
       -- the free slot): a new job never waits for the tick because of that race. It is
       -- taken last, after the user's turn row and the superseded jobs (joined and
       -- superseded, read in the from list below, so run before this list): a worker
       -- ending its job holds the job's row and then a turn row from its walk while it
       -- updates its own worker row, so an enqueue that share-locked that worker first and
       -- then waited for either row would deadlock with it (EnqueueLockOrderTest).
       (select count(*) from (
          select 1 from build_worker w where w.lane = job.lane and w.status <> 'exited' for share of w) live)
         < case when job.lane = 'shared' then :sharedSlots else 1 end as lane_has_room,
       exists (select 1 from tick_armed) as arm_tick,
       (select count(*) from superseded s where s.status = 'cancelled') as superseded_count,
       (select string_agg(c.id::text, ',' order by c.id)
        from (select s.id from superseded s where s.status = 'cancelled' order by s.id limit :maxListed) c)
         as superseded_ids,
       (select string_agg(s.id::text, ',' order by s.id) from superseded s where s.status <> 'cancelled')
         as cancel_requested_ids,
       -- Their workers' tasks, for the caller to stop: the cancel is pushed, not polled.
       (select string_agg(w.task_id, ',' order by s.id) from superseded s
        join build_worker w on w.id = s.worker_id where s.status <> 'cancelled' and w.task_id is not null)
         as cancel_requested_task_ids,
       -- A new job's request publishes what it wrote: the claim (V009) runs after the history
       -- rows are written (event_done and superseded_event_done, in the from list) and in a
       -- snapshot of its own, so it takes them with any older unpublished rows.
       case when job.created and :claimLimit::integer > 0
            then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
from size cross join fits cross join queued cross join quota cross join budget left join job on true
  cross join (select count(*) from joined) as turn_joined
  cross join (select count(*) from superseded) as supersede_done
  cross join (select count(*) from event) as event_done
  cross join (select count(*) from superseded_event) as superseded_event_done
  cross join t
