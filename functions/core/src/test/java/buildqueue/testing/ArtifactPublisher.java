package buildqueue.testing;

import buildqueue.db.Database;
import buildqueue.db.Params;
import java.util.List;

/**
 * An attempt that published a job's artifacts, and its worker: each row of {@code
 * build_job_artifact} names them. A job that succeeded has exactly one (docs/architecture.md
 * §5.10); the end-to-end tests check it is the attempt that ended the job, not one killed after its
 * upload.
 */
public record ArtifactPublisher(int attempt, long workerId) {
  public static List<ArtifactPublisher> of(Database db, long jobId) {
    return db
        .query(
            "select distinct attempt, worker_id from build_job_artifact where job_id = :id"
                + " order by attempt, worker_id",
            Params.of("id", jobId))
        .stream()
        .map(r -> new ArtifactPublisher(r.intValue("attempt"), r.longValue("worker_id")))
        .toList();
  }
}
