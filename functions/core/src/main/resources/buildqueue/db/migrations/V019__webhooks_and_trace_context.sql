-- Signed webhooks and trace context (docs/architecture.md "Webhooks", "Trace context").

-- A W3C traceparent the submitter sent with POST /jobs (validated there: version 00, a trace id and
-- a parent id not all zero); null when none was sent. Its events carry it, and each attempt's
-- program gets it with the same trace id and a span id of its own.
alter table build_job add column traceparent text;

-- An endpoint an admin registered: job events of one user (or of every user, user_id null) and of
-- the types it wants (event_types a JSON array of type names; null: every type) are delivered to
-- url, signed with each of its secrets (one, or two while a secret rotates). Lists are jsonb, not
-- arrays: the Data API takes no array parameters.
create table build_webhook_endpoint (
  id          bigint generated always as identity primary key,
  name        text not null unique,
  url         text not null,
  user_id     text,
  event_types jsonb check (event_types is null or jsonb_typeof(event_types) = 'array'),
  secrets     jsonb not null check (jsonb_typeof(secrets) = 'array'
                                    and jsonb_array_length(secrets) between 1 and 2),
  created_at  timestamptz not null,
  updated_at  timestamptz not null
);

-- One job event owed to one endpoint, made when the outbox publishes the event (the settle), and
-- its delivery log. pending: tried at next_attempt_at, after every earlier pending delivery of the
-- same job to the same endpoint was acknowledged; delivered: the endpoint answered 2xx; dead: it
-- did not within the bound (WebhookDeliveries.MAX_AGE from the first attempt), until a replay.
create table build_webhook_delivery (
  id               bigint generated always as identity primary key,
  endpoint_id      bigint not null references build_webhook_endpoint (id) on delete cascade,
  event_id         bigint not null references build_job_event (id) on delete cascade,
  job_id           bigint not null,
  status           text not null default 'pending'
                   check (status in ('pending', 'delivered', 'dead')),
  attempts         integer not null default 0,
  created_at       timestamptz not null,
  first_attempt_at timestamptz,
  last_attempt_at  timestamptz,
  next_attempt_at  timestamptz,
  claimed_until    timestamptz,
  last_status      integer,
  last_error       text,
  delivered_at     timestamptz,
  unique (endpoint_id, event_id),
  check ((status = 'pending') = (next_attempt_at is not null)),
  check ((status = 'delivered') = (delivered_at is not null))
);

-- The deliverer's claim: pending deliveries by when they are due.
create index build_webhook_delivery_due on build_webhook_delivery (next_attempt_at) where status = 'pending';
-- Order per job: whether an earlier delivery of the same job to the same endpoint still waits.
create index build_webhook_delivery_order on build_webhook_delivery (endpoint_id, job_id, event_id)
  where status = 'pending';
-- The delivery log of an endpoint, newest first; also the foreign key's lookups.
create index build_webhook_delivery_log on build_webhook_delivery (endpoint_id, id);
create index build_webhook_delivery_event on build_webhook_delivery (event_id);

-- V011's build_outbox_claim, with the job's traceparent in each event (EventBridge's detail). The
-- only change is the one field.
create or replace function build_outbox_claim(p_now timestamptz, p_claim_ms bigint, p_limit integer)
returns text
language plpgsql volatile set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
  -- Of the calling statement row of 64,000 bytes: its other columns are ids, counts and short texts.
  v_budget constant integer := 48000;
  v_events text;
begin
  with candidate as (
    select c.id from build_job_event c
    where c.published_at is null
      and (c.publish_claimed_until is null or c.publish_claimed_until <= v_now)
    order by c.id
    limit p_limit
    for update skip locked
  ),
  shaped as (
    select e.id, json_build_object('id', e.id, 'jobId', e.job_id, 'userId', j.user_id, 'kind', j.kind,
                                   'type', e.type, 'message', e.detail ->> 'message',
                                   'atMicros', (extract(epoch from e.at) * 1000000)::bigint,
                                   'traceparent', j.traceparent) as event
    from candidate k join build_job_event e on e.id = k.id join build_job j on j.id = e.job_id
  ),
  fitting as (
    select s.id, s.event,
           sum(octet_length(s.event::text) + 1) over (order by s.id) as running_bytes
    from shaped s
  ),
  claimed as (
    update build_job_event e set publish_claimed_until = v_now + p_claim_ms * interval '1 millisecond'
    from fitting f
    where e.id = f.id and f.running_bytes <= v_budget
    returning e.id
  )
  select json_agg(f.event order by f.id)::text
  into v_events
  from fitting f join claimed c on c.id = f.id;
  return v_events;
end;
$$;

-- A running job's traceparent for its worker, fenced like every worker statement (its id, its token,
-- running, before the lease, the job its own). Called only by a worker that runs a program, once per
-- attempt, to give the program TRACEPARENT (docs/architecture.md "Trace context").
create function build_worker_job_traceparent(p_worker_id bigint, p_token uuid, p_job_id bigint,
                                             p_now timestamptz)
returns text
language plpgsql stable security definer set search_path = public, pg_temp
set plan_cache_mode = force_generic_plan as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  v_traceparent text;
begin
  select j.traceparent into v_traceparent
  from build_job j join build_worker w on w.id = j.worker_id
  where j.id = p_job_id and j.status = 'running'
    and w.id = p_worker_id and w.token = p_token and w.status = 'running'
    and w.expires_at > v_now;
  return v_traceparent;
end;
$$;

revoke all on function build_worker_job_traceparent(bigint, uuid, bigint, timestamptz) from public;
grant execute on function build_worker_job_traceparent(bigint, uuid, bigint, timestamptz) to buildqueue_worker;
