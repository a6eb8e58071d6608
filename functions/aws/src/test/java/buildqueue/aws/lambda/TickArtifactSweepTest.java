package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.artifacts.S3ArtifactStore;
import buildqueue.aws.fake.S3Fake;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.TestContext;
import buildqueue.core.JobStatus;
import buildqueue.core.WorkerStatus;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The AWS tick sweeps what abandoned attempts left in the S3 artifact store (docs/architecture.md
 * §4.10), with the real SDK against {@link S3Fake}: an attempt whose worker exited between its
 * upload and its end loses its files and its upload record; a job the tick's housekeeping deleted
 * loses its published files; and a tick with nothing to sweep sends no statement and no S3 request
 * for it.
 */
@ExtendWith(PostgresExtension.class)
class TickArtifactSweepTest {
  private static final String BUCKET = "stack-artifactsbucket-1a2b";
  private static final Map<String, Object> SCHEDULE = TickFunctionTest.event("schedule-tick.json");

  private S3Fake s3;

  @BeforeEach
  void start() {
    s3 = S3Fake.start().createBucket(BUCKET);
  }

  @AfterEach
  void stop() {
    s3.close();
  }

  private QueueWorld world(TestDatabase tdb, Database db) {
    QueueWorld w = new QueueWorld(tdb, Component.TICK, db);
    w.services.withArtifacts(
        S3ArtifactStore.create(S3Fake.REGION, BUCKET, s3.endpoint(), S3Fake.credentials()));
    return w;
  }

  private static String tick(QueueWorld w) {
    return new TickFunction(() -> w.services)
        .handleRequest(SCHEDULE, TestContext.withTimeLeft(Duration.ofSeconds(55)));
  }

  private void files(AttemptKey attempt, String... names) {
    for (String name : names) {
      s3.seed(BUCKET, attempt.prefix() + name, name.getBytes(StandardCharsets.UTF_8));
    }
  }

  private static long count(Database db, String table) {
    return db.query("select count(*) as n from " + table).get(0).longValue("n");
  }

  @Test
  void a_tick_removes_the_files_and_the_upload_record_of_an_attempt_whose_worker_died_uploading(
      TestDatabase tdb) {
    Database db = tdb.jdbc();
    try (QueueWorld w = world(tdb, db)) {
      // A worker put two files, then died before its end: its exit sent the job back to its lane.
      long worker = Rows.worker().status(WorkerStatus.EXITED).insert(db);
      long job = Rows.job().attempts(1).insert(db);
      db.update(
          "insert into build_artifact_upload (job_id, attempt, worker_id, started_at)"
              + " values (:job, 1, :worker, now())",
          Params.of("job", job, "worker", worker));
      AttemptKey abandoned = new AttemptKey(job, 1, worker);
      files(abandoned, "dist/app.tar.gz", "report.txt");
      // Another job's published files are not the sweep's.
      AttemptKey published = new AttemptKey(job + 1, 1, worker);
      files(published, "kept.txt");

      tick(w);

      assertThat(s3.keys(BUCKET)).containsExactly(published.prefix() + "kept.txt");
      assertThat(count(db, "build_artifact_upload")).isZero();
      assertThat(w.metrics.last("tick").get("ArtifactsSwept").asLong()).isEqualTo(1);
    }
  }

  @Test
  void a_tick_whose_housekeeping_deleted_a_job_removes_its_published_files_and_rows(
      TestDatabase tdb) {
    Database db = tdb.jdbc();
    try (QueueWorld w = world(tdb, db)) {
      Instant longAgo =
          w.clock.now().minus(QueueHarness.testConfig().retention()).minus(Duration.ofHours(1));
      long worker = Rows.worker().status(WorkerStatus.EXITED).insert(db);
      long job =
          Rows.job().status(JobStatus.SUCCEEDED).worker(worker).finishedAt(longAgo).insert(db);
      Rows.event(job).published().insert(db);
      db.update(
          "insert into build_job_artifact (job_id, name, bytes, sha256, attempt, worker_id,"
              + " published_at) values (:job, 'out.txt', 7, :sha, 1, :worker, :at)",
          Params.of("job", job, "sha", "0".repeat(64), "worker", worker).and("at", longAgo));
      files(new AttemptKey(job, 1, worker), "out.txt");

      String report = tick(w);

      assertThat(report).contains("housekeptJobs=1");
      assertThat(s3.keys(BUCKET)).isEmpty();
      assertThat(count(db, "build_job_artifact")).isZero();
    }
  }

  @Test
  void a_tick_with_nothing_to_sweep_sends_no_statement_and_no_s3_request_for_it(TestDatabase tdb) {
    // A worker still alive (launched, not yet due for any check) that uploaded, and its job
    // cancelled meanwhile: not yet the sweep's, since the worker may still be putting files.
    Database db = tdb.jdbc();
    Instant now = Instant.parse("2026-12-01T10:00:00Z"); // QueueWorld's clock
    long worker =
        Rows.worker().lane("user:a").launchedAt(now).expiresAt(now.plusSeconds(3600)).insert(db);
    long job =
        Rows.job()
            .lane("user:a")
            .status(JobStatus.CANCELLED)
            .finishedAt(now)
            .attempts(1)
            .insert(db);
    db.update(
        "insert into build_artifact_upload (job_id, attempt, worker_id, started_at)"
            + " values (:job, 1, :worker, now())",
        Params.of("job", job, "worker", worker));
    files(new AttemptKey(job, 1, worker), "half.bin");

    CountingDatabase withStore = new CountingDatabase(db);
    CountingDatabase without = new CountingDatabase(db);
    try (QueueWorld w = world(tdb, withStore);
        QueueWorld plain = new QueueWorld(tdb, Component.TICK, without)) {
      tick(w);
      tick(plain);

      assertThat(withStore.statements())
          .as("the tick's statements with an artifact store, against without one")
          .isEqualTo(without.statements());
      assertThat(s3.requests()).isEmpty();
      assertThat(s3.keys(BUCKET)).hasSize(1);
      assertThat(count(db, "build_artifact_upload")).isEqualTo(1);
    }
  }
}
