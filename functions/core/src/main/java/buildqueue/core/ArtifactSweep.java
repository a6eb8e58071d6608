package buildqueue.core;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;

/**
 * Removes the files nobody will publish or read (docs/architecture.md, Artifacts): an attempt that
 * recorded its upload ({@code build_artifact_upload}) but whose job is no longer running on it and
 * whose worker has exited (killed between upload and end, or its end refused and its own removal
 * lost), and a published job's files once the housekeeping deleted the job after the retention. The
 * worker removes its own uploads when its end is refused; this catches what it could not. A job
 * without artifacts never appears here, so the plain path pays nothing.
 */
public final class ArtifactSweep {
  private static final System.Logger LOG = System.getLogger(ArtifactSweep.class.getName());

  /** At most this many attempts per pass. */
  public static final int BATCH = 100;

  /**
   * An upload record's worker must have exited: a worker fenced off but still alive may still be
   * putting files, and its record must outlive it. Published rows go once their job is gone. The
   * first half is the tick survey's {@code artifacts_to_sweep} ({@link TickTransitions#survey}).
   */
  private static final String CLAIM =
      """
      select u.job_id, u.attempt, u.worker_id, false as published
      from build_artifact_upload u
      left join build_job j on j.id = u.job_id
      where (j.id is null or j.status <> 'running' or j.worker_id is distinct from u.worker_id
             or j.attempts <> u.attempt)
        and not exists (select 1 from build_worker w where w.id = u.worker_id and w.status <> 'exited')
      union all
      select a.job_id, a.attempt, a.worker_id, true as published
      from build_job_artifact a
      where not exists (select 1 from build_job j where j.id = a.job_id)
      group by a.job_id, a.attempt, a.worker_id
      limit :limit
      """;

  private static final String FORGET =
      """
      with done as (
        select d.job_id, d.attempt, d.worker_id, d.published
        from jsonb_to_recordset(:done::jsonb) as d(job_id bigint, attempt integer, worker_id bigint, published boolean)
      ),
      uploads as (
        delete from build_artifact_upload u using done d
        where not d.published and u.job_id = d.job_id and u.attempt = d.attempt and u.worker_id = d.worker_id
        returning 1
      ),
      published as (
        delete from build_job_artifact a using done d
        where d.published and a.job_id = d.job_id and a.attempt = d.attempt and a.worker_id = d.worker_id
          and not exists (select 1 from build_job j where j.id = a.job_id)
        returning 1
      )
      select (select count(*) from uploads) as uploads, (select count(*) from published) as published
      """;

  private final Database db;
  private final ArtifactStore store;

  public ArtifactSweep(Database db, ArtifactStore store) {
    this.db = db;
    this.store = store;
  }

  /**
   * One pass: removes the files of up to {@link #BATCH} attempts, then forgets them (after the
   * removal, so a crash between the two only removes again). Answers how many attempts it removed.
   */
  public int sweep() {
    List<Row> due = db.query(CLAIM, Params.of("limit", BATCH));
    if (due.isEmpty()) {
      return 0;
    }
    StringBuilder done = new StringBuilder("[");
    int removed = 0;
    for (Row r : due) {
      AttemptKey key =
          new AttemptKey(r.longValue("job_id"), r.intValue("attempt"), r.longValue("worker_id"));
      try {
        store.removeAttempt(key);
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.WARNING, "could not remove " + key.prefix() + " (next pass retries): " + e);
        continue;
      }
      done.append(removed++ == 0 ? "" : ",")
          .append("{\"job_id\":")
          .append(key.jobId())
          .append(",\"attempt\":")
          .append(key.attempt())
          .append(",\"worker_id\":")
          .append(key.workerId())
          .append(",\"published\":")
          .append(r.bool("published"))
          .append('}');
    }
    if (removed > 0) {
      db.query(FORGET, Params.of("done", new Json(done.append(']').toString())));
    }
    return removed;
  }

  /** Every attempt's files a pass would remove now, for tests and the fault simulation. */
  public List<AttemptKey> due() {
    List<AttemptKey> keys = new ArrayList<>();
    for (Row r : db.query(CLAIM, Params.of("limit", BATCH))) {
      keys.add(
          new AttemptKey(r.longValue("job_id"), r.intValue("attempt"), r.longValue("worker_id")));
    }
    return keys;
  }
}
