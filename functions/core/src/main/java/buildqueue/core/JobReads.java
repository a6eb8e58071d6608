package buildqueue.core;

import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobQueries.LogSummary;
import buildqueue.core.JobQueries.Turns;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.Optional;

/**
 * One job as {@link JobQueries#job} reads it: its row, its log's summary and its place in line.
 * {@link JobListReads} reads pages of jobs with the same columns.
 */
record JobReads(Database db, QueueConfig config) {
  /**
   * A queued job's place in a lane that takes turns by user ({@link LaneTurns}), as a lateral join
   * on job {@code j}: with {@code :fair} and {@code j} queued in the shared lane, one row; else
   * none. A retry goes after the older retries. Any other job is the user's k-th ({@code own_ahead}
   * + 1, in the user's order: priority, then age): every retry goes first, then in each round every
   * other user with queued jobs is served once in turn order, so a user whose turn comes before
   * this user's takes up to k of its jobs before it, one whose turn comes after up to k − 1. Costs
   * one probe per waiting user, and up to k index entries each.
   */
  static final String PLACE =
      """
      left join lateral (
        select p.retry, p.own_ahead, o.users_ahead, o.others_waiting,
               case when p.retry then p.retries_before + 1
                    else p.retries + p.own_ahead + o.jobs_ahead + 1 end as position
        from (
          select j.attempts > 0 as retry,
                 (select count(*) from build_job q
                  where q.lane = j.lane and q.status = 'queued' and q.attempts > 0 and q.id < j.id) as retries_before,
                 (select count(*) from build_job q
                  where q.lane = j.lane and q.status = 'queued' and q.attempts > 0) as retries,
                 (select count(*) from build_job q
                  where q.user_id = j.user_id and q.lane = j.lane and q.status = 'queued' and q.attempts = 0
                    and (q.priority, -q.id) > (j.priority, -j.id)) as own_ahead,
                 coalesce((select u.turn from build_lane_turn u where u.lane = j.lane and u.user_id = j.user_id), 0)
                   as turn
        ) p
        cross join lateral (
          select count(*) filter (where x.has and x.before) as users_ahead,
                 count(*) filter (where x.has) as others_waiting,
                 coalesce(sum(x.n), 0)::bigint as jobs_ahead
          from (
            select exists (select 1 from build_job q
                           where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued' and q.attempts = 0)
                     as has,
                   (u.turn, u.user_id) < (p.turn, j.user_id) as before,
                   (select count(*) from (
                      select 1 from build_job q
                      where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued' and q.attempts = 0
                      limit p.own_ahead + case when (u.turn, u.user_id) < (p.turn, j.user_id) then 1 else 0 end) c)
                     as n
            from build_lane_turn u
            where u.lane = j.lane and u.waiting and u.user_id <> j.user_id
          ) x
        ) o
        where :fair and j.status = 'queued' and j.lane = 'shared'
      ) fair on true""";

  /**
   * A job's columns as {@link #jobView} reads them, over job {@code j}, its log {@code l} and its
   * {@link #PLACE} {@code fair}: one list for {@link #JOB} and {@link JobListReads#JOBS}.
   */
  static final String JOB_COLUMNS =
      """
      j.id, j.user_id, j.kind, j.payload, j.status, j.lane, j.progress, j.attempts, j.recoveries,
        j.cancel_requested, j.error, j.worker_id, j.created_at, j.dispatched_at, j.started_at,
        j.finished_at, j.not_before, j.supersede_key, j.superseded_by, j.priority, j.retry_of, j.retried_by,
        l.total_bytes as log_bytes,
        l.location as log_location, l.updated_at as log_updated_at,
        case when j.status = 'queued' and fair.retry is null then
          (select count(*) + 1 from build_job q
           where q.lane = j.lane and q.status = 'queued' and (q.priority, -q.id) > (j.priority, -j.id))
        when j.status = 'queued' then fair.position end as position,
        fair.retry as turn_retry, fair.own_ahead as turn_own_ahead, fair.users_ahead as turn_users_ahead,
        fair.others_waiting as turn_others_waiting,
        %s as cost_lines"""
          .formatted(Cost.linesSql("c.job_id = j.id"));

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String JOB =
      """
      select %s
      from build_job j
      left join build_job_log l on l.job_id = j.id
      %s
      where j.id = :id
      """
          .formatted(JOB_COLUMNS, PLACE);

  /** Whether the shared lane takes turns by user, as {@link #PLACE}'s {@code :fair} asks. */
  boolean fair() {
    return config.takesTurns(Lanes.SHARED);
  }

  Optional<JobView> job(long id) {
    return db.queryOptional(JOB, Params.of("id", id).and("fair", fair())).map(JobReads::jobView);
  }

  static JobView jobView(Row r) {
    Long position = r.longValue("position");
    return new JobView(
        r.longValue("id"),
        r.string("user_id"),
        r.string("kind"),
        r.json("payload"),
        JobStatus.of(r.string("status")),
        r.string("lane"),
        position == null ? null : Math.toIntExact(position),
        r.intValue("progress"),
        r.intValue("attempts"),
        r.intValue("recoveries"),
        r.bool("cancel_requested"),
        r.string("error"),
        r.longValue("worker_id"),
        r.instant("created_at"),
        r.instant("dispatched_at"),
        r.instant("started_at"),
        r.instant("finished_at"),
        r.instant("not_before"),
        r.get("log_bytes") == null
            ? Optional.empty()
            : Optional.of(
                new LogSummary(
                    r.longValue("log_bytes"),
                    r.string("log_location"),
                    r.instant("log_updated_at"))),
        r.string("supersede_key"),
        r.longValue("superseded_by"),
        r.intValue("priority"),
        r.longValue("retry_of"),
        r.longValue("retried_by"),
        r.get("turn_retry") == null
            ? Optional.empty()
            : Optional.of(
                new Turns(
                    r.bool("turn_retry"),
                    r.intValue("turn_own_ahead"),
                    r.intValue("turn_users_ahead"),
                    r.intValue("turn_others_waiting"))),
        Cost.parse(r.string("cost_lines")));
  }
}
