package buildqueue.faults;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The rows the invariants are about, read after a step through the checker's own connection: the
 * workers, the jobs, the last event's id, each job's published artifacts ({@code
 * build_job_artifact}, by name), and the tick's armed flag (V014).
 */
record Snapshot(
    Map<Long, W> workers,
    Map<Long, J> jobs,
    long lastEvent,
    Map<Long, List<A>> artifacts,
    boolean armed) {

  record W(
      long id,
      String lane,
      String slot,
      UUID token,
      String status,
      String taskId,
      Instant expiresAt,
      Instant startedAt,
      String exitReason) {
    boolean exited() {
      return status.equals("exited");
    }
  }

  record J(
      long id,
      String userId,
      String lane,
      String status,
      Long workerId,
      int progress,
      int checkpoint,
      int recoveries,
      int attempts,
      int launchFailures,
      Instant notBefore,
      boolean cancelRequested,
      String error,
      String idempotencyKey,
      String payload,
      int priority) {
    boolean finished() {
      return status.equals("succeeded") || status.equals("failed") || status.equals("cancelled");
    }

    boolean onWorker() {
      return status.equals("dispatched") || status.equals("running");
    }
  }

  /** One published artifact of a job: its file, and the attempt (on a worker) whose file it is. */
  record A(String name, long bytes, String sha256, int attempt, long workerId) {}

  static final Snapshot EMPTY = new Snapshot(Map.of(), Map.of(), 0, Map.of(), true);

  static final class Reader implements AutoCloseable {
    private final PreparedStatement all;

    /**
     * Four statements in one round trip: the driver sends them together and returns four results.
     */
    Reader(Connection c) throws SQLException {
      all =
          c.prepareStatement(
              """
          select id, lane, slot, token, status, task_id, expires_at, started_at, exit_reason from build_worker order by id;
          select id, user_id, lane, status, worker_id, progress, checkpoint, recoveries, attempts, launch_failures,
                 not_before, cancel_requested, error, idempotency_key, payload::text as payload, priority
          from build_job order by id;
          select coalesce(max(id), 0) from build_job_event;
          select job_id, name, bytes, sha256, attempt, worker_id from build_job_artifact order by job_id, name;
          select armed from build_tick_arm""");
    }

    Snapshot read() {
      try {
        all.execute();
        Map<Long, W> ws = new LinkedHashMap<>();
        try (ResultSet r = all.getResultSet()) {
          while (r.next()) {
            ws.put(
                r.getLong(1),
                new W(
                    r.getLong(1),
                    r.getString(2),
                    r.getString(3),
                    (UUID) r.getObject(4),
                    r.getString(5),
                    r.getString(6),
                    instant(r.getTimestamp(7)),
                    instant(r.getTimestamp(8)),
                    r.getString(9)));
          }
        }
        all.getMoreResults();
        Map<Long, J> js = new LinkedHashMap<>();
        try (ResultSet r = all.getResultSet()) {
          while (r.next()) {
            long worker = r.getLong(5);
            js.put(
                r.getLong(1),
                new J(
                    r.getLong(1),
                    r.getString(2),
                    r.getString(3),
                    r.getString(4),
                    r.wasNull() ? null : worker,
                    r.getInt(6),
                    r.getInt(7),
                    r.getInt(8),
                    r.getInt(9),
                    r.getInt(10),
                    instant(r.getTimestamp(11)),
                    r.getBoolean(12),
                    r.getString(13),
                    r.getString(14),
                    r.getString(15),
                    r.getInt(16)));
          }
        }
        all.getMoreResults();
        long last;
        try (ResultSet r = all.getResultSet()) {
          r.next();
          last = r.getLong(1);
        }
        all.getMoreResults();
        Map<Long, List<A>> as = new LinkedHashMap<>();
        try (ResultSet r = all.getResultSet()) {
          while (r.next()) {
            as.computeIfAbsent(r.getLong(1), k -> new ArrayList<>())
                .add(
                    new A(r.getString(2), r.getLong(3), r.getString(4), r.getInt(5), r.getLong(6)));
          }
        }
        all.getMoreResults();
        boolean armed;
        try (ResultSet r = all.getResultSet()) {
          armed = !r.next() || r.getBoolean(1);
        }
        return new Snapshot(
            Collections.unmodifiableMap(ws),
            Collections.unmodifiableMap(js),
            last,
            Collections.unmodifiableMap(as),
            armed);
      } catch (SQLException e) {
        throw new IllegalStateException("could not read the snapshot: " + e.getMessage(), e);
      }
    }

    private static Instant instant(Timestamp t) {
      return t == null ? null : t.toInstant();
    }

    @Override
    public void close() throws SQLException {
      all.close();
    }
  }
}
