package buildqueue.core;

import buildqueue.core.JobQueries.JobArtifacts;
import buildqueue.core.JobQueries.PublishedArtifact;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A job's published artifacts with its owner, as {@link JobQueries#artifacts} reads them: at most
 * {@code ArtifactLimits.GLOBAL.maxFiles()} rows of a name, two numbers and a hash, far under the
 * Data API's 1 MiB.
 */
record ArtifactReads(Database db) {
  private static final String ARTIFACTS =
      """
      select j.id, j.user_id, j.status, a.name, a.bytes, a.sha256, a.attempt, a.worker_id
      from build_job j
      left join build_job_artifact a on a.job_id = j.id
      where j.id = :id
      order by a.name
      """;

  Optional<JobArtifacts> artifacts(long jobId) {
    List<Row> rows = db.query(ARTIFACTS, Params.of("id", jobId));
    if (rows.isEmpty()) {
      return Optional.empty();
    }
    List<PublishedArtifact> files = new ArrayList<>();
    for (Row r : rows) {
      if (r.get("name") != null) {
        files.add(
            new PublishedArtifact(
                r.string("name"),
                r.longValue("bytes"),
                r.string("sha256"),
                r.intValue("attempt"),
                r.longValue("worker_id")));
      }
    }
    Row first = rows.get(0);
    return Optional.of(
        new JobArtifacts(
            first.longValue("id"),
            first.string("user_id"),
            JobStatus.of(first.string("status")),
            List.copyOf(files)));
  }
}
