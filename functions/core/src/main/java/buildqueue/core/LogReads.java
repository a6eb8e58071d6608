package buildqueue.core;

import buildqueue.core.JobQueries.JobLogView;
import buildqueue.db.Database;
import buildqueue.db.Params;
import java.util.Optional;

/** A job's log tail with its owner and status, as {@link JobQueries#log} reads it. */
record LogReads(Database db) {
  private static final String LOG =
      """
      select j.id, j.user_id, j.status, l.tail, l.total_bytes, l.location, l.updated_at
      from build_job j
      left join build_job_log l on l.job_id = j.id
      where j.id = :id
      """;

  Optional<JobLogView> log(long jobId) {
    return db.queryOptional(LOG, Params.of("id", jobId))
        .map(
            r ->
                new JobLogView(
                    r.longValue("id"),
                    r.string("user_id"),
                    JobStatus.of(r.string("status")),
                    r.get("tail") == null ? "" : r.string("tail"),
                    r.longOr("total_bytes", 0),
                    r.string("location"),
                    r.instant("updated_at")));
  }
}
