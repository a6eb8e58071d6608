package buildqueue.bench;

import static buildqueue.bench.Figures.F3;
import static buildqueue.bench.Figures.stats;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Figure 3's peers: each run on a fresh empty database (a Node.js peer as a process, a JVM peer in
 * this JVM), and the rows and the at-a-glance table their rates make beside ours.
 */
final class PeerRuns {
  private final BenchPostgres pg;
  private final BenchMain.Plan plan;
  private final Report report;

  PeerRuns(BenchPostgres pg, BenchMain.Plan plan, Report report) {
    this.pg = pg;
    this.plan = plan;
    this.report = report;
  }

  String peerRun(
      Peers peers,
      String script,
      Map<String, String> settings,
      int users,
      int perUser,
      int concurrency,
      List<Double> rates,
      List<Double> commits) {
    return measure(
        script,
        db ->
            peers.run(
                script,
                settings,
                pg.postgresUrl(db),
                users,
                perUser,
                concurrency,
                peerCapSeconds()),
        rates,
        commits);
  }

  /**
   * One run of a peer on a fresh empty database: its rate, and its commits per job once it has
   * closed its connections. Returns why it failed, or null; a failure (a JVM peer's missing class
   * too) leaves the row "not measured" and the rest of the run going.
   */
  private String measure(
      String peer,
      java.util.function.Function<String, Peers.Result> run,
      List<Double> rates,
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

  /**
   * A JVM peer's version; a jar missing from the classpath shows here and in its rows, not as a
   * failed figure.
   */
  static String jvmPeerVersion(java.util.function.Supplier<String> version) {
    try {
      return version.get();
    } catch (LinkageError e) {
      return "not available (" + e + ")";
    }
  }

  /** A JVM peer's run, and whether its shutdown left threads of its own running in this JVM. */
  String measureInJvm(
      String peer,
      java.util.function.Function<String, Peers.Result> run,
      List<Double> rates,
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

  /**
   * A peer's CPU shares while processing, by its rate list (identity), for the peers in this JVM.
   */
  private final Map<List<Double>, List<CpuBusy.Share>> cpuShares =
      new java.util.IdentityHashMap<>();

  /**
   * The threads a JVM peer left running after its shutdown, by its rate list (identity), told in
   * its row.
   */
  private final Map<List<Double>, String> leftThreads = new java.util.IdentityHashMap<>();

  /** The rate lists (by identity) of which a run stopped at the cap with jobs left. */
  private final java.util.Set<List<Double>> cappedRuns =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

  int peerCapSeconds() {
    return plan.quick() ? 20 : 30;
  }

  /** Ours ÷ each peer by load, for the table of figure 3 at a glance: peer → load → ratio. */
  private final Map<String, Map<String, String>> ratios = new LinkedHashMap<>();

  void peerLine(
      String peer,
      String setup,
      List<Double> rates,
      List<Double> commits,
      String error,
      Stats ours,
      String how) {
    if (rates.isEmpty()) {
      ratios.computeIfAbsent(peer, k -> new LinkedHashMap<>()).put(setup, "not measured");
      report.add(F3, peer + ", " + setup + ": jobs/s", "—", "—", "0", "not measured: " + error);
      return;
    }
    Stats s = new Stats(rates);
    ratios
        .computeIfAbsent(peer, k -> new LinkedHashMap<>())
        .put(setup, ratio(ours.median() / s.median()) + "×");
    report.add(
        F3,
        peer + ", " + setup + ": jobs/s",
        s,
        "/s",
        0,
        "ours ÷ "
            + peer
            + " = "
            + ratio(ours.median() / s.median())
            + "×; commits/job "
            + Report.format(new Stats(commits).median(), 2)
            + "; "
            + how
            + (cpuShares.containsKey(rates)
                ? "; " + medianShare(cpuShares.remove(rates)).describe()
                : "")
            + (error != null ? "; some runs failed: " + error : "")
            + (leftThreads.containsKey(rates)
                ? "; threads left running after its shutdown: " + leftThreads.remove(rates)
                : "")
            + (cappedRuns.remove(rates)
                ? "; stopped after " + peerCapSeconds() + " s with jobs left: the rate it reached"
                : ""));
  }

  /**
   * Figure 3 at a glance: our throughput ÷ each peer's on each load, from the rows above (a peer
   * that did not run a load says so). Above 1 we processed faster.
   */
  String ratioTable() {
    List<String> loads =
        ratios.values().stream().flatMap(m -> m.keySet().stream()).distinct().toList();
    StringBuilder b =
        new StringBuilder("### Figure 3 at a glance: our jobs/s ÷ each peer's\n\n| peer |");
    loads.forEach(l -> b.append(' ').append(l).append(" |"));
    b.append("\n|---|").append("---:|".repeat(loads.size())).append('\n');
    ratios.forEach(
        (peer, byLoad) -> {
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
    return new CpuBusy.Share(
        stats(shares, CpuBusy.Share::machine).median(),
        stats(shares, CpuBusy.Share::postgres).median(),
        stats(shares, CpuBusy.Share::jvm).median());
  }
}
