package buildqueue.scale;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobStatus;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.TickBudget;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Rows;
import buildqueue.testing.SimulatedEcs;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestSeeds;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The tick at the scale the product is for: thousands of paying users, each with a dedicated lane
 * and a live worker, on ECS's request rates ({@link SimulatedEcs}, on a settable clock, so a tick's
 * budget and its pacing run on simulated time and the test takes seconds). Each tick gets what the
 * Lambda's 55 s timeout leaves ({@code TickFunction}: 45 s), which the queue holds to half the
 * launch grace, 30 s.
 *
 * <p>The size is {@code -Dbuildqueue.scale.lanes}: 5,000 by default, 10,000 under {@code
 * -Dbuildqueue.soak=true} ({@link TestSeeds}).
 */
@ExtendWith(PostgresExtension.class)
class TickAtScaleTest {
  private static final int LANES =
      TestSeeds.size("tick at scale", "buildqueue.scale.lanes", 5_000, 10_000);
  private static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");
  private static final Duration LAMBDA_BUDGET = Duration.ofSeconds(45);
  private static final Duration CALL_LATENCY = Duration.ofMillis(20);

  private final QueueClock.Settable clock = new QueueClock.Settable(T0);
  private final SimulatedEcs ecs = new SimulatedEcs(clock);
  private final QueueConfig config = QueueConfig.defaults();

  private static final String EXITED_OF_THE_LOST =
      """
      select count(*) as n from build_worker
      where status = 'exited' and task_id like 'adopted-%' and (substr(task_id, 9)::int % 10) = 7
      """;

  /**
   * {@code lanes} dedicated users, each with a running worker on a running job, as the tick finds
   * them.
   */
  private void busyLanes(TestDatabase tdb, int lanes) {
    dedicatedUsers(tdb, lanes);
    List<Long> workers =
        Rows.insertIds(
            tdb.jdbc(),
            IntStream.rangeClosed(1, lanes)
                .mapToObj(
                    i ->
                        Rows.worker()
                            .lane("user:u" + i)
                            .runningSince(T0)
                            .task("adopted-" + i)
                            .expiresAt(T0.plus(Duration.ofMinutes(65))))
                .toList());
    Rows.insert(
        tdb.jdbc(),
        IntStream.rangeClosed(1, lanes)
            .mapToObj(
                i ->
                    Rows.job()
                        .user("u" + i)
                        .ownLane()
                        .status(JobStatus.RUNNING)
                        .worker(workers.get(i - 1))
                        .attempts(1)
                        .createdAt(T0)
                        .dispatchedAt(T0)
                        .startedAt(T0))
            .toList());
    for (int i = 1; i <= lanes; i++) {
      ecs.adopt("adopted-" + i, "user:u" + i + "#1");
    }
  }

  /** Users {@code u1} to {@code u<n>}, each with a dedicated worker, in one statement. */
  private static void dedicatedUsers(TestDatabase tdb, int n) {
    Rows.insert(
        tdb.jdbc(),
        IntStream.rangeClosed(1, n).mapToObj(i -> Rows.user("u" + i).dedicated(true)).toList());
  }

  private BuildQueue.TickReport tickAMinuteLater(BuildQueue queue) {
    clock.advance(Duration.ofMinutes(1));
    ecs.latency(CALL_LATENCY);
    return queue.tick(new TickBudget(LAMBDA_BUDGET, ecs.time()));
  }

  @Test
  void every_worker_whose_stop_event_was_lost_is_found_within_two_ticks_and_its_job_relaunched(
      TestDatabase tdb) {
    busyLanes(tdb, LANES);
    BuildQueue queue = new BuildQueue(tdb.jdbc(), ecs, config, clock);
    List<Long> lost = new ArrayList<>();
    for (int i = 7; i <= LANES; i += 10) {
      ecs.stopSilently("adopted-" + i);
      lost.add((long) i);
    }

    List<BuildQueue.TickReport> reports = new ArrayList<>();
    reports.add(tickAMinuteLater(queue));
    reports.add(tickAMinuteLater(queue));

    assertThat(count(tdb, "select count(*) as n from build_worker where status = 'exited'"))
        .as("workers found exited in two ticks")
        .isEqualTo(lost.size());
    assertThat(count(tdb, EXITED_OF_THE_LOST))
        .as("and they are the ones whose stop was lost")
        .isEqualTo(lost.size());
    assertThat(reports.get(0).checked()).as("one tick checks every live worker").isEqualTo(LANES);
    assertThat(ecs.largestDescribe()).isLessThanOrEqualTo(100);
    assertThat(ecs.throttledDescribes()).as("DescribeTasks calls ECS throttled").isZero();
    assertThat(ecs.throttledRunTasks()).as("RunTask calls ECS throttled").isZero();

    // Their jobs went back to the head of their lanes; relaunching them all takes RunTask's rate.
    for (int t = 0;
        t < 3 && count(tdb, "select count(*) as n from build_job where status = 'queued'") > 0;
        t++) {
      reports.add(tickAMinuteLater(queue));
    }
    assertThat(count(tdb, "select count(*) as n from build_job where status = 'queued'")).isZero();
    assertThat(
            count(
                tdb,
                "select count(*) as n from build_worker where status <> 'exited' and task_id is not null"))
        .isEqualTo(LANES);
    assertThat(ecs.tasksStarted()).isEqualTo(lost.size());
    assertThat(ecs.throttledRunTasks()).isZero();
    assertThat(ecs.violations()).isEmpty();
    assertNoSlotHoldsTwoLiveWorkers(tdb);
  }

  @Test
  void a_burst_of_a_thousand_launches_with_run_task_throttled_resolves_within_a_few_ticks(
      TestDatabase tdb) {
    int lanes = Math.min(LANES, 1_000);
    BuildQueue queue = new BuildQueue(tdb.jdbc(), ecs, config, clock);
    dedicatedUsers(tdb, lanes); // dedicated users with no jobs yet: one statement
    // Many API calls at once: ECS lets the first through and throttles the rest, whose outcome
    // is then unknown, so each holds its slot until a relaunch with its token resolves it.
    for (int i = 1; i <= lanes; i++) {
      queue.enqueue("u" + i, "noop", new Json("{}"), null);
    }
    int throttledByTheBurst = ecs.throttledRunTasks();
    assertThat(throttledByTheBurst).isGreaterThan(lanes / 2);
    assertThat(unresolved(tdb)).isEqualTo(throttledByTheBurst);

    int ticks = 0;
    clock.advance(Duration.ofSeconds(1)); // the first tick comes a minute and a second later
    while (unresolved(tdb) > 0 && ticks < 10) {
      tickAMinuteLater(queue);
      assertNoSlotHoldsTwoLiveWorkers(tdb);
      ticks++;
    }

    assertThat(unresolved(tdb)).isZero();
    assertThat(ticks)
        .as("ticks to resolve %d launches at 20 RunTask calls a second", throttledByTheBurst)
        .isLessThanOrEqualTo(3);
    assertThat(ecs.throttledRunTasks())
        .as("the ticks' relaunches stayed within RunTask's rate")
        .isEqualTo(throttledByTheBurst);
    assertThat(ecs.tasksStarted()).isEqualTo(lanes);
    assertThat(count(tdb, "select count(*) as n from build_job where status = 'dispatched'"))
        .isEqualTo(lanes);
    assertThat(ecs.violations()).isEmpty();
  }

  @Test
  void a_tick_that_ecs_throttles_anyway_stops_that_part_and_the_next_tick_carries_on(
      TestDatabase tdb) {
    busyLanes(tdb, 300);
    BuildQueue queue = new BuildQueue(tdb.jdbc(), ecs, config, clock);
    for (int i = 1; i <= 300; i += 3) {
      ecs.stopSilently("adopted-" + i);
    }
    clock.advance(Duration.ofMinutes(1));
    ecs.drainDescribeBucket(); // another caller has just used up the account's DescribeTasks rate

    BuildQueue.TickReport throttled = queue.tick(new TickBudget(LAMBDA_BUDGET, ecs.time()));

    assertThat(throttled.cutShort())
        .containsExactly("liveness checks: the platform throttled its checks");
    assertThat(throttled.exited()).isZero();
    assertThat(ecs.describeCalls()).as("one throttled call, then the part stopped").isEqualTo(1);

    BuildQueue.TickReport next = tickAMinuteLater(queue);
    assertThat(next.cutShort()).isEmpty();
    assertThat(next.checked()).isEqualTo(300);
    assertThat(next.exited()).isEqualTo(100);
  }

  @Test
  void relaunches_stop_at_the_first_throttled_run_task_and_the_rest_wait_for_the_next_tick(
      TestDatabase tdb) {
    BuildQueue queue = new BuildQueue(tdb.jdbc(), ecs, config, clock);
    for (int i = 1; i <= 150; i++) {
      queue.setDedicated("r" + i, true);
      queue.enqueue("r" + i, "noop", new Json("{}"), null);
    }
    int unresolvedBefore = unresolved(tdb);
    assertThat(unresolvedBefore).isEqualTo(130);
    clock.advance(config.launchGrace().plusSeconds(1));
    ecs.drainLaunchBuckets(); // the API's launches have just used up RunTask's rate

    BuildQueue.TickReport throttled = queue.tick(new TickBudget(LAMBDA_BUDGET, ecs.time()));

    assertThat(throttled.cutShort())
        .containsExactly("unresolved launches: the platform throttled a launch");
    assertThat(throttled.relaunched()).isEqualTo(1);
    assertThat(unresolved(tdb)).isEqualTo(unresolvedBefore);
    for (int t = 0; t < 3 && unresolved(tdb) > 0; t++) {
      tickAMinuteLater(queue);
    }
    assertThat(unresolved(tdb)).isZero();
    assertThat(ecs.tasksStarted()).isEqualTo(150);
    assertThat(ecs.violations()).isEmpty();
  }

  @Test
  void a_tick_out_of_time_leaves_the_least_recently_checked_first_in_line(TestDatabase tdb) {
    busyLanes(tdb, 500);
    BuildQueue queue = new BuildQueue(tdb.jdbc(), ecs, config, clock);
    ecs.latency(
        Duration.ofSeconds(2)); // a slow platform: three checks of 100 fill a five-second budget
    clock.advance(Duration.ofMinutes(1));

    BuildQueue.TickReport first = queue.tick(new TickBudget(Duration.ofSeconds(5), ecs.time()));
    assertThat(first.cutShort()).containsExactly("liveness checks: out of time");
    assertThat(first.checked()).isEqualTo(300);
    assertThat(neverChecked(tdb)).isEqualTo(200);

    // By the next tick every worker is due again; those the last one missed go first.
    clock.advance(Duration.ofMinutes(1));
    BuildQueue.TickReport second = queue.tick(new TickBudget(Duration.ofSeconds(5), ecs.time()));
    assertThat(second.checked()).isEqualTo(300);
    assertThat(neverChecked(tdb)).isZero();
  }

  private static int neverChecked(TestDatabase tdb) {
    return tdb.jdbc()
        .query(
            "select count(*) as n from build_worker where checked_at = :t::timestamptz",
            Params.of("t", T0))
        .get(0)
        .longValue("n")
        .intValue();
  }

  private static int unresolved(TestDatabase tdb) {
    return count(
        tdb, "select count(*) as n from build_worker where status <> 'exited' and task_id is null");
  }

  private static int count(TestDatabase tdb, String sql) {
    return tdb.jdbc().query(sql).get(0).longValue("n").intValue();
  }

  private static void assertNoSlotHoldsTwoLiveWorkers(TestDatabase tdb) {
    assertThat(
            tdb.jdbc()
                .query(
                    "select slot from build_worker where status <> 'exited' group by slot having count(*) > 1"))
        .as("slots with two live workers")
        .isEmpty();
  }
}
