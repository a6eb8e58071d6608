package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.db.Json;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * docs/architecture.md §4.8: a worker's billed time is shared among the jobs it ran so that the
 * shares add up to it exactly, a job's cost is on its view, and a budget refuses an enqueue inside
 * the enqueue statement. Runs on every database adapter (the aws module runs this package on the
 * Data API).
 */
@ExtendWith(PostgresExtension.class)
class LedgerTest {

  private static long submit(QueueHarness h, String user) {
    return h.queue.enqueue(user, "noop", new Json("{}"), null).jobId();
  }

  /** The worker runs its job for {@code heldFor}, then ends it and chains the next, if any. */
  private static Optional<Long> runAndEnd(
      QueueHarness h, WorkerLaunch w, long jobId, Duration heldFor) {
    h.clock.advance(heldFor);
    WorkerTransitions.Ended ended =
        h.workers.end(w.workerId(), w.token(), jobId, JobStatus.SUCCEEDED, null);
    return ended instanceof WorkerTransitions.Ended.Chained c
        ? Optional.of(c.next().id())
        : Optional.empty();
  }

  private static long sum(List<Row> rows, String column) {
    return rows.stream().mapToLong(r -> r.longValue(column)).sum();
  }

  @Test
  void
      three_chained_jobs_share_their_workers_billed_seconds_exactly_pro_rata_to_the_time_each_held_it(
          TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long a = submit(h, "alice");
    WorkerLaunch w = h.manual.lastLaunch();
    long b = submit(h, "bob");
    long c = submit(h, "alice");
    Instant launched = h.clock.now();
    h.clock.advance(Duration.ofSeconds(20)); // start-up
    h.workers.start(w.workerId(), w.token()).orElseThrow();
    long second = runAndEnd(h, w, a, Duration.ofSeconds(10)).orElseThrow();
    long third = runAndEnd(h, w, second, Duration.ofSeconds(20)).orElseThrow();
    assertThat(runAndEnd(h, w, third, Duration.ofMillis(30_500))).isEmpty();
    h.clock.advance(Duration.ofSeconds(7)); // idle, then the task stops
    Instant stopped = h.clock.now();
    // Fargate billed from the pull's start, 5 s after the launch, to the stop, per second.
    h.queue.taskStopped(
        ManualPlatform.taskIdOf(w.workerId()),
        w.workerId(),
        w.token(),
        "exited",
        new BilledTime(launched.plusSeconds(5), stopped));

    // 20 + 10 + 20 + 30.5 + 7 - 5 = 82.5 s, rounded up to 83 s.
    assertThat(h.worker(w.workerId()).longValue("billed_ms")).isEqualTo(83_000);
    List<Row> shares =
        tdb.jdbc()
            .query(
                "select job_id, held_ms, billed_ms, user_id from build_job_cost where worker_id = "
                    + w.workerId()
                    + " order by job_id");
    assertThat(shares).extracting(r -> r.longValue("job_id")).containsExactly(a, b, c);
    assertThat(shares)
        .extracting(r -> r.longValue("held_ms"))
        .containsExactly(30_000L, 20_000L, 30_500L); // a held it from the launch
    assertThat(sum(shares, "billed_ms")).isEqualTo(83_000);
    // Pro rata: 83,000 × 30,000 / 80,500 = 30,931.7 → 30,931 (+1: the remainder, 1 ms, goes to
    // the first job by id), 83,000 × 20,000 / 80,500 = 20,621.1 → 20,621, 83,000 × 30,500 / 80,500
    // = 31,447.2 → 31,447.
    assertThat(shares)
        .extracting(r -> r.longValue("billed_ms"))
        .containsExactly(30_932L, 20_621L, 31_447L);
    // The job's view carries its cost; its history the final word of this worker.
    Cost cost =
        new JobQueries(h.db, h.config, h.clock)
            .cost(new JobQueries(h.db, h.config, h.clock).job(a).orElseThrow());
    assertThat(cost.billedMs()).isEqualTo(30_932);
    assertThat(cost.vcpuSeconds()).isEqualByComparingTo("30.932");
    assertThat(cost.gbSeconds()).isEqualByComparingTo("61.864");
    assertThat(cost.capacity()).isEqualTo("on-demand");
    // 30.932 × 0.04048 / 3600 + 61.864 × 0.004445 / 3600 = 0.000424
    assertThat(cost.dollars()).isEqualByComparingTo(new BigDecimal("0.000424"));
    assertThat(h.eventTypes(a)).endsWith("succeeded", "cost");
  }

  @Test
  void
      a_worker_billed_less_than_its_jobs_held_it_still_shares_exactly_and_a_duplicate_stop_bills_nothing(
          TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb, QueueHarness.testConfig());
    long a = submit(h, "alice");
    WorkerLaunch w = h.manual.lastLaunch();
    submit(h, "bob");
    submit(h, "carol");
    h.workers.start(w.workerId(), w.token()).orElseThrow();
    long second = runAndEnd(h, w, a, Duration.ofSeconds(1)).orElseThrow();
    long third = runAndEnd(h, w, second, Duration.ofSeconds(1)).orElseThrow();
    runAndEnd(h, w, third, Duration.ofSeconds(1));
    Instant now = h.clock.now();
    // A stop time the event says came 2 s before the exit: under the minimum, so 60 s is billed.
    String task = ManualPlatform.taskIdOf(w.workerId());
    h.queue.taskStopped(
        task, w.workerId(), w.token(), "exited", new BilledTime(now.minusSeconds(2), now));
    h.queue.taskStopped(task, w.workerId(), w.token(), "exited", new BilledTime(null, null));

    List<Row> shares =
        tdb.jdbc().query("select billed_ms from build_job_cost where worker_id = " + w.workerId());
    assertThat(shares)
        .extracting(r -> r.longValue("billed_ms"))
        .containsExactly(20_000L, 20_000L, 20_000L);
    assertThat(h.worker(w.workerId()).longValue("billed_ms")).isEqualTo(60_000);
  }

  @Test
  void every_workers_billed_time_is_the_sum_of_its_jobs_shares_over_many_random_runs(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    java.util.Random random = new java.util.Random(25);
    int workers = 0;
    for (int round = 0; round < 30; round++) {
      int jobs = 1 + random.nextInt(6);
      long first = submit(h, "u" + random.nextInt(3));
      WorkerLaunch w = h.manual.lastLaunch();
      for (int i = 1; i < jobs; i++) {
        submit(h, "u" + random.nextInt(3));
      }
      h.clock.advance(Duration.ofMillis(random.nextInt(30_000)));
      h.workers.start(w.workerId(), w.token()).orElseThrow();
      Optional<Long> next = Optional.of(first);
      while (next.isPresent()) {
        next = runAndEnd(h, w, next.get(), Duration.ofMillis(random.nextInt(90_000)));
      }
      h.clock.advance(Duration.ofMillis(random.nextInt(5_000)));
      h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited");
      workers++;
    }
    List<Row> mismatched =
        tdb.jdbc()
            .query(
                """
                select w.id, w.billed_ms, (select sum(c.billed_ms) from build_job_cost c where c.worker_id = w.id) as shared
                from build_worker w
                where w.billed_ms is distinct from (select sum(c.billed_ms) from build_job_cost c where c.worker_id = w.id)
                """);
    assertThat(mismatched).isEmpty();
    assertThat(
            tdb.jdbc()
                .query("select count(*) as n from build_worker where billed_ms is not null")
                .get(0)
                .longValue("n"))
        .isEqualTo(workers);
  }

  private static Map<String, Long> rowCounts(TestDatabase tdb) {
    return Map.of(
        "build_job",
        count(tdb, "select count(*) as n from build_job"),
        "build_job_event",
        count(tdb, "select count(*) as n from build_job_event"),
        "build_lane_turn",
        count(tdb, "select count(*) as n from build_lane_turn"),
        "build_worker",
        count(tdb, "select count(*) as n from build_worker"));
  }

  private static long count(TestDatabase tdb, String sql) {
    return tdb.jdbc().query(sql).get(0).longValue("n");
  }

  @Test
  void
      an_enqueue_past_the_budget_is_refused_in_its_statement_with_nothing_written_and_a_running_job_goes_on(
          TestDatabase tdb) {
    QueueConfig config =
        QueueHarness.testConfig().toBuilder()
            .ledger(Ledger.fargate().withBudget(120L, "month"))
            .build();
    QueueHarness h = QueueHarness.manual(tdb, config);
    long a = submit(h, "alice");
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token()).orElseThrow();
    runAndEnd(h, w, a, Duration.ofSeconds(100));
    h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited");
    // 100 s of 1 vCPU used of 120: one more is accepted, and runs.
    long b = submit(h, "alice");
    WorkerLaunch w2 = h.manual.lastLaunch();
    h.workers.start(w2.workerId(), w2.token()).orElseThrow();
    h.clock.advance(Duration.ofSeconds(30));
    assertThat(h.workers.checkIn(w2.workerId(), w2.token(), b, 5, null))
        .isEqualTo(WorkerTransitions.ProgressAck.RECORDED);
    runAndEnd(h, w2, b, Duration.ofSeconds(30));
    h.queue.taskStopped(
        ManualPlatform.taskIdOf(w2.workerId()), w2.workerId(), w2.token(), "exited");
    assertThat(h.status(b)).isEqualTo("succeeded");

    Map<String, Long> before = rowCounts(tdb);
    long statements = h.db.statements();
    assertThatThrownBy(() -> submit(h, "alice"))
        .isInstanceOfSatisfying(
            BudgetExceededException.class,
            e -> {
              assertThat(e.usedVcpuSeconds()).isEqualTo(160);
              assertThat(e.budgetVcpuSeconds()).isEqualTo(120);
              assertThat(e.periodEnds()).isEqualTo(Instant.parse("2027-01-01T00:00:00Z"));
              assertThat(e.retryAfterSeconds())
                  .isEqualTo(
                      Duration.between(h.clock.now(), Instant.parse("2027-01-01T00:00:00Z"))
                          .toSeconds());
            });
    assertThat(h.db.statements() - statements).isEqualTo(1);
    assertThat(rowCounts(tdb)).isEqualTo(before);
    // Another user has no budget used; an admin's own budget for alice lets her in again.
    submit(h, "bob");
    h.queue.updateUser(
        "alice",
        new JobTransitions.UserChange(
            Optional.empty(), Optional.empty(), Optional.of(OptionalLong.of(1000))));
    submit(h, "alice");
  }

  @Test
  void a_users_usage_sums_their_jobs_shares_in_the_range_and_by_user(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    List<Long> jobs = new ArrayList<>();
    for (String user : List.of("alice", "bob", "alice")) {
      long id = submit(h, user);
      jobs.add(id);
      WorkerLaunch w = h.manual.lastLaunch();
      h.workers.start(w.workerId(), w.token()).orElseThrow();
      runAndEnd(h, w, id, Duration.ofSeconds(90));
      h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited");
    }
    Instant from = Instant.parse("2026-12-01T00:00:00Z");
    Instant to = Instant.parse("2027-01-01T00:00:00Z");
    System.out.println(
        "WORKERS "
            + tdb.jdbc()
                .query(
                    "select id, launched_at, started_at, exited_at, billed_ms from build_worker"));
    JobQueries.Usage alice = new JobQueries(h.db, h.config, h.clock).usage("alice", from, to);
    assertThat(alice.jobs()).isEqualTo(2);
    assertThat(alice.cost().billedMs()).isEqualTo(180_000);
    assertThat(new JobQueries(h.db, h.config, h.clock).usage("alice", to, to.plusSeconds(1)).cost())
        .isNull();
    assertThat(new JobQueries(h.db, h.config, h.clock).usageByUser(from, to))
        .extracting(JobQueries.Usage::userId, u -> u.cost().billedMs())
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("alice", 180_000L),
            org.assertj.core.groups.Tuple.tuple("bob", 90_000L));
  }
}
