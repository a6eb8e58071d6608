package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Database;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The tick's survey skips every part it finds nothing due in, so it must find due exactly what the
 * part's own claim would: a part it wrongly skips waits for the next tick that finds it, and a
 * survey that misses it every time leaves a dead worker's slot held. Each fixture puts one thing
 * due (or nearly due) in one part; every flag must agree with its part's claim made right after.
 */
@ExtendWith(PostgresExtension.class)
class TickSurveyTest {
  private static final QueueConfig CONFIG = QueueHarness.testConfig();
  private static final Instant NOW = Instant.now();
  private static final Instant LONG_AGO = NOW.minus(CONFIG.retention()).minus(Duration.ofHours(1));

  record Fixture(String name, Consumer<Database> rows) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Fixture> fixtures() {
    return Stream.of(
        new Fixture("an empty queue", db -> {}),
        new Fixture(
            "a worker not checked for two minutes",
            db ->
                Rows.worker()
                    .lane("user:a")
                    .task("task-a")
                    .runningSince(NOW.minus(Duration.ofMinutes(2)))
                    .insert(db)),
        new Fixture(
            "a worker checked just now",
            db -> Rows.worker().lane("user:a").task("task-a").runningSince(NOW).insert(db)),
        new Fixture(
            "a launch unresolved past the launch grace",
            db ->
                Rows.worker()
                    .lane("user:a")
                    .launchedAt(NOW.minus(Duration.ofMinutes(2)))
                    .insert(db)),
        new Fixture(
            "a launch within the launch grace",
            db -> Rows.worker().lane("user:a").launchedAt(NOW).insert(db)),
        new Fixture(
            "a worker past its lease, checked just now",
            db ->
                Rows.worker()
                    .lane("user:a")
                    .task("task-a")
                    .runningSince(NOW)
                    .expiresAt(NOW.minus(Duration.ofSeconds(1)))
                    .insert(db)),
        new Fixture(
            "a queued job in a lane with a free slot",
            db ->
                Rows.job().lane("user:a").createdAt(NOW.minus(Duration.ofSeconds(90))).insert(db)),
        new Fixture(
            "a queued job in a lane whose slot is held",
            db -> {
              Rows.worker().lane("user:a").task("task-a").runningSince(NOW).insert(db);
              Rows.job().lane("user:a").insert(db);
            }),
        new Fixture(
            "queued jobs in the shared lane with a slot free",
            db -> {
              Rows.worker().task("task-a").runningSince(NOW).insert(db);
              Rows.job().insert(db, 2);
            }),
        new Fixture(
            "an unpublished event",
            db -> Rows.event(Rows.job().status(JobStatus.SUCCEEDED).insert(db)).insert(db)),
        new Fixture(
            "an unpublished event whose publisher's claim still holds",
            db ->
                db.update(
                    "update build_job_event set publish_claimed_until = now() + interval '1 minute'"
                        + " where id = :id",
                    buildqueue.db.Params.of(
                        "id",
                        Rows.event(Rows.job().status(JobStatus.SUCCEEDED).insert(db)).insert(db)))),
        new Fixture(
            "a job finished before the retention",
            db ->
                Rows.event(Rows.job().status(JobStatus.SUCCEEDED).finishedAt(LONG_AGO).insert(db))
                    .published()
                    .insert(db)),
        new Fixture(
            "a job finished before the retention, its history unpublished",
            db ->
                Rows.event(Rows.job().status(JobStatus.SUCCEEDED).finishedAt(LONG_AGO).insert(db))
                    .insert(db)),
        new Fixture(
            "an upload of an exited worker whose job went back to its lane",
            db -> {
              long w = Rows.worker().status(WorkerStatus.EXITED).insert(db);
              upload(db, Rows.job().attempts(1).insert(db), 1, w);
            }),
        new Fixture(
            "an upload of a worker still alive whose job went back to its lane",
            db -> {
              long w = Rows.worker().lane("user:a").task("task-a").runningSince(NOW).insert(db);
              upload(db, Rows.job().lane("user:b").attempts(1).insert(db), 1, w);
            }),
        new Fixture(
            "an upload of the attempt its job is running",
            db -> {
              long w = Rows.worker().lane("user:a").task("task-a").runningSince(NOW).insert(db);
              long job =
                  Rows.job()
                      .lane("user:a")
                      .status(JobStatus.RUNNING)
                      .worker(w)
                      .attempts(1)
                      .insert(db);
              upload(db, job, 1, w);
            }),
        new Fixture(
            "an upload of an exited worker whose job is gone",
            db -> upload(db, 999_999, 1, Rows.worker().status(WorkerStatus.EXITED).insert(db))),
        new Fixture(
            "a webhook delivery due",
            db -> {
              long job = Rows.job().status(JobStatus.SUCCEEDED).insert(db);
              delivery(db, endpoint(db), Rows.event(job).published().insert(db), job, NOW);
            }),
        new Fixture(
            "a webhook delivery backing off",
            db -> {
              long job = Rows.job().status(JobStatus.SUCCEEDED).insert(db);
              delivery(
                  db,
                  endpoint(db),
                  Rows.event(job).published().insert(db),
                  job,
                  NOW.plusSeconds(5));
            }),
        new Fixture(
            "a webhook delivery due behind an earlier one of its job backing off",
            db -> {
              long job = Rows.job().status(JobStatus.SUCCEEDED).insert(db);
              long endpoint = endpoint(db);
              delivery(
                  db, endpoint, Rows.event(job).published().insert(db), job, NOW.plusSeconds(5));
              delivery(db, endpoint, Rows.event(job).published().insert(db), job, NOW);
            }),
        new Fixture(
            "a worker exited before the retention",
            db ->
                db.update(
                    "update build_worker set exited_at = :at where id = :id",
                    buildqueue.db.Params.of(
                        "at",
                        LONG_AGO,
                        "id",
                        Rows.worker().status(WorkerStatus.EXITED).insert(db)))));
  }

  /** A webhook endpoint for every user and every event type. */
  private static long endpoint(Database db) {
    return db.query(
            "insert into build_webhook_endpoint (name, url, secrets, created_at, updated_at)"
                + " values ('ci', 'https://ci.example.com/hook', '[\"whsec_c2VjcmV0\"]'::jsonb,"
                + " now(), now()) returning id")
        .get(0)
        .longValue("id");
  }

  /** A pending delivery of {@code event} to {@code endpoint}, next tried at {@code next}. */
  private static void delivery(Database db, long endpoint, long event, long job, Instant next) {
    db.update(
        "insert into build_webhook_delivery (endpoint_id, event_id, job_id, created_at,"
            + " next_attempt_at) values (:endpoint, :event, :job, now(), :next)",
        buildqueue.db.Params.of("endpoint", endpoint, "event", event, "job", job)
            .and("next", next));
  }

  /** An attempt's upload record, as {@code build_worker_stage_artifacts} writes it. */
  private static void upload(Database db, long job, int attempt, long worker) {
    db.update(
        "insert into build_artifact_upload (job_id, attempt, worker_id, started_at)"
            + " values (:job, :attempt, :worker, now())",
        buildqueue.db.Params.of("job", job, "attempt", attempt, "worker", worker));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void the_survey_finds_due_what_each_parts_own_claim_finds(Fixture f, TestDatabase tdb) {
    Database db = tdb.jdbc();
    f.rows().accept(db);
    QueueClock clock = () -> NOW;
    TickTransitions tick = new TickTransitions(db, CONFIG, clock);

    TickTransitions.Survey found = tick.survey(false);

    assertThat(found.dueChecks()).as("due checks").isEqualTo(!tick.claimDueChecks(100).isEmpty());
    assertThat(found.unresolvedLaunches())
        .as("unresolved launches")
        .isEqualTo(
            !new DispatchTransitions(db, CONFIG, clock).claimUnresolvedLaunches(100).isEmpty());
    assertThat(found.expiredLeases())
        .as("expired leases")
        .isEqualTo(!tick.expiredLeases(0, 100).isEmpty());
    assertThat(found.lanesToDispatch())
        .as("lanes to dispatch")
        .isEqualTo(!tick.lanesToDispatch(null, 100).isEmpty());
    assertThat(found.eventsPending())
        .as("events pending")
        .isEqualTo(!new OutboxTransitions(db, clock).claimPending(100).isEmpty());
    // No fixture leaves published artifacts of a deleted job: those are due after a housekeeping,
    // which the tick's caller knows from its report, not from the survey.
    assertThat(found.artifactsToSweep())
        .as("artifacts to sweep")
        .isEqualTo(
            !new ArtifactSweep(db, buildqueue.artifacts.NoArtifactStore.NONE).due().isEmpty());
    // An upload to sweep is work: the tick stays armed until a sweep removed it.
    if (found.artifactsToSweep()) {
      assertThat(found.work()).as("an upload to sweep keeps the tick armed").isTrue();
    }
    // Claims (and so changes) what it finds: after every read of the other parts.
    assertThat(found.webhooksDue())
        .as("webhook deliveries due")
        .isEqualTo(
            !new WebhookDeliveries(db, clock, (url, headers, body) -> null)
                .claimDue(WebhookDeliveries.BATCH)
                .isEmpty());
    TickTransitions.Housekept housekept = tick.housekeep(1000);
    assertThat(found.housekeeping())
        .as("housekeeping")
        .isEqualTo(housekept.jobs() + housekept.workers() > 0);
  }

  @Test
  void the_survey_reads_the_gauges(TestDatabase tdb) {
    Rows.job().lane("user:a").createdAt(NOW.minus(Duration.ofSeconds(90))).insert(tdb.jdbc());
    Rows.job().lane("user:b").createdAt(NOW.minus(Duration.ofSeconds(30))).insert(tdb.jdbc());

    TickTransitions tick = new TickTransitions(tdb.jdbc(), CONFIG, () -> NOW);

    assertThat(tick.survey(true).gauges()).isEqualTo(new TickTransitions.Gauges(2, 90));
    assertThat(tick.survey(false).gauges()).as("not asked for, not counted").isNull();
  }

  @Test
  void an_idle_tick_costs_one_statement(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      h.db.reset();

      BuildQueue.TickReport report = h.queue.tick();

      assertThat(h.db.statements()).isEqualTo(1);
      assertThat(report.found())
          .isEqualTo(
              new TickTransitions.Survey(
                  false, false, false, false, false, false, false, false, false, null));
      assertThat(report.eventsMayBePending()).isFalse();
    }
  }

  @Test
  void a_slot_the_tick_frees_is_dispatched_in_that_tick_though_the_survey_found_none_free(
      TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      // The only slot is held by a worker past its lease that cannot be checked (no task id),
      // and a job waits for it: the survey sees no free slot, the lease reclaim frees it.
      Instant now = h.clock.now();
      long worker =
          Rows.worker()
              .lane(Lanes.dedicated("alice"))
              .slot(Lanes.dedicated("alice") + "#1")
              .launchedAt(now.minus(Duration.ofHours(2)))
              .expiresAt(now.minus(Duration.ofMinutes(1)))
              .insert(h.testDb.jdbc());
      long job = Rows.job().user("alice").lane(Lanes.dedicated("alice")).insert(h.testDb.jdbc());

      BuildQueue.TickReport report = h.queue.tick();

      assertThat(report.found().lanesToDispatch()).isFalse();
      assertThat(report.reclaimed()).isEqualTo(1);
      assertThat(h.status(job)).isEqualTo("dispatched");
      assertThat(h.worker(worker).string("status")).isEqualTo("exited");
      assertThat(report.eventsMayBePending()).isTrue();
      assertThat(report.dispatched()).as(report.toString()).isEqualTo(1);
    }
  }

  /** A platform paced to one launch a second, on a clock that moves only when the tick waits. */
  private static final class PacedPlatform implements buildqueue.platform.WorkerPlatform {
    final buildqueue.testing.ManualPlatform launches = new buildqueue.testing.ManualPlatform();

    @Override
    public buildqueue.platform.LaunchOutcome launch(buildqueue.platform.WorkerLaunch launch) {
      return launches.launch(launch);
    }

    @Override
    public java.util.Map<String, buildqueue.platform.TaskState> check(
        java.util.Collection<String> taskIds) {
      return launches.check(taskIds);
    }

    @Override
    public boolean canCheck(String taskId) {
      return launches.canCheck(taskId);
    }

    @Override
    public void stop(String taskId, String reason) {
      launches.stop(taskId, reason);
    }

    @Override
    public buildqueue.platform.CallRates callRates() {
      return new buildqueue.platform.CallRates(
          new buildqueue.platform.CallRates.Rate(1, 1),
          buildqueue.platform.CallRates.Rate.UNLIMITED);
    }
  }

  @Test
  void a_lane_whose_dispatch_had_to_wait_for_the_rate_is_dispatched_by_the_dispatch_part(
      TestDatabase tdb) {
    // Two lanes, each with its one slot held by a worker past its lease that cannot be checked
    // (no task id) and a job waiting: the survey finds no lane to dispatch. The lease reclaim
    // exits both; the first exit's dispatch takes the one launch the rate has, the second's finds
    // none at once (the evidence parts do not wait), so only the dispatch part, which waits, can
    // launch the second lane's job in this tick.
    Instant now = Instant.parse("2026-12-01T10:00:00Z");
    for (String user : List.of("a", "b")) {
      Rows.worker()
          .lane(Lanes.dedicated(user))
          .slot(Lanes.dedicated(user) + "#1")
          .launchedAt(now.minus(Duration.ofHours(2)))
          .expiresAt(now.minus(Duration.ofMinutes(1)))
          .insert(tdb.jdbc());
      Rows.job().user(user).lane(Lanes.dedicated(user)).insert(tdb.jdbc());
    }
    PacedPlatform platform = new PacedPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, CONFIG, () -> now);
    long[] nanos = {0};
    MonotonicClock waits =
        new MonotonicClock() {
          @Override
          public long nanoTime() {
            return nanos[0];
          }

          @Override
          public void sleep(Duration d) {
            nanos[0] += d.toNanos();
          }
        };

    BuildQueue.TickReport report = queue.tick(new TickBudget(Duration.ofSeconds(25), waits));

    assertThat(report.found().lanesToDispatch()).isFalse();
    assertThat(report.reclaimed()).isEqualTo(2);
    assertThat(platform.launches.launches()).hasSize(2);
    assertThat(report.dispatched()).as(report.toString()).isEqualTo(2);
    assertThat(report.cutShort()).isEmpty();
  }
}
