package buildqueue.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import buildqueue.core.Ledger;
import java.math.BigDecimal;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Figure 6's money arithmetic on workers small enough to bill by hand, at {@code Ledger.fargate()}:
 * 1 vCPU and 2 GB, $0.04048 + 2 × $0.004445 = $0.04937 an hour on-demand, $0.01334053 + 2 ×
 * $0.00146489 = $0.01627031 on Spot; per second, at least 60 s.
 */
class MoneyModelTest {
  static final Ledger LEDGER = Ledger.fargate();
  static final double INF = Double.POSITIVE_INFINITY;

  static MoneyModel.Worker worker(double startedAt, double exitedAt, double... jobs) {
    MoneyModel.Span[] spans = new MoneyModel.Span[jobs.length / 2];
    for (int i = 0; i < spans.length; i++) {
      spans[i] = new MoneyModel.Span(jobs[2 * i], jobs[2 * i + 1]);
    }
    return new MoneyModel.Worker(startedAt, List.of(spans), exitedAt);
  }

  /** Reclaims after these Spot seconds, then never; new tasks start up in these seconds. */
  static MoneyModel.Draws draws(double[] untilReclaim, double... startUps) {
    Deque<Double> reclaims = new ArrayDeque<>();
    Arrays.stream(untilReclaim).forEach(reclaims::add);
    Deque<Double> starts = new ArrayDeque<>();
    Arrays.stream(startUps).forEach(starts::add);
    return new MoneyModel.Draws() {
      @Override
      public double untilReclaim() {
        return reclaims.isEmpty() ? INF : reclaims.poll();
      }

      @Override
      public double startUp() {
        return starts.poll();
      }
    };
  }

  @Test
  void one_task_per_job_bills_its_start_up_and_at_least_a_minute() {
    // A 30 s job after a 20 s start-up: 50.4 s, billed the minute.
    MoneyModel.Bill short_ = MoneyModel.onDemand(List.of(worker(20, 50.4, 20, 50)), LEDGER);
    assertThat(short_.onDemandSeconds()).isEqualTo(60);
    // 60 s × $0.04937 / 3,600 = $0.000822833…
    assertThat(short_.dollars(LEDGER)).isEqualByComparingTo(new BigDecimal("0.000823"));
    // A 90 s job after a 40 s start-up: 130.5 s, rounded up to 131.
    MoneyModel.Bill long_ = MoneyModel.onDemand(List.of(worker(40, 130.5, 40.2, 130.2)), LEDGER);
    assertThat(long_.onDemandSeconds()).isEqualTo(131);
    // 131 s × $0.04937 / 3,600 = $0.001796519…
    assertThat(long_.dollars(LEDGER)).isEqualByComparingTo(new BigDecimal("0.001797"));
  }

  @Test
  void a_chained_worker_pays_one_start_up_and_its_chain_window() {
    // Three 30 s jobs on one worker, then 300 s of chain window: 411 s for three jobs, where one
    // task per job pays 3 × 60 s.
    MoneyModel.Bill chained =
        MoneyModel.onDemand(List.of(worker(20, 411, 20, 50, 50.5, 80.5, 81, 111)), LEDGER);
    assertThat(chained.onDemandSeconds()).isEqualTo(411);
    MoneyModel.Bill oneTaskEach =
        MoneyModel.onDemand(
            List.of(worker(20, 50.2, 20, 50), worker(20, 50.2, 20, 50), worker(20, 50.2, 20, 50)),
            LEDGER);
    assertThat(oneTaskEach.onDemandSeconds()).isEqualTo(180);
  }

  @Test
  void a_reclaim_costs_the_work_since_the_last_progress_and_a_new_start_up() {
    // A 150 s job after a 30 s start-up, reclaimed 100 s into the job: progress at 60 s, so 40 s
    // are lost; the new task starts in 45 s and runs the job's last 90 s.
    MoneyModel.Worker w = worker(30, 180, 30, 180);
    MoneyModel.Bill bill = MoneyModel.spot(List.of(w), LEDGER, 60, draws(new double[] {130}, 45));
    assertThat(bill.spotSeconds()).isEqualTo(130 + 45 + 90);
    assertThat(bill.onDemandSeconds()).isZero();
    assertThat(bill.reclaims()).isEqualTo(1);
    assertThat(bill.movedToOnDemand()).isZero();
    // Without progress the new task runs the whole job again.
    MoneyModel.Bill none =
        MoneyModel.spot(List.of(w), LEDGER, MoneyModel.NO_PROGRESS, draws(new double[] {130}, 45));
    assertThat(none.spotSeconds()).isEqualTo(130 + 45 + 150);
  }

  @Test
  void the_third_reclaim_of_a_job_moves_it_to_on_demand() {
    // Reclaimed 10 s into each start-up: three Spot tasks billed the minute each, then the job's
    // next attempt on on-demand: a 30 s start-up and the 60 s job.
    MoneyModel.Worker w = worker(30, 90, 30, 90);
    MoneyModel.Bill bill =
        MoneyModel.spot(List.of(w), LEDGER, 60, draws(new double[] {10, 10, 10}, 30, 30, 30));
    assertThat(bill.spotSeconds()).isEqualTo(3 * 60);
    assertThat(bill.onDemandSeconds()).isEqualTo(30 + 60);
    assertThat(bill.reclaims()).isEqualTo(3);
    assertThat(bill.movedToOnDemand()).isEqualTo(1);
    // Spot: (180 × $0.01334053 + 360 × $0.00146489) / 3,600 = $0.000813516 → $0.000814;
    // on-demand: (90 × $0.04048 + 180 × $0.004445) / 3,600 = $0.001234250 → $0.001234.
    assertThat(bill.dollars(LEDGER)).isEqualByComparingTo(new BigDecimal("0.002048"));
  }

  @Test
  void a_reclaim_while_waiting_costs_a_start_up_instead_of_the_wait() {
    // Between two jobs (60 → 200), reclaimed at 80: the new task starts in 40 s for the second
    // job, and the 120 s left of the wait are not billed.
    MoneyModel.Bill between =
        MoneyModel.spot(
            List.of(worker(30, 230, 30, 60, 200, 230)), LEDGER, 60, draws(new double[] {80}, 40));
    assertThat(between.spotSeconds()).isEqualTo(80 + 40 + 30);
    assertThat(between.movedToOnDemand()).isZero();
    // In the chain window after the last job nothing waits for the worker: it just ends.
    MoneyModel.Bill tail =
        MoneyModel.spot(List.of(worker(30, 390, 30, 90)), LEDGER, 60, draws(new double[] {130}));
    assertThat(tail.spotSeconds()).isEqualTo(130);
    assertThat(tail.reclaims()).isEqualTo(1);
  }

  @Test
  void spot_without_reclaims_bills_the_on_demand_seconds_at_spot_prices() {
    List<MoneyModel.Worker> workers =
        List.of(worker(20, 411, 20, 50, 50.5, 80.5, 81, 111), worker(40, 130.5, 40.2, 130.2));
    MoneyModel.Bill spot = MoneyModel.spotMean(workers, LEDGER, 0, 60, 1);
    assertThat(spot.spotSeconds()).isEqualTo(411 + 131);
    assertThat(spot.reclaims()).isZero();
    // 542 s × $0.01627031 / 3,600 = $0.002449587… → $0.002450.
    assertThat(spot.dollars(LEDGER)).isEqualByComparingTo(new BigDecimal("0.002450"));
  }

  @Test
  void the_seeded_reclaim_stream_is_reproducible_and_runs_at_its_rate() {
    // One 10-hour job: at 5 % an hour, about half a reclaim a draw.
    List<MoneyModel.Worker> workers = List.of(worker(30, 36_030, 30, 36_030));
    MoneyModel.Bill a = MoneyModel.spotMean(workers, LEDGER, 0.05, 60, 7);
    MoneyModel.Bill b = MoneyModel.spotMean(workers, LEDGER, 0.05, 60, 7);
    assertThat(a).isEqualTo(b);
    double spotHours = a.spotSeconds() / 3600;
    assertThat(a.reclaims() / spotHours).isCloseTo(0.05, within(0.0075));
  }
}
