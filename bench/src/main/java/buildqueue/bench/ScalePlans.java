package buildqueue.bench;

import buildqueue.core.DispatchTransitions;
import buildqueue.core.JobTransitions;
import buildqueue.core.TickTransitions;
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
            .and("sharedSlots", 1)});
    statements.put("dispatch", new Object[] {DispatchTransitions.class, "DISPATCH",
        Params.of("now", null, "lane", "shared", "capacity", 1).and("token", UUID.randomUUID())
            .and("leaseMs", 3_900_000L)});
    statements.put("tick: claim due checks", new Object[] {TickTransitions.class, "CLAIM_DUE_CHECKS",
        Params.of("now", null, "intervalMs", 0L, "limit", 100)});
    statements.put("tick: expired leases", new Object[] {TickTransitions.class, "EXPIRED_LEASES",
        Params.of("now", null, "limit", 100)});
    statements.put("tick: lanes to dispatch", new Object[] {TickTransitions.class, "LANES_TO_DISPATCH",
        Params.of("sharedSlots", 1)});
    statements.put("tick: housekeeping", new Object[] {TickTransitions.class, "HOUSEKEEP",
        Params.of("now", null, "retentionMs", 604_800_000L, "limit", 1000)});
    for (Map.Entry<String, Object[]> e : statements.entrySet()) {
      Object[] v = e.getValue();
      String sql = constant((Class<?>) v[0], (String) v[1]);
      // A diagnostic prefix on the queue's own statement; nothing else is ever concatenated.
      List<Row> rows = db.query("explain (analyze, buffers) " + sql, (Params) v[2]);
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
          .anyMatch(l -> l.contains("Seq Scan on build_job ") && !l.contains("never executed"));
      plans.add(new Plan(e.getKey(), planning, execution, seq, text.toString()));
    }
    return plans;
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
