package buildqueue.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/** Runs each figure in order and puts its lines in the report; a figure that fails says why. */
final class Figures {
  static final String F1 = "1 statements per job";
  static final String F2 = "2 physical limit";
  static final String F3 = "3 throughput vs peers";
  static final String F4 = "4 scale";
  static final String F5 = "5 slot turnaround";
  static final String F6 = "6 cost on traffic";
  static final String F7 = "7 Lambda cold start";

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
    report.add(F1, "statements per job, fresh worker (enqueue → exit)", freshStatements, "", 1,
        "reference: " + ReferenceCount.FRESH_STATEMENTS + " (" + Report.format(ReferenceCount.FRESH_STATEMENTS / freshStatements.median(), 1) + "×)");
    report.add(F1, "commits per job, fresh worker (pg_stat_database)", freshCommits, "", 1,
        "reference: " + ReferenceCount.FRESH_COMMITS + " (" + Report.format(ReferenceCount.FRESH_COMMITS / freshCommits.median(), 1) + "×)");
    report.add(F1, "statements per chained job (enqueue + chain)", chainedStatements, "", 1,
        "reference: " + ReferenceCount.CHAINED_STATEMENTS + " (" + Report.format(ReferenceCount.CHAINED_STATEMENTS / chainedStatements.median(), 1) + "×)");
    report.add(F1, "commits per chained job (pg_stat_database)", chainedCommits, "", 1,
        "reference: " + ReferenceCount.CHAINED_COMMITS + " (" + Report.format(ReferenceCount.CHAINED_COMMITS / chainedCommits.median(), 1) + "×)");
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
    report.add(F2, "single-row commits/s, 16 connections", manyStats, "/s", 0,
        "the ceiling; ÷ our commits per job = " + Report.format(commitCeiling / chainedCommitsPerJob, 0)
            + " chained jobs/s, " + Report.format(commitCeiling / freshCommitsPerJob, 0) + " fresh-worker jobs/s");
  }

  double commitCeiling() {
    return commitCeiling;
  }

  static <T> Stats stats(List<T> runs, ToDoubleFunction<T> f) {
    List<Double> values = new ArrayList<>();
    for (T r : runs) {
      values.add(f.applyAsDouble(r));
    }
    return new Stats(values);
  }
}
