-- Idle at zero (docs/architecture.md §4.5): the scheduled tick leaves the database alone while the queue has no
-- work, so Aurora Serverless v2 can pause. One row says whether the tick's schedule is armed. The
-- first statement that creates work after idle (the enqueue) flips it to true and tells its caller
-- to arm the schedule; a tick that finds no work turns the schedule off and then clears the flag
-- with build_tick_disarm below. docs/architecture.md, "Idle at zero", proves the interleavings.
create table build_tick_arm (
  id    integer primary key default 1 check (id = 1),
  armed boolean not null default true
);
-- Armed: a database that already holds work when this migration runs keeps its tick.
insert into build_tick_arm (id, armed) values (1, true);

-- Clears the flag when, and only when, the queue has no work: no queued job, no worker that is not
-- exited, no job event waiting to be published. True when it cleared it (or found it clear).
--
-- Why a table lock: the enqueue reads the flag without a lock (an armed queue's enqueues take no
-- common row, so they never wait on each other), and flips it only when it reads it clear. A check
-- in this statement's own snapshot could miss a job committed after that snapshot was taken by an
-- enqueue that, started earlier, read the flag still set: both would commit and the job would wait
-- for the fallback. So the check runs after locking the three tables in SHARE mode, which waits for
-- no writer (NOWAIT: one in flight means work may be arriving; answer false, the next tick tries
-- again) and makes every later writer wait until this commits. A plpgsql statement in a volatile
-- function takes a new snapshot, so the check sees every write committed before the lock; a
-- writer that waited sees the flag clear in its own statement, whose snapshot is taken after its
-- table locks, and flips it. The lock is held only for the index probes below.
create function build_tick_disarm()
returns boolean
language plpgsql volatile set search_path = public, pg_temp as $$
begin
  begin
    lock table build_job, build_worker, build_job_event in share mode nowait;
  exception when lock_not_available then
    return false;
  end;
  if exists (select 1 from build_job where status = 'queued')
     or exists (select 1 from build_worker where status <> 'exited')
     or exists (select 1 from build_job_event where published_at is null) then
    return false;
  end if;
  update build_tick_arm set armed = false where armed;
  return true;
end;
$$;

-- Like every queue function: only the queue's own role calls it (the worker role never does).
revoke all on function build_tick_disarm() from public;
