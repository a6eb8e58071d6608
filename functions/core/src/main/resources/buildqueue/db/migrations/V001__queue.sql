-- The queue's schema; the states and transitions are drawn in README.md ("How it works").
-- Immutable once released: change the schema with a new numbered file.

create table build_user (
  user_id          text primary key,
  dedicated_worker boolean not null default false,
  updated_at       timestamptz not null default now()
);

create table build_worker (
  id           bigserial primary key,
  lane         text not null,
  slot         text not null,
  token        uuid not null,
  status       text not null default 'launching'
               check (status in ('launching', 'running', 'draining', 'exited')),
  task_id      text,
  expires_at   timestamptz not null,
  checked_at   timestamptz,
  launched_at  timestamptz not null,
  started_at   timestamptz,
  exited_at    timestamptz,
  exit_reason  text,
  check ((status = 'exited') = (exited_at is not null))
);

-- The slot semaphore: at most one worker that is not known to have exited per slot, enforced by
-- PostgreSQL rather than by code. A second dispatcher's insert fails with 23505 and backs off.
create unique index build_worker_live_slot on build_worker (slot) where status <> 'exited';
create index build_worker_task on build_worker (task_id) where task_id is not null;
create index build_worker_live on build_worker (lane) where status <> 'exited';
create index build_worker_exited on build_worker (exited_at) where status = 'exited';

create table build_job (
  id               bigserial primary key,
  user_id          text not null,
  kind             text not null,
  payload          jsonb not null default '{}',
  idempotency_key  text,
  lane             text not null,
  status           text not null default 'queued'
                   check (status in ('queued', 'dispatched', 'running', 'succeeded', 'failed', 'cancelled')),
  worker_id        bigint references build_worker (id) on delete set null,
  progress         integer not null default 0,
  checkpoint       integer not null default 0,
  recoveries       integer not null default 0,
  attempts         integer not null default 0,
  launch_failures  integer not null default 0,
  not_before       timestamptz,
  cancel_requested boolean not null default false,
  error            text,
  created_at       timestamptz not null,
  dispatched_at    timestamptz,
  started_at       timestamptz,
  finished_at      timestamptz,
  unique (user_id, idempotency_key),
  check ((status in ('succeeded', 'failed', 'cancelled')) = (finished_at is not null)),
  check (status <> 'failed' or error is not null),
  check (status not in ('dispatched', 'running') or worker_id is not null)
);

-- "The oldest queued job of lane L": FIFO by id, so a requeued job (same id) is back at the head.
create index build_job_queued on build_job (lane, id) where status = 'queued';
-- A job on a worker: the interrupted-job lookup when a worker exits, and the fence.
create index build_job_on_worker on build_job (worker_id) where status in ('dispatched', 'running');
create index build_job_user on build_job (user_id, id);
create index build_job_finished on build_job (finished_at) where finished_at is not null;

-- The job's history, one row per transition, written by the transition's own statement. It is
-- also the outbox from which job state changes are published (published_at is set once sent).
create table build_job_event (
  id           bigserial primary key,
  job_id       bigint not null references build_job (id) on delete cascade,
  type         text not null,
  detail       jsonb not null default '{}',
  at           timestamptz not null,
  published_at timestamptz
);

create index build_job_event_job on build_job_event (job_id, id);
create index build_job_event_unpublished on build_job_event (id) where published_at is null;

-- The lane a user's new jobs wait in. One definition, used by enqueue and follow-up jobs.
create function build_lane_of(p_user_id text) returns text
language sql stable as $$
  select case when coalesce((select u.dedicated_worker from build_user u where u.user_id = p_user_id), false)
              then 'user:' || p_user_id else 'shared' end
$$;
