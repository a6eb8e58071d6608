package buildqueue.bench;

import static buildqueue.bench.Figures.F6;
import static buildqueue.bench.Figures.stats;

import buildqueue.core.QueueConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Figure 6: what each setting costs in billed worker time against how long jobs wait, on traces of
 * traffic replayed on the real queue, with its plot; and the shared lane's order under a heavy
 * user.
 */
record TrafficCostFigure(BenchPostgres pg, BenchMain.Plan plan, Report report) {
  /** The plot, written beside the Markdown file. */
  static final String COST_PLOT = "figure-6-cost.svg";

  void run() throws InterruptedException {
    TrafficCost cost = new TrafficCost(pg);
    int runs = plan.quick() ? 1 : 3;
    double hours = plan.quick() ? 0.34 : 1;
    List<CostPlot.Point> points = new ArrayList<>();
    for (TrafficCost.Trace trace : TrafficCost.traces(hours, 42)) {
      for (TrafficCost.Policy policy : TrafficCost.policies()) {
        List<TrafficCost.Result> results = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
          results.add(cost.replay(trace, policy, 7 + i));
        }
        Stats billed = stats(results, TrafficCost.Result::billedPerJobSecond);
        report.add(
            F6,
            trace.name()
                + " ("
                + trace.arrivals().size()
                + " jobs), "
                + policy.name()
                + ": billed worker-s per job-s",
            billed,
            "",
            2,
            "launches/job "
                + Report.format(stats(results, TrafficCost.Result::launchesPerJob).median(), 2)
                + "; wait p50 "
                + Report.format(stats(results, TrafficCost.Result::waitP50).median(), 0)
                + " s, p99 "
                + Report.format(stats(results, TrafficCost.Result::waitP99).median(), 0)
                + " s");
        points.add(
            new CostPlot.Point(
                trace.name(),
                policy.name(),
                stats(results, TrafficCost.Result::waitP50).median(),
                billed.median()));
      }
      report.note("- Trace **" + trace.name() + "**: " + trace.description() + ".");
    }
    java.nio.file.Path svg = plan.out().toAbsolutePath().resolveSibling(COST_PLOT);
    try {
      java.nio.file.Files.createDirectories(svg.getParent());
      java.nio.file.Files.writeString(
          svg,
          CostPlot.svg(
              "Figure 6: what each setting costs against how long jobs wait"
                  + (plan.quick() ? " (--quick)" : ""),
              points),
          java.nio.charset.StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    sharedOrder(cost, runs, hours);
    report.note(
        """
        ### How the cost figure is modelled (figure 6)

        ![Figure 6: billed worker-s per job-s against the median wait to start, one point per trace and setting](%s)

        One point per trace (shape) and setting (colour), the medians of the table's rows; the wait axis is logarithmic.
        Down is cheaper, left is sooner.

        Each trace is replayed at 1/%d of real time (%s model hour%s per run) on the real queue and worker loop; workers are threads
        that start after a Fargate start delay drawn from %.0f–%.0f s, are billed from the launch request to their exit, rounded up to
        the second with a %.0f s minimum, and whose STOPPED evidence reaches the queue %.0f s after the exit. The shared lane has %d
        slots; the tick runs every model minute. Builds take 1–3 min. Wait is arrival → job start, in model seconds. Billed worker-s per
        job-s is the sum of billed task seconds over the sum of build seconds: 1.00 would mean paying only for builds.
        """
            .formatted(
                COST_PLOT,
                (int) TrafficCost.SCALE,
                Report.format(hours, 2),
                hours == 1 ? "" : "s",
                FargateModel.START_MIN_S,
                FargateModel.START_MAX_S,
                FargateModel.MIN_BILLED_S,
                FargateModel.STOP_EVIDENCE_S,
                TrafficCost.SHARED_SLOTS));
  }

  /**
   * Figure 6's light users' wait when a heavy user shares their lane: turns by user beside FIFO.
   */
  private void sharedOrder(TrafficCost cost, int runs, double hours) throws InterruptedException {
    TrafficCost.Trace trace = TrafficCost.heavySharing(hours, 42);
    TrafficCost.Policy policy = TrafficCost.orderPolicy();
    Map<QueueConfig.SharedOrder, Stats> lightP99 =
        new java.util.EnumMap<>(QueueConfig.SharedOrder.class);
    for (QueueConfig.SharedOrder order :
        List.of(QueueConfig.SharedOrder.FIFO, QueueConfig.SharedOrder.FAIR)) {
      List<TrafficCost.Result> results = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        results.add(cost.replay(trace, policy, order, 7 + i));
      }
      Stats light = stats(results, TrafficCost.Result::lightWaitP99);
      lightP99.put(order, light);
      report.add(
          F6,
          trace.name()
              + " ("
              + trace.arrivals().size()
              + " jobs), "
              + policy.name()
              + ", shared lane `"
              + order.label()
              + "`: light users' wait p99",
          light,
          " s",
          0,
          "heavy user's wait p50 "
              + Report.format(stats(results, TrafficCost.Result::heavyWaitP50).median(), 0)
              + " s; all jobs p99 "
              + Report.format(stats(results, TrafficCost.Result::waitP99).median(), 0)
              + " s; billed worker-s per job-s "
              + Report.format(stats(results, TrafficCost.Result::billedPerJobSecond).median(), 2)
              + (order == QueueConfig.SharedOrder.FAIR
                  ? "; fair ÷ fifo = "
                      + Report.format(
                          light.median() / lightP99.get(QueueConfig.SharedOrder.FIFO).median(), 2)
                  : ""));
    }
    report.note(
        "- Trace **"
            + trace.name()
            + "**: "
            + trace.description()
            + "; replayed under `fifo` and under `fair`"
            + " (turns by user, the default) with the reference's chain window.");
  }
}
