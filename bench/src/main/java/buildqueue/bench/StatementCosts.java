package buildqueue.bench;

import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.testing.InProcessPlatform.LaunchPlan;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where PostgreSQL spends its CPU per job under figure 3's load, statement by statement: the
 * evidence behind "What limits each figure" (items 2 and 3). Not a figure: the benchmark's
 * PostgreSQL runs without pg_stat_statements, whose bookkeeping would weigh on every figure. Run by
 * hand, after {@code mvn -B -ntp -pl bench -am package -DskipTests}:
 *
 * <pre>java -cp bench/target/buildqueue-bench.jar buildqueue.bench.StatementCosts [users ...]</pre>
 *
 * For each load (default 1, 10 and 100 users with a dedicated lane each, 2,000 no-op jobs in all,
 * as figure 3) it prints the processing rate, the CPU the server's processes used per job (user +
 * system time from /proc of the postmaster's children, so other servers on a shared machine do not
 * count) and, per statement PostgreSQL saw (statements inside functions too: {@code track = all}),
 * calls, plans, planning and execution milliseconds per call, buffers and WAL per call. Times are
 * wall-clock inside the server, so on a busy machine they include waiting for a core; the CPU per
 * job is the steadier figure.
 */
public final class StatementCosts {
  private static final Json EMPTY = new Json("{}");
  private static final int TOTAL = 2000;

  /** Figure 3's pool; {@code -Dcosts.pool=N} runs the loads on another (fewer busy connections). */
  private static final int POOL = Integer.getInteger("costs.pool", 20);

  private StatementCosts() {}

  public static void main(String[] args) throws Exception {
    List<Integer> loads = new ArrayList<>();
    for (String a : args) {
      loads.add(Integer.parseInt(a));
    }
    if (loads.isEmpty()) {
      loads = List.of(1, 10, 100);
    }
    try (BenchPostgres pg =
        BenchPostgres.start(
            Map.of(
                "shared_preload_libraries",
                "pg_stat_statements",
                "pg_stat_statements.track",
                "all",
                "pg_stat_statements.track_planning",
                "on"))) {
      pg.execute("create extension pg_stat_statements");
      for (int users : loads) {
        run(pg, users, TOTAL / users);
      }
    }
  }

  private static void run(BenchPostgres pg, int users, int perUser) throws SQLException {
    QueueConfig config =
        QueueConfig.defaults()
            .withMaxQueuedJobs(Math.max(perUser, QueueConfig.DEFAULT_MAX_QUEUED_JOBS));
    try (QueueRig rig = new QueueRig(pg, "bq_costs", config, POOL)) {
      for (int u = 0; u < users; u++) {
        rig.queue.setDedicated("u" + u, true);
        rig.platform.plan(LaunchPlan.normal().startLate());
      }
      reset(pg);
      for (int j = 0; j < perUser; j++) {
        for (int u = 0; u < users; u++) {
          rig.queue.enqueue("u" + u, "noop", EMPTY, null);
        }
      }
      int jobs = users * perUser;
      print(pg, rig.database, users + " user(s): enqueue", jobs, users);
      reset(pg);
      long cpu0 = serverTicks(pg);
      long t0 = System.nanoTime();
      rig.platform.releaseHeldStarts();
      rig.awaitAllEnded();
      double seconds = (System.nanoTime() - t0) / 1e9;
      double cpuMsPerJob = (serverTicks(pg) - cpu0) * 10.0 / jobs;
      System.out.printf(
          "%d user(s), %d jobs: %.0f jobs/s processing; PostgreSQL CPU %.3f ms per job%n",
          users, jobs, jobs / seconds, cpuMsPerJob);
      print(
          pg,
          rig.database,
          users + " user(s): processing (job end + next job, start, exit)",
          jobs,
          users);
    }
  }

  private static void reset(BenchPostgres pg) {
    pg.execute("select pg_stat_statements_reset()");
  }

  /**
   * Statements called at least once per worker or once per ten jobs, whichever is fewer calls,
   * costliest first: a worker's start, exit and the dispatch after it are as much of a job's cost
   * as its end when each worker runs few jobs.
   */
  private static void print(BenchPostgres pg, String database, String phase, int jobs, int users)
      throws SQLException {
    int minCalls = Math.min(jobs / 10, users);
    String sql =
        "select calls, plans, total_plan_time, total_exec_time, shared_blks_hit + shared_blks_read,"
            + " wal_records, wal_bytes, toplevel, regexp_replace(left(query, 100), '\\s+', ' ', 'g')"
            + " from pg_stat_statements where dbid = (select oid from pg_database where datname = '"
            + database
            + "')"
            + " and calls >= "
            + minCalls
            + " order by total_plan_time + total_exec_time desc limit 16";
    try (Connection c = DriverManager.getConnection(pg.jdbcUrl("postgres"), "postgres", "");
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      System.out.println(
          "  "
              + phase
              + " — per call: calls, plans, plan ms, exec ms, buffers, WAL records, WAL bytes");
      while (rs.next()) {
        long calls = rs.getLong(1);
        System.out.printf(
            "  %6d %6d %8.3f %8.3f %7.1f %6.1f %7.0f  %s%s%n",
            calls,
            rs.getLong(2),
            rs.getDouble(3) / calls,
            rs.getDouble(4) / calls,
            rs.getDouble(5) / calls,
            rs.getDouble(6) / calls,
            rs.getDouble(7) / calls,
            rs.getBoolean(8) ? "" : "(inside a function) ",
            rs.getString(9));
      }
    }
  }

  /** User + system clock ticks of the postmaster and its children (the backends and helpers). */
  private static long serverTicks(BenchPostgres pg) {
    long postmaster = pg.postmasterPid();
    return ProcessStat.all().stream()
        .filter(p -> p.pid() == postmaster || p.ppid() == postmaster)
        .mapToLong(ProcessStat::cpuTicks)
        .sum();
  }
}
