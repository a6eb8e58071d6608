package buildqueue.bench;

import buildqueue.core.DispatchTransitions;
import buildqueue.core.JobTransitions;
import buildqueue.core.QueueConfig;
import buildqueue.core.RowLimits;
import buildqueue.core.TickTransitions;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The plans PostgreSQL chose for the queue's hot statements at scale, from {@code EXPLAIN
 * (ANALYZE, BUFFERS)}: the evidence that they use indexes rather than scans of {@code build_job}.
 * The statements are read from the transition classes (where they live as private constants) and,
 * for a worker's transitions, from the body of their function in V006, so the plans are of exactly
 * the SQL the queue runs.
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
    statements.put("dispatch of the shared lane by the turns", new Object[] {DispatchTransitions.class, "DISPATCH_TAKING_TURNS",
        Params.of("now", null, "lane", "shared", "capacity", 1).and("token", UUID.randomUUID())
            .and("leaseMs", 3_900_000L).and("fair", true).and("holdLane", true)});
    statements.put("tick: claim due checks", new Object[] {TickTransitions.class, "CLAIM_DUE_CHECKS",
        Params.of("now", null, "intervalMs", 0L, "limit", 100).and("asOf", null)});
    statements.put("tick: expired leases", new Object[] {TickTransitions.class, "EXPIRED_LEASES",
        Params.of("now", null, "afterId", 0L, "limit", 100)});
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
    Params params = Params.of("p_now", null, "p_worker_id", workerId, "p_token", token).and("p_log_tail", null)
        .and("p_log_bytes", 0L).and("p_log_location", null).and("p_job_id", jobId).and("p_status", "succeeded")
        .and("p_progress", null).and("p_error", null).and("p_chain_window_ms", config.chainWindow().toMillis())
        .and("p_deadline_margin_ms", config.deadlineMargin().toMillis()).and("p_linger", false)
        .and("p_fair", true);
    return plan(db, "chaining: job end + next job by the turns", workerFunctionBody("build_worker_end"), params);
  }

  /**
   * The statement inside one of the worker functions (V006, which wrote V005's statements again in
   * PL/pgSQL), its arguments as named parameters typed as the function declares them. EXPLAIN of
   * the call would show only a Function Scan, hiding whether the statement inside reads indexes.
   */
  private static String workerFunctionBody(String function) {
    String migration;
    try (InputStream in = ScalePlans.class.getResourceAsStream("/buildqueue/db/migrations/V006__worker_plans.sql")) {
      migration = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // The function's first statement: for build_worker_end, the one with the fair lane's turns.
    Matcher m = Pattern.compile("create or replace function " + function
        + "\\((.*?)\\)\\s*returns.*?return query(.*?)\\\\073", Pattern.DOTALL).matcher(migration);
    if (!m.find()) {
      throw new IllegalStateException(function + " is no longer in V006__worker_plans.sql");
    }
    // The body is an escape string: its quotes are doubled.
    String body = m.group(2).replace("''", "'").replaceAll("--[^\\n]*", "");
    for (String argument : m.group(1).split(",")) {
      String[] nameAndType = argument.trim().split("\\s+", 2);
      body = body.replaceAll("\\b" + nameAndType[0] + "\\b", ":" + nameAndType[0] + "::" + nameAndType[1]);
    }
    return body;
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
