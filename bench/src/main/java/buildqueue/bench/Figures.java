package buildqueue.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * Runs each figure in order and puts its lines in the report; a figure that fails says why. Figures
 * 1, 2, 4, 5 and 8 are measured here; 3 ({@link ThroughputFigure}), 6 ({@link TrafficCostFigure})
 * and 7 ({@link ColdStartFigure}) in classes of their own.
 */
final class Figures {
  static final String F1 = "1 statements per job";
  static final String F2 = "2 physical limit";
  static final String F3 = "3 throughput vs peers";
  static final String F4 = "4 scale";
  static final String F5 = "5 slot turnaround";
  static final String F6 = "6 cost on traffic";
  static final String F7 = "7 Lambda cold start";
  static final String F8 = "8 a program job's cost";

  private final BenchPostgres pg;
  private final BenchMain.Plan plan;
  private final Report report;
  private final Environment env;

  /** Results later figures refer to. */
  private double freshCommitsPerJob = Double.NaN;

  private double chainedCommitsPerJob = Double.NaN;
  private double commitCeiling = Double.NaN;

  Figures(BenchPostgres pg, BenchMain.Plan plan, Report report, Environment env) {
    this.pg = pg;
    this.plan = plan;
    this.report = report;
    this.env = env;
  }

  void runAll() {
    run(1, F1, this::statementsPerJob);
    run(2, F2, this::physicalLimit);
    run(3, F3, () -> new ThroughputFigure(pg, plan, report, env).run(commitCeiling));
    run(4, F4, this::scale);
    run(5, F5, this::slotTurnaround);
    run(6, F6, () -> new TrafficCostFigure(pg, plan, report).run());
    run(7, F7, () -> new ColdStartFigure(pg, plan, report).run());
    run(8, F8, this::execCost);
  }

  private void execCost() throws InterruptedException {
    ExecCost cost = new ExecCost(pg);
    int seconds = plan.quick() ? 10 : 60;
    for (ExecCost.Rate r : cost.rates(seconds)) {
      int ran =
          r.program().startsWith("quiet") ? Math.max(seconds, ExecCost.QUIET_SECONDS) : seconds;
      report.add(
          F8,
          "statements per minute while a program runs: " + r.program(),
          Report.format(r.statementsPerMinute(), 1),
          "—",
          "1",
          ran + " s run, beyond the 6 of any fresh-worker job");
    }
    int cancels = 20;
    ExecCost.CancelLatencies latencies = cost.cancelLatencies(cancels);
    Stats c = new Stats(latencies.millis());
    report.add(
        F8,
        "cancel latency of a silent program (request → job cancelled)",
        c,
        " ms",
        1,
        cancels
            + " cancels, max "
            + Report.format(c.max(), 1)
            + " ms; in-process platform, real programs; "
            + latencies.endedCancelled()
            + " ended cancelled, "
            + latencies.interrupted()
            + " interrupted");
    int jobs = plan.quick() ? 50 : 200;
    List<Double> noop = new ArrayList<>();
    List<Double> program = new ArrayList<>();
    for (int i = 0; i < plan.runs(); i++) {
      double[] ms = cost.perJobMillis(jobs);
      noop.add(ms[0]);
      program.add(ms[1]);
    }
    Stats n = new Stats(noop);
    Stats p = new Stats(program);
    report.add(
        F8,
        "chained job, handled in the worker's JVM (noop)",
        n,
        " ms",
        1,
        jobs + " jobs on one worker");
    report.add(
        F8,
        "chained job running a program (`true`)",
        p,
        " ms",
        1,
        "the program's start, watch and cleanup add "
            + Report.format(p.median() - n.median(), 1)
            + " ms a job");
    report.note(
        """
        ### What a program job costs (figure 8)

        The real process runner under the real worker loop, over JDBC, on this machine: a program is started through
        `setsid` and `sh` in a fresh directory, watched every 100 ms, and every process of its session is gone before
        the job ends. While it runs, a program costs statements only when one is due: its progress and its log tail at
        most every 2 s (one statement for both), otherwise a heartbeat once a minute. A cancel is pushed, not polled: the queue
        stops the job's worker (StopTask on ECS, SIGTERM locally), which stops the program as for any stop (SIGTERM to
        its group, the kind's grace, SIGKILL) and records the interruption that ends the job cancelled; the heartbeat
        reads the cancel flag only as the fallback for a stop that was lost. A job that prints nothing and ends within a
        minute costs the same 7 (fresh worker) or 2 (chained) statements as any other (`StatementCountTest`).

        What limits the cancel latency: the worker's next look at its program (every
        100 ms, so up to 100 ms), then SIGTERM to the program at once (`sleep` dies of it), the check-in that reads the
        cancel flag and the job's end (two statements, a few ms each here), and the 2 ms poll that sees the job cancelled.
        The heartbeat (one a minute) bounds only a cancel whose stop was lost. Measured on the in-process platform, whose stop requests the worker's `WorkerStop` as a worker
        process's SIGTERM hook does: the signal's delivery and the JVM's shutdown hook (local), or StopTask's call and
        ECS's SIGTERM (AWS, about a second), come on top. On AWS a cancel also costs the lane its warm worker: the next
        job starts a fresh one.
        """);
  }

  private void scale() {
    Scale scale = new Scale(pg);
    int batches = plan.quick() ? 2 : 5;
    int perBatch = plan.quick() ? 10 : 40;
    int big = plan.quick() ? 100_000 : 1_000_000;
    Memory.resetPeaks();
    Scale.Result small = scale.run(1_000, batches, perBatch);
    Scale.Result large = scale.run(big, batches, perBatch);
    String sizes =
        "1,000 vs "
            + Report.format(big, 0)
            + " queued jobs, "
            + Report.format(Scale.USERS, 0)
            + " users";
    scaleLines(
        "fair dispatch of the shared lane (dispatch by the turns + record launch)",
        small.dispatchMs(),
        large.dispatchMs(),
        sizes);
    scaleLines(
        "fair chaining (a live worker ends its job and takes the next by the turns)",
        small.chainMs(),
        large.chainMs(),
        sizes);
    scaleLines(
        "tick (101 live workers checked, 101 lanes walked, housekeeping)",
        small.tickMs(),
        large.tickMs(),
        sizes);
    scaleLines("enqueue into a full lane", small.enqueueMs(), large.enqueueMs(), sizes);
    scalePlans(small, large, big);
    report.add(
        F4,
        "peak JVM memory during the scale runs",
        Memory.peakHeapMiB() + " MiB heap",
        "—",
        "1",
        "peak resident set of the whole benchmark JVM: "
            + Memory.peakRssMiB()
            + " MiB (VmHWM); bulk insert of "
            + Report.format(big, 0)
            + " jobs took "
            + Report.format(large.bulkInsertSeconds(), 1)
            + " s");
  }

  private void scalePlans(Scale.Result small, Scale.Result large, int big) {
    StringBuilder b = new StringBuilder("### Plans at scale (figure 4)\n\n");
    b.append(
            "`EXPLAIN (ANALYZE, BUFFERS)` of the queue's hot statements, as sent, after the timed samples ")
        .append(
            "(the dispatch with the shared slot freed; the chaining by a live worker of the shared lane): planning + ")
        .append("execution time with 1,000 and with ")
        .append(Report.format(big, 0))
        .append(" queued jobs over ")
        .append(Report.format(Scale.USERS, 0))
        .append(
            " users (the shared lane takes turns by user), and whether the plan scans `build_job` or `build_lane_turn`.\n\n");
    b.append("| statement | 1,000 jobs | ")
        .append(Report.format(big, 0))
        .append(" jobs | scan of build_job or build_lane_turn |\n|---|---:|---:|---|\n");
    ScalePlans.Plan slowest = null;
    for (int i = 0; i < large.plans().size(); i++) {
      ScalePlans.Plan s = small.plans().get(i);
      ScalePlans.Plan l = large.plans().get(i);
      b.append("| ")
          .append(l.statement())
          .append(" | ")
          .append(Report.format(s.planningMs(), 2))
          .append(" + ")
          .append(Report.format(s.executionMs(), 2))
          .append(" ms | ")
          .append(Report.format(l.planningMs(), 2))
          .append(" + ")
          .append(Report.format(l.executionMs(), 2))
          .append(" ms | ")
          .append(l.seqScanOfJobs() ? "**yes**" : "no")
          .append(" |\n");
      if (slowest == null || l.executionMs() > slowest.executionMs()) {
        slowest = l;
      }
    }
    for (ScalePlans.Plan l : large.plans()) {
      if (l == slowest
          || l.seqScanOfJobs()
          || l.statement().startsWith("chaining")
          || l.statement().startsWith("dispatch")) {
        b.append("\n`")
            .append(l.statement())
            .append("` at ")
            .append(Report.format(big, 0))
            .append(" jobs")
            .append(l == slowest ? " (the slowest)" : "")
            .append(l.seqScanOfJobs() ? " (scans build_job)" : "")
            .append(":\n\n```\n")
            .append(l.text())
            .append("```\n");
      }
    }
    report.note(b.toString());
  }

  private void scaleLines(String what, List<Double> small, List<Double> large, String sizes) {
    Stats s = new Stats(small);
    Stats l = new Stats(large);
    report.add(F4, what + ", 1,000 jobs", s, " ms", 2, "median per batch of samples");
    report.add(
        F4,
        what + ", many jobs",
        l,
        " ms",
        2,
        "ratio many ÷ 1,000 = " + Report.format(l.median() / s.median(), 2) + " (" + sizes + ")");
  }

  private void slotTurnaround() throws InterruptedException {
    SlotTurnaround turnaround = new SlotTurnaround(pg);
    int runs = plan.runs();
    int jobs = plan.quick() ? 50 : 200;
    List<Double> p50 = new ArrayList<>();
    List<Double> p99 = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      Stats s = new Stats(turnaround.run(jobs));
      p50.add(s.percentile(50));
      p99.add(s.percentile(99));
    }
    report.add(
        F5,
        "stop evidence → next launch request, p50",
        new Stats(p50),
        " ms",
        2,
        jobs
            + " exits per run in one lane, chain window 0: the exit transition, then dispatch; in-process launch");
    report.add(F5, "stop evidence → next launch request, p99", new Stats(p99), " ms", 2, "");
  }

  private interface Body {
    void run() throws Exception;
  }

  private void run(int number, String figure, Body body) {
    if (!plan.wants(number)) {
      return;
    }
    System.err.println("== figure " + figure);
    long t0 = System.nanoTime();
    try {
      body.run();
    } catch (Exception | AssertionError e) {
      e.printStackTrace();
      report.add(figure, "not measured", "—", "—", "0", "failed: " + e);
    }
    System.err.printf("   (%.0f s)%n", (System.nanoTime() - t0) / 1e9);
  }

  private void statementsPerJob() throws Exception {
    int runs = plan.runs();
    List<StatementsPerJob.Run> r =
        new StatementsPerJob(pg, plan.quick() ? 5 : 20, plan.quick() ? 50 : 200).measure(runs);
    Stats freshStatements = stats(r, StatementsPerJob.Run::freshStatements);
    Stats freshCommits = stats(r, StatementsPerJob.Run::freshCommits);
    Stats chainedStatements = stats(r, StatementsPerJob.Run::chainedStatements);
    Stats chainedCommits = stats(r, StatementsPerJob.Run::chainedCommits);
    freshCommitsPerJob = freshCommits.median();
    chainedCommitsPerJob = chainedCommits.median();
    report.add(
        F1,
        "statements per job, fresh worker (enqueue → exit)",
        freshStatements,
        "",
        1,
        "reference: "
            + ReferenceCount.FRESH_STATEMENTS
            + " ("
            + Report.format(ReferenceCount.FRESH_STATEMENTS / freshStatements.median(), 1)
            + "×)");
    report.add(
        F1,
        "commits per job, fresh worker (pg_stat_database)",
        freshCommits,
        "",
        1,
        "reference: "
            + ReferenceCount.FRESH_COMMITS
            + " ("
            + Report.format(ReferenceCount.FRESH_COMMITS / freshCommits.median(), 1)
            + "×)");
    report.add(
        F1,
        "statements per chained job (enqueue + chain)",
        chainedStatements,
        "",
        1,
        "reference: "
            + ReferenceCount.CHAINED_STATEMENTS
            + " ("
            + Report.format(ReferenceCount.CHAINED_STATEMENTS / chainedStatements.median(), 1)
            + "×)");
    report.add(
        F1,
        "commits per chained job (pg_stat_database)",
        chainedCommits,
        "",
        1,
        "reference: "
            + ReferenceCount.CHAINED_COMMITS
            + " ("
            + Report.format(ReferenceCount.CHAINED_COMMITS / chainedCommits.median(), 1)
            + "×)");
    report.note(ReferenceCount.NOTE);
  }

  private void physicalLimit() {
    CommitCeiling ceiling = new CommitCeiling(pg);
    int seconds = plan.quick() ? 3 : 5;
    int runs = plan.quick() ? 2 : 3;
    List<Double> one = new ArrayList<>();
    List<Double> many = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      one.add(ceiling.commitsPerSecond(1, seconds));
      many.add(ceiling.commitsPerSecond(16, seconds));
    }
    Stats oneStats = new Stats(one);
    Stats manyStats = new Stats(many);
    commitCeiling = Math.max(oneStats.median(), manyStats.median());
    report.add(F2, "single-row commits/s, 1 connection", oneStats, "/s", 0, ceiling.tool());
    report.add(
        F2,
        "single-row commits/s, 16 connections",
        manyStats,
        "/s",
        0,
        "the ceiling; ÷ our commits per job = "
            + Report.format(commitCeiling / chainedCommitsPerJob, 0)
            + " chained jobs/s, "
            + Report.format(commitCeiling / freshCommitsPerJob, 0)
            + " fresh-worker jobs/s");
  }

  static <T> Stats stats(List<T> runs, ToDoubleFunction<T> f) {
    List<Double> values = new ArrayList<>();
    for (T r : runs) {
      values.add(f.applyAsDouble(r));
    }
    return new Stats(values);
  }
}
