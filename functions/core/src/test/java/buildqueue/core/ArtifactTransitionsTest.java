package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.artifacts.ArtifactStore.StoredArtifact;
import buildqueue.artifacts.DirectoryArtifactStore;
import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Artifacts are published only by the statement that ends the job as succeeded, fenced by the
 * worker's token (V018): the test plays the worker, as the worker role, and uploads to a real
 * directory store (docs/architecture.md §5.10).
 */
@ExtendWith(PostgresExtension.class)
class ArtifactTransitionsTest {

  private record Running(WorkerLaunch worker, long job) {}

  private static Running start(QueueHarness h, String user) {
    long job = h.submit(user, "noop", "{}");
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token()).orElseThrow();
    return new Running(w, job);
  }

  /** Stages the attempt and puts three files, as the worker does before its end. */
  private static Json upload(QueueHarness h, DirectoryArtifactStore store, Running r, Path scratch)
      throws Exception {
    OptionalInt attempt =
        h.workers.stageArtifacts(r.worker().workerId(), r.worker().token(), r.job());
    assertThat(attempt).hasValue(1);
    AttemptKey key = new AttemptKey(r.job(), attempt.getAsInt(), r.worker().workerId());
    StringBuilder json = new StringBuilder("[");
    for (String name : List.of("a.txt", "dist/b.bin", "c")) {
      Path f = scratch.resolve(name.replace('/', '_'));
      Files.writeString(f, "content of " + name);
      StoredArtifact s = store.put(key, name, f);
      json.append(json.length() > 1 ? "," : "")
          .append("{\"name\":\"")
          .append(s.name())
          .append("\",\"bytes\":")
          .append(s.bytes())
          .append(",\"sha256\":\"")
          .append(s.sha256())
          .append("\"}");
    }
    return new Json(json.append(']').toString());
  }

  private static long count(QueueHarness h, String table, long job) {
    return h.testDb
        .jdbc()
        .query("select count(*) as n from " + table + " where job_id = :id", Params.of("id", job))
        .get(0)
        .longValue("n");
  }

  @Test
  void the_succeeding_end_publishes_the_attempts_files_in_its_own_statement(
      TestDatabase tdb, @TempDir Path dir) throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    DirectoryArtifactStore store = new DirectoryArtifactStore(dir.resolve("store"));
    Running r = start(h, "alice");
    Json files = upload(h, store, r, Files.createDirectories(dir.resolve("scratch")));
    long before = h.db.statements();

    Ended ended =
        h.workers.endPublishing(r.worker().workerId(), r.worker().token(), r.job(), files, 3, null);

    assertThat(ended).isInstanceOf(Ended.Drained.class);
    assertThat(h.db.statements() - before).isEqualTo(1);
    assertThat(h.status(r.job())).isEqualTo("succeeded");
    JobQueries.JobArtifacts listed =
        new JobQueries(h.db, h.config, h.clock).artifacts(r.job()).orElseThrow();
    assertThat(listed.artifacts())
        .extracting(JobQueries.PublishedArtifact::name)
        .containsExactly("a.txt", "c", "dist/b.bin");
    assertThat(listed.artifacts())
        .allSatisfy(
            a -> {
              assertThat(a.attempt()).isEqualTo(1);
              assertThat(a.workerId()).isEqualTo(r.worker().workerId());
            });
    assertThat(count(h, "build_artifact_upload", r.job())).isZero();
    // Published files are the job's: the sweep leaves them while the job exists.
    assertThat(new ArtifactSweep(h.db, store).sweep()).isZero();
    assertThat(store.isEmpty()).isFalse();
  }

  @Test
  void a_fenced_off_workers_late_end_publishes_nothing_and_the_sweep_removes_its_files(
      TestDatabase tdb, @TempDir Path dir) throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    DirectoryArtifactStore store = new DirectoryArtifactStore(dir.resolve("store"));
    Running r = start(h, "alice");
    Json files = upload(h, store, r, Files.createDirectories(dir.resolve("scratch")));
    // Its exit is recorded (lease lost, task gone): the job goes back to its lane.
    h.queue.taskStopped(null, r.worker().workerId(), r.worker().token(), "exited");
    assertThat(h.status(r.job())).isIn("queued", "dispatched");

    Ended late =
        h.workers.endPublishing(r.worker().workerId(), r.worker().token(), r.job(), files, 3, null);

    assertThat(late).isInstanceOf(Ended.FencedOff.class);
    assertThat(count(h, "build_job_artifact", r.job())).isZero();
    assertThat(h.status(r.job())).isNotEqualTo("succeeded");
    ArtifactSweep sweep = new ArtifactSweep(h.db, store);
    assertThat(sweep.due()).containsExactly(new AttemptKey(r.job(), 1, r.worker().workerId()));
    assertThat(sweep.sweep()).isEqualTo(1);
    assertThat(store.isEmpty()).isTrue();
    assertThat(count(h, "build_artifact_upload", r.job())).isZero();
  }

  @Test
  void a_failed_or_cancelled_end_publishes_nothing(TestDatabase tdb, @TempDir Path dir)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    DirectoryArtifactStore store = new DirectoryArtifactStore(dir.resolve("store"));
    Running r = start(h, "alice");
    upload(h, store, r, Files.createDirectories(dir.resolve("scratch")));

    h.workers.end(r.worker().workerId(), r.worker().token(), r.job(), JobStatus.FAILED, "no");

    assertThat(count(h, "build_job_artifact", r.job())).isZero();
    // Its worker is still live: a fenced-off worker may still be putting files, so the record
    // stays until the worker's exit is recorded.
    ArtifactSweep sweep = new ArtifactSweep(h.db, store);
    assertThat(sweep.due()).isEmpty();
    h.queue.taskStopped(null, r.worker().workerId(), r.worker().token(), "exited");
    assertThat(sweep.sweep()).isEqualTo(1);
    assertThat(store.isEmpty()).isTrue();
  }

  @Test
  void staging_is_fenced_too(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Running r = start(h, "alice");
    h.queue.taskStopped(null, r.worker().workerId(), r.worker().token(), "exited");

    assertThat(h.workers.stageArtifacts(r.worker().workerId(), r.worker().token(), r.job()))
        .isEmpty();
    assertThat(count(h, "build_artifact_upload", r.job())).isZero();
  }

  @Test
  void a_jobs_artifacts_are_removed_with_the_job(TestDatabase tdb, @TempDir Path dir)
      throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    DirectoryArtifactStore store = new DirectoryArtifactStore(dir.resolve("store"));
    Running r = start(h, "alice");
    Json files = upload(h, store, r, Files.createDirectories(dir.resolve("scratch")));
    h.workers.endPublishing(r.worker().workerId(), r.worker().token(), r.job(), files, null, null);
    // What the housekeeping does after the retention.
    h.testDb
        .jdbc()
        .query("delete from build_job where id = :id returning id", Params.of("id", r.job()));

    assertThat(new ArtifactSweep(h.db, store).sweep()).isEqualTo(1);

    assertThat(store.isEmpty()).isTrue();
    assertThat(count(h, "build_job_artifact", r.job())).isZero();
  }
}
