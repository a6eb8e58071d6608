package buildqueue.bench;

import buildqueue.core.DispatchTransitions;
import buildqueue.core.JobTransitions;
import buildqueue.core.QueueConfig;
import buildqueue.core.RowLimits;
import buildqueue.core.TickTransitions;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The plans PostgreSQL chose for the queue's hot statements at scale, from {@code EXPLAIN
 * (ANALYZE, BUFFERS)}: the evidence that they use indexes rather than scans of {@code build_job}.
 * The statements are read from the transition classes (where they live as private constants), so
 * the plans are of exactly the SQL the queue sends.
 */
final class ScalePlans {
  /** One statement's plan: its timings, whether it ran a sequential scan of build_job, and the text. */
  record Plan(String statement, double planningMs, double executionMs, boolean seqScanOfJobs, String text) {}

  private ScalePlans() {}

  static List<Plan> explain(Database db) {
    List<Plan> plans = new ArrayList<>();
    Map<String, Object[]> statements = new java.util.LinkedHashMap<>();
    statements.put("enqueue", new Object[] {JobTransitions.class, "ENQUEUE",
        Params.of("now", null, "userId", "u150", "kind", "noop").and("payload", new Json("{}")).and("key", null)
            .and("supersedeKey", null).and("sharedSlots", 1).and("maxPayloadBytes", RowLimits.MAX_PAYLOAD_BYTES)
            .and("defaultMaxQueued", QueueConfig.DEFAULT_MAX_QUEUED_JOBS)
            .and("maxListed", JobTransitions.MAX_SUPERSEDED_LISTED)});
    statements.put("dispatch of the shared lane by the turns", new Object[] {DispatchTransitions.class, "DISPATCH",
        Params.of("now", null, "lane", "shared", "capacity", 1).and("token", UUID.randomUUID())
            .and("leaseMs", 3_900_000L).and("fair", true).and("holdLane", true)});
    statements.put("tick: claim due checks", new Object[] {TickTransitions.class, "CLAIM_DUE_CHECKS",
        Params.of("now", null, "intervalMs", 0L, "limit", 100)});
    statements.put("tick: expired leases", new Object[] {TickTransitions.class, "EXPIRED_LEASES",
        Params.of("now", null, "limit", 100)});
    statements.put("tick: lanes to dispatch", new Object[] {TickTransitions.class, "LANES_TO_DISPATCH",
        Params.of("sharedSlots", 1, "after", null, "limit", 100)});
    statements.put("tick: housekeeping", new Object[] {TickTransitions.class, "HOUSEKEEP",
        Params.of("now", null, "retentionMs", 604_800_000L, "limit", 1000)});
    for (Map.Entry<String, Object[]> e : statements.entrySet()) {
      Object[] v = e.getValue();
      plans.add(plan(db, e.getKey(), constant((Class<?>) v[0], (String) v[1]), (Params) v[2]));
    }
    return plans;
  }

  /**
   * The plan of a live worker's job end that chains the shared lane's next job by the turns (it
   * runs: the worker then holds the next job).
   */
  static Plan explainChaining(Database db, QueueConfig config, long workerId, UUID token, long jobId) {
    Params params = Params.of("now", null, "workerId", workerId, "token", token).and("logTail", null)
        .and("logBytes", 0L).and("logLocation", null).and("jobId", jobId).and("status", "succeeded")
        .and("progress", null).and("error", null).and("chainWindowMs", config.chainWindow().toMillis())
        .and("deadlineMarginMs", config.deadlineMargin().toMillis()).and("linger", false)
        .and("takenBy", "chained onto worker").and("fair", true).and("holdLane", false);
    return plan(db, "chaining: job end + next job by the turns", constant(WorkerTransitions.class, "END"), params);
  }

  private static Plan plan(Database db, String statement, String sql, Params params) {
    // A diagnostic prefix on the queue's own statement; nothing else is ever concatenated.
    List<Row> rows = db.query("explain (analyze, buffers) " + sql, params);
    StringBuilder text = new StringBuilder();
    double planning = Double.NaN;
    double execution = Double.NaN;
    for (Row r : rows) {
      String line = r.string("QUERY PLAN");
      text.append(line).append('\n');
      if (line.startsWith("Planning Time:")) {
        planning = millis(line);
      } else if (line.startsWith("Execution Time:")) {
        execution = millis(line);
      }
    }
    boolean seq = text.toString().lines()
        .anyMatch(l -> (l.contains("Seq Scan on build_job ") || l.contains("Seq Scan on build_lane_turn "))
            && !l.contains("never executed"));
    return new Plan(statement, planning, execution, seq, text.toString());
  }

  private static double millis(String line) {
    return Double.parseDouble(line.replaceAll("[^0-9.]", ""));
  }

  private static String constant(Class<?> type, String name) {
    try {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      return (String) f.get(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(type.getSimpleName() + "." + name + " is no longer there: " + e, e);
    }
  }
}
