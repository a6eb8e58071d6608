-- Tenants share the shared lane (design.md §12): turns by user, supersede, per-user quotas.

-- A user's own limit on queued jobs, or null for the queue's default (QueueConfig.maxQueuedJobs).
alter table build_user add column max_queued_jobs integer check (max_queued_jobs >= 1);

-- A job submitted with a supersede key cancels the same user's unfinished jobs with that key, and
-- each of them records the job that superseded it.
alter table build_job add column supersede_key text;
alter table build_job add column superseded_by bigint;

-- Whose turn it is in a lane that takes turns by user (the shared lane): the user with the
-- smallest turn among those waiting goes next, and its turn then becomes the newest served.
-- Served turns come from build_lane_turn_served (1, 2, 3 ...), and a user never served has a turn
-- below every served one, its first job's id less 2^62, so newcomers go first in the order they
-- came. Rows are kept when a user's jobs run out: a user who comes back keeps the place its last
-- turn gave it. `waiting` leaves out users the dispatch found without queued or running jobs, so
-- the choice never walks the idle ones, and `version` grows with every statement that queues a job for
-- the user, so that the dispatch never marks idle a user whose new job it could not see.
create table build_lane_turn (
  lane     text not null,
  user_id  text not null,
  turn     bigint not null,
  waiting  boolean not null default true,
  version  bigint not null default 0,
  primary key (lane, user_id)
);
create index build_lane_turn_next on build_lane_turn (lane, turn, user_id) where waiting;
create sequence build_lane_turn_served;

-- "The oldest queued job of user U in lane L", whether U has any job there at all, and how many
-- queued jobs U has (the quota: status is in the index so the count reads no table rows).
create index build_job_user_waiting on build_job (user_id, lane, id) include (status)
  where status in ('queued', 'dispatched', 'running');
-- "The oldest queued job of lane L that ran before": an interrupted job is retried first.
create index build_job_retry on build_job (lane, id) where status = 'queued' and attempts > 0;
-- The jobs a supersede key replaces.
create index build_job_supersede on build_job (user_id, supersede_key)
  where supersede_key is not null and status in ('queued', 'dispatched', 'running');

-- Jobs already queued in the shared lane take their first turns in the order they came.
insert into build_lane_turn (lane, user_id, turn)
select lane, user_id, min(id) - 4611686018427387904 from build_job
where status = 'queued' and lane = 'shared'
group by lane, user_id;
