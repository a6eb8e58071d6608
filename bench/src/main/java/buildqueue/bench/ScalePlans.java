package buildqueue.bench;

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
 * The plans PostgreSQL chose for the queue's hot statements at scale, from {@code EXPLAIN (ANALYZE,
 * BUFFERS)}: the evidence that they use indexes rather than scans of {@code build_job}. The
 * statements are read from the transition classes (where they live as private constants) and, for
 * the choice of a lane's next job, from the body of its function in V008, so the plans are of
 * exactly the SQL the queue runs.
 */
final class ScalePlans {
  /**
   * One statement's plan: its timings, whether it ran a sequential scan of build_job, and the text.
   */
  record Plan(
      String statement,
      double planningMs,
      double executionMs,
      boolean seqScanOfJobs,
      String text) {}

  private ScalePlans() {}

  static List<Plan> explain(Database db) {
    List<Plan> plans = new ArrayList<>();
    Map<String, Object[]> statements = new java.util.LinkedHashMap<>();
    statements.put(
        "enqueue",
        new Object[] {
          JobTransitions.class,
          "ENQUEUE",
          Params.of("now", null, "userId", "u150", "kind", "noop")
              .and("payload", new Json("{}"))
              .and("key", null)
              .and("supersedeKey", null)
              .and("sharedSlots", 1)
              .and("maxPayloadBytes", RowLimits.MAX_PAYLOAD_BYTES)
              .and("defaultMaxQueued", QueueConfig.DEFAULT_MAX_QUEUED_JOBS)
              .and("maxListed", JobTransitions.MAX_SUPERSEDED_LISTED)
        });
    statements.put(
        "tick: claim due checks",
        new Object[] {
          TickTransitions.class,
          "CLAIM_DUE_CHECKS",
          Params.of("now", null, "intervalMs", 0L, "limit", 100).and("asOf", null)
        });
    statements.put(
        "tick: expired leases",
        new Object[] {
          TickTransitions.class,
          "EXPIRED_LEASES",
          Params.of("now", null, "afterId", 0L, "limit", 100)
        });
    statements.put(
        "tick: lanes to dispatch",
        new Object[] {
          TickTransitions.class,
          "LANES_TO_DISPATCH",
          Params.of("sharedSlots", 1, "after", null, "limit", 100)
        });
    statements.put(
        "tick: housekeeping",
        new Object[] {
          TickTransitions.class,
          "HOUSEKEEP",
          Params.of("now", null, "retentionMs", 604_800_000L, "limit", 1000)
        });
    for (Map.Entry<String, Object[]> e : statements.entrySet()) {
      Object[] v = e.getValue();
      plans.add(plan(db, e.getKey(), constant((Class<?>) v[0], (String) v[1]), (Params) v[2]));
    }
    // The dispatch is a function (build_lane_dispatch): its one statement with a plan worth seeing
    // is the choice it calls.
    plans.add(
        plan(
            db,
            "dispatch of the shared lane by the turns: the choice",
            laneChoice(),
            Params.of("p_lane", "shared", "p_hold_lane", true, "p_now", null)));
    return plans;
  }

  /**
   * The plan of a live worker's chaining choice in the shared lane by the turns (build_worker_end
   * calls build_lane_next_job once its job has ended; it runs: the turn is served).
   */
  static Plan explainChaining(
      Database db, QueueConfig config, long workerId, UUID token, long jobId) {
    return plan(
        db,
        "chaining: next job by the turns",
        laneChoice(),
        Params.of("p_lane", "shared", "p_hold_lane", false, "p_now", null));
  }

  /**
   * The turns' statement inside build_lane_next_job (V008, the one source of the choice), its
   * arguments as named parameters. EXPLAIN of the call would show only a Function Scan, hiding
   * whether the statement inside reads indexes.
   */
  private static String laneChoice() {
    String migration;
    try (InputStream in =
        ScalePlans.class.getResourceAsStream("/buildqueue/db/migrations/V008__lane_choice.sql")) {
      migration = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Matcher m =
        Pattern.compile(
                "(with recursive retry_head as .*?) into v_job (from head h .*?);", Pattern.DOTALL)
            .matcher(migration);
    if (!m.find()) {
      throw new IllegalStateException("the turns' statement is no longer in V008__lane_choice.sql");
    }
    return (m.group(1) + " " + m.group(2))
        .replaceAll("--[^\\n]*", "")
        .replaceAll("\\bv_now\\b", "coalesce(:p_now::timestamptz, now())")
        .replaceAll("\\bp_lane\\b", ":p_lane::text")
        .replaceAll("\\bp_hold_lane\\b", ":p_hold_lane::boolean");
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
    boolean seq =
        text.toString()
            .lines()
            .anyMatch(
                l ->
                    (l.contains("Seq Scan on build_job ")
                            || l.contains("Seq Scan on build_lane_turn "))
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
      throw new IllegalStateException(
          type.getSimpleName() + "." + name + " is no longer there: " + e, e);
    }
  }
}
