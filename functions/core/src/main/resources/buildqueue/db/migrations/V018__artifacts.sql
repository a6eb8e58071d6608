-- Artifacts published exactly once (docs/architecture.md, Artifacts). A job's files become its
-- artifacts only in the statement that ends it as succeeded, fenced by its worker's token: an
-- attempt fenced off never publishes. An attempt that uploads is recorded first, so that its files
-- are found and removed if it never publishes (its worker killed between upload and end), without a
-- statement for a job that has none.

-- A job's published files, one row each, written only by build_worker_end_publishing. No foreign
-- key: the housekeeping deletes finished jobs after the retention, and the artifact sweep then
-- removes their files and these rows.
create table build_job_artifact (
  job_id       bigint not null,
  name         text not null,
  bytes        bigint not null check (bytes >= 0),
  sha256       text not null,
  attempt      integer not null,
  worker_id    bigint not null,
  published_at timestamptz not null,
  primary key (job_id, name)
);

-- Attempts that may have uploaded files and have not published them: inserted (fenced) before the
-- first upload, deleted by the end that publishes, or by the artifact sweep once the attempt can no
-- longer publish (its job is no longer running on its worker).
create table build_artifact_upload (
  job_id     bigint not null,
  attempt    integer not null,
  worker_id  bigint not null,
  started_at timestamptz not null,
  primary key (job_id, attempt, worker_id)
);

-- The worker's job is running on it (token, status, lease, as build_worker_check_in fences): record
-- that this attempt uploads. Answers the attempt (the job's own count, not the worker's word); no
-- row means fenced off, and the worker uploads nothing.
create function build_worker_stage_artifacts(p_worker_id bigint, p_token uuid, p_job_id bigint,
                                             p_now timestamptz)
returns table (attempt integer)
language plpgsql volatile security definer set search_path = public, pg_temp as $$
#variable_conflict use_column
declare
  v_now timestamptz := coalesce(p_now, now());
begin
  return query
  insert into build_artifact_upload as u (job_id, attempt, worker_id, started_at)
  select j.id, j.attempts, p_worker_id, v_now
  from build_job j join build_worker w on w.id = j.worker_id
  where j.id = p_job_id and j.worker_id = p_worker_id and j.status = 'running'
    and w.token = p_token and w.status = 'running' and w.expires_at > v_now
  on conflict (job_id, attempt, worker_id) do update set started_at = excluded.started_at
  returning u.attempt;
end;
$$;

-- build_worker_end, and when it ended the job as succeeded (fenced in: the same token, status and
-- lease checks, in the same statement) the attempt's files become the job's artifacts and the
-- attempt's upload record goes. Fenced off, it writes nothing: the files stay unpublished, for
-- the worker (at once) and the sweep (later) to remove.
create function build_worker_end_publishing(p_worker_id bigint, p_token uuid, p_job_id bigint, p_status text,
                                            p_error text, p_progress integer, p_log_tail text, p_log_bytes bigint,
                                            p_log_location text, p_chain_window_ms bigint,
                                            p_deadline_margin_ms bigint, p_linger boolean, p_fair boolean,
                                            p_artifacts jsonb, p_now timestamptz)
returns table (fenced_in bigint, drained bigint, id bigint, user_id text, kind text, payload jsonb,
               progress integer, attempts integer, cancel_requested boolean)
language plpgsql volatile security definer set search_path = public, pg_temp as $$
declare
  v_now timestamptz := coalesce(p_now, now());
  r record;
begin
  for r in select * from build_worker_end(p_worker_id, p_token, p_job_id, p_status, p_error, p_progress,
                                          p_log_tail, p_log_bytes, p_log_location, p_chain_window_ms,
                                          p_deadline_margin_ms, p_linger, p_fair, v_now) loop
    if r.fenced_in = 1 and p_status = 'succeeded' then
      with attempt as (
        delete from build_artifact_upload u
        using build_job j
        where u.job_id = p_job_id and u.worker_id = p_worker_id
          and j.id = p_job_id and u.attempt = j.attempts
        returning u.attempt
      )
      insert into build_job_artifact (job_id, name, bytes, sha256, attempt, worker_id, published_at)
      select p_job_id, a.name, a.bytes, a.sha256, t.attempt, p_worker_id, v_now
      from attempt t, jsonb_to_recordset(coalesce(p_artifacts, '[]'::jsonb)) as a(name text, bytes bigint, sha256 text);
    end if;
    fenced_in := r.fenced_in;
    drained := r.drained;
    id := r.id;
    user_id := r.user_id;
    kind := r.kind;
    payload := r.payload;
    progress := r.progress;
    attempts := r.attempts;
    cancel_requested := r.cancel_requested;
    return next;
  end loop;
end;
$$;

-- A follow-up that names a parent's artifacts ({"artifactsOf": <jobId>} in its payload): the
-- parent's published files, only for the worker's own running job (fenced) and only when the parent
-- is a succeeded job of the same user. No row: fenced off, or no such parent, or it has none.
create function build_worker_parent_artifacts(p_worker_id bigint, p_token uuid, p_job_id bigint,
                                              p_parent_id bigint, p_now timestamptz)
returns table (name text, bytes bigint, sha256 text, attempt integer, worker_id bigint)
language plpgsql stable security definer set search_path = public, pg_temp as $$
declare
  v_now timestamptz := coalesce(p_now, now());
begin
  return query
  select a.name, a.bytes, a.sha256, a.attempt, a.worker_id
  from build_job j
  join build_worker w on w.id = j.worker_id
  join build_job p on p.id = p_parent_id and p.user_id = j.user_id and p.status = 'succeeded'
  join build_job_artifact a on a.job_id = p.id
  where j.id = p_job_id and j.worker_id = p_worker_id and j.status = 'running'
    and w.token = p_token and w.status = 'running' and w.expires_at > v_now
  order by a.name;
end;
$$;

revoke all on function build_worker_stage_artifacts(bigint, uuid, bigint, timestamptz) from public;
revoke all on function build_worker_end_publishing(bigint, uuid, bigint, text, text, integer, text, bigint, text, bigint, bigint, boolean, boolean, jsonb, timestamptz) from public;
grant execute on function build_worker_stage_artifacts(bigint, uuid, bigint, timestamptz) to buildqueue_worker;
grant execute on function build_worker_end_publishing(bigint, uuid, bigint, text, text, integer, text, bigint, text, bigint, bigint, boolean, boolean, jsonb, timestamptz) to buildqueue_worker;
revoke all on function build_worker_parent_artifacts(bigint, uuid, bigint, bigint, timestamptz) from public;
grant execute on function build_worker_parent_artifacts(bigint, uuid, bigint, bigint, timestamptz) to buildqueue_worker;
