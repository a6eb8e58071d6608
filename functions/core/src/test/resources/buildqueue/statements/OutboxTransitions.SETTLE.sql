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
)
select count(*) as settled from settled
