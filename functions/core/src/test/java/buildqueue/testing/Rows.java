package buildqueue.testing;

import buildqueue.core.JobStatus;
import buildqueue.core.Lanes;
import buildqueue.core.WorkerStatus;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * A row factory for test fixtures: rows of the queue's tables written straight to the database,
 * with defaults that satisfy the schema's constraints, so that a test names only what matters to
 * it.
 *
 * <pre>{@code
 * long worker = Rows.worker().lane("user:bob").status(WorkerStatus.RUNNING).insert(db);
 * long job = Rows.job().user("bob").ownLane().status(JobStatus.RUNNING).worker(worker).insert(db);
 * List<Long> ids = Rows.job().user("alice").insert(db, 1000);      // one statement
 * Rows.insert(db, users.stream().map(u -> Rows.job().user(u).ownLane()).toList()); // one statement
 * Rows.job().status(JobStatus.CANCELLED).update(db, job);          // only the columns set
 * }</pre>
 *
 * What a row does not set: the schema's default; where the schema has none, times are the
 * database's {@code now()}, a job's user {@code alice} in the {@code shared} lane, its kind {@code
 * noop}, a worker's slot {@code <lane>#1}, its token random and its lease an hour from now. The
 * schema's checks are kept: a finished job gets {@code finished_at = now()}, a failed one an error,
 * an exited worker {@code exited_at = now()}, unless the test set them. A dispatched or running job
 * needs its worker set. However many rows, an insert is one statement: the rows travel as one JSON
 * parameter. These rows skip the transitions (no events, no lane turns): a test that wants those
 * goes through the queue.
 */
public final class Rows {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** An SQL expression in place of a value: the database's clock. */
  private static final Sql NOW = new Sql("now()");

  private Rows() {}

  public static UserRow user(String userId) {
    return new UserRow(userId);
  }

  public static JobRow job() {
    return new JobRow();
  }

  public static WorkerRow worker() {
    return new WorkerRow();
  }

  /** An event of the job's history (type {@code noted} unless set). */
  public static EventRow event(long jobId) {
    return new EventRow(jobId);
  }

  /**
   * Events of no job in particular: a change for {@link TableRow#update} or {@link
   * TableRow#updateAll}.
   */
  public static EventRow events() {
    return new EventRow();
  }

  /**
   * Inserts rows of one table in one statement, in their order; returns their keys in the same
   * order ({@code id}, or {@code user_id} for users).
   */
  public static <R extends TableRow<R>> List<Object> insert(Database db, List<R> rows) {
    if (rows.isEmpty()) {
      return List.of();
    }
    TableRow<R> first = rows.get(0);
    List<Map<String, Object>> values = new ArrayList<>();
    for (R row : rows) {
      values.add(row.forInsert());
    }
    Set<String> columns = new LinkedHashSet<>();
    values.forEach(v -> columns.addAll(v.keySet()));
    List<String> expressions = new ArrayList<>();
    for (String column : columns) {
      expressions.add(expression(column, values));
    }
    String sql =
        "insert into "
            + first.table
            + " ("
            + String.join(", ", columns)
            + ")\n"
            + "select "
            + String.join(", ", expressions)
            + "\n"
            + "from jsonb_populate_recordset(null::"
            + first.table
            + ", :rows::jsonb) r\n"
            + "returning "
            + first.key;
    List<Row> inserted = db.query(sql, Params.of("rows", json(values)));
    if (!first.key.equals("id")) {
      return values.stream().map(v -> v.get(first.key)).toList(); // a key the rows were given
    }
    // Ids come from a sequence in the order the rows were inserted, which is the rows' order.
    return new ArrayList<Object>(inserted.stream().map(r -> r.longValue("id")).sorted().toList());
  }

  /** {@link #insert(Database, List)} for rows whose key is an id. */
  public static <R extends IdRow<R>> List<Long> insertIds(Database db, List<R> rows) {
    return insert(db, rows).stream().map(k -> (Long) k).toList();
  }

  private static String expression(String column, List<Map<String, Object>> rows) {
    Set<Object> sql = new LinkedHashSet<>();
    boolean plain = false;
    for (Map<String, Object> row : rows) {
      Object v = row.get(column);
      if (v instanceof Sql) {
        sql.add(v);
      } else {
        plain = true;
      }
    }
    if (sql.isEmpty()) {
      return "r." + column;
    }
    if (sql.size() > 1 || plain) {
      throw new IllegalArgumentException(
          "rows of one insert differ in how "
              + column
              + " is given (a value in some, the database's in others): insert them apart");
    }
    return ((Sql) sql.iterator().next()).text + " as " + column;
  }

  private static Json json(List<Map<String, Object>> rows) {
    ArrayNode array = JSON.createArrayNode();
    rows.forEach(r -> array.add(jsonObject(r)));
    return new Json(array.toString());
  }

  private static ObjectNode jsonObject(Map<String, Object> row) {
    ObjectNode o = JSON.createObjectNode();
    row.forEach(
        (column, v) -> {
          if (v instanceof Sql) {
            return;
          }
          if (v == null) {
            o.putNull(column);
          } else if (v instanceof Json j) {
            try {
              o.set(column, JSON.readTree(j.text()));
            } catch (JsonProcessingException e) {
              throw new IllegalArgumentException(
                  column + " is not JSON: " + e.getOriginalMessage(), e);
            }
          } else if (v instanceof Long n) {
            o.put(column, n);
          } else if (v instanceof Integer n) {
            o.put(column, n);
          } else if (v instanceof Boolean b) {
            o.put(column, b);
          } else if (v instanceof String || v instanceof Instant || v instanceof UUID) {
            o.put(column, v.toString());
          } else {
            throw new IllegalArgumentException(
                column + ": a row factory value may not be a " + v.getClass().getName());
          }
        });
    return o;
  }

  private record Sql(String text) {}

  /** A row of one table: the columns a test set, what the factory fills in, insert and update. */
  public abstract static class TableRow<R extends TableRow<R>> {
    private final String table;
    private final String key;
    private final Map<String, Object> set = new LinkedHashMap<>();

    private TableRow(String table, String key) {
      this.table = table;
      this.key = key;
    }

    @SuppressWarnings("unchecked")
    R put(String column, Object value) {
      set.put(column, value);
      return (R) this;
    }

    boolean isSet(String column) {
      return set.containsKey(column);
    }

    Object value(String column) {
      return set.get(column);
    }

    /** The factory's values for what the test did not set, given what it did. */
    abstract Map<String, Object> defaults();

    /** What the schema's checks need beside what the test set (a finished job's finished_at). */
    abstract Map<String, Object> implied();

    Map<String, Object> forInsert() {
      Map<String, Object> v = new LinkedHashMap<>(defaults());
      v.putAll(implied());
      v.putAll(set);
      return v;
    }

    /** Inserts this row; returns its key. */
    Object insertKey(Database db) {
      return insert(db, List.of(self())).get(0);
    }

    @SuppressWarnings("unchecked")
    R self() {
      return (R) this;
    }

    /**
     * Sets the columns this row set (and those the schema's checks then need) on the row {@code
     * id}.
     */
    public int update(Database db, Object id) {
      return update(
          db,
          " where t." + key + " = :id",
          Params.of("rows", json(List.of(forUpdate()))).and("id", id));
    }

    /**
     * Sets the columns this row set (and those the schema's checks then need) on every row of the
     * table.
     */
    public int updateAll(Database db) {
      return update(db, "", Params.of("rows", json(List.of(forUpdate()))));
    }

    private int update(Database db, String where, Params params) {
      Map<String, Object> values = forUpdate();
      if (values.isEmpty()) {
        throw new IllegalStateException("an update of " + table + " that sets nothing");
      }
      List<String> assignments = new ArrayList<>();
      values.forEach(
          (column, v) ->
              assignments.add(column + " = " + (v instanceof Sql s ? s.text : "r." + column)));
      String sql =
          "update "
              + table
              + " t set "
              + String.join(", ", assignments)
              + "\n"
              + "from jsonb_populate_record(null::"
              + table
              + ", (:rows::jsonb) -> 0) r"
              + where;
      return db.update(sql, params);
    }

    private Map<String, Object> forUpdate() {
      Map<String, Object> v = new LinkedHashMap<>(implied());
      v.putAll(set);
      return Collections.unmodifiableMap(v);
    }
  }

  /** A row of a table keyed by a generated {@code id}. */
  public abstract static class IdRow<R extends IdRow<R>> extends TableRow<R> {
    private IdRow(String table) {
      super(table, "id");
    }

    /** Inserts this row; returns its id. */
    public long insert(Database db) {
      return (Long) insertKey(db);
    }

    /** Inserts {@code n} such rows in one statement; returns their ids, oldest first. */
    public List<Long> insert(Database db, int n) {
      return insertIds(db, Collections.nCopies(n, self()));
    }
  }

  /** A {@code build_user} row: not dedicated, the queue's default quota. */
  public static final class UserRow extends TableRow<UserRow> {
    private UserRow(String userId) {
      super("build_user", "user_id");
      put("user_id", userId);
    }

    public UserRow dedicated(boolean dedicated) {
      return put("dedicated_worker", dedicated);
    }

    public UserRow maxQueuedJobs(Integer max) {
      return put("max_queued_jobs", max);
    }

    public void insert(Database db) {
      insertKey(db);
    }

    @Override
    Map<String, Object> defaults() {
      return Map.of("dedicated_worker", false, "updated_at", NOW);
    }

    @Override
    Map<String, Object> implied() {
      return Map.of();
    }
  }

  /** A {@code build_job} row: a queued {@code noop} job of alice's in the shared lane. */
  public static final class JobRow extends IdRow<JobRow> {
    /** The error a failed job gets when the test gives none (the schema wants one). */
    public static final String DEFAULT_ERROR = "failed in a test fixture";

    private JobRow() {
      super("build_job");
    }

    public JobRow user(String userId) {
      return put("user_id", userId);
    }

    public JobRow kind(String kind) {
      return put("kind", kind);
    }

    public JobRow payload(String json) {
      return put("payload", new Json(json));
    }

    public JobRow idempotencyKey(String key) {
      return put("idempotency_key", key);
    }

    public JobRow lane(String lane) {
      return put("lane", lane);
    }

    /** The user's dedicated lane, {@code user:<id>} (set the user first). */
    public JobRow ownLane() {
      Object user = value("user_id");
      if (user == null) {
        throw new IllegalStateException("ownLane() needs the user: call user(..) first");
      }
      return lane(Lanes.dedicated((String) user));
    }

    public JobRow status(JobStatus status) {
      return put("status", status.sql());
    }

    public JobRow worker(long workerId) {
      return put("worker_id", workerId);
    }

    public JobRow attempts(int attempts) {
      return put("attempts", attempts);
    }

    public JobRow error(String error) {
      return put("error", error);
    }

    public JobRow createdAt(Instant at) {
      return put("created_at", at);
    }

    public JobRow dispatchedAt(Instant at) {
      return put("dispatched_at", at);
    }

    public JobRow startedAt(Instant at) {
      return put("started_at", at);
    }

    public JobRow finishedAt(Instant at) {
      return put("finished_at", at);
    }

    @Override
    Map<String, Object> defaults() {
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("user_id", "alice");
      d.put("kind", "noop");
      d.put("lane", Lanes.SHARED);
      d.put("created_at", NOW);
      return d;
    }

    @Override
    Map<String, Object> implied() {
      Map<String, Object> d = new LinkedHashMap<>();
      if (!isSet("status")) {
        return d;
      }
      JobStatus status = JobStatus.of((String) value("status"));
      if ((status == JobStatus.DISPATCHED || status == JobStatus.RUNNING)
          && value("worker_id") == null) {
        throw new IllegalStateException(
            "a " + status.sql() + " job needs its worker: call worker(id)");
      }
      if (status.finished()) {
        d.put("finished_at", NOW);
      }
      if (status == JobStatus.FAILED) {
        d.put("error", DEFAULT_ERROR);
      }
      return d;
    }
  }

  /** A {@code build_worker} row: launching in slot {@code shared#1}, its lease an hour long. */
  public static final class WorkerRow extends IdRow<WorkerRow> {
    private WorkerRow() {
      super("build_worker");
    }

    public WorkerRow lane(String lane) {
      return put("lane", lane);
    }

    public WorkerRow slot(String slot) {
      return put("slot", slot);
    }

    public WorkerRow token(UUID token) {
      return put("token", token);
    }

    public WorkerRow status(WorkerStatus status) {
      return put("status", status.sql());
    }

    public WorkerRow task(String taskId) {
      return put("task_id", taskId);
    }

    public WorkerRow expiresAt(Instant at) {
      return put("expires_at", at);
    }

    public WorkerRow launchedAt(Instant at) {
      return put("launched_at", at);
    }

    public WorkerRow startedAt(Instant at) {
      return put("started_at", at);
    }

    public WorkerRow checkedAt(Instant at) {
      return put("checked_at", at);
    }

    /** Running since {@code at}: launched, started and last checked in then. */
    public WorkerRow runningSince(Instant at) {
      return status(WorkerStatus.RUNNING).launchedAt(at).startedAt(at).checkedAt(at);
    }

    public WorkerRow exitReason(String reason) {
      return put("exit_reason", reason);
    }

    @Override
    Map<String, Object> defaults() {
      Map<String, Object> d = new LinkedHashMap<>();
      String lane = isSet("lane") ? (String) value("lane") : Lanes.SHARED;
      d.put("lane", lane);
      d.put("slot", lane + "#1");
      d.put("token", UUID.randomUUID());
      d.put("expires_at", new Sql("now() + interval '1 hour'"));
      d.put("launched_at", NOW);
      return d;
    }

    @Override
    Map<String, Object> implied() {
      if (WorkerStatus.EXITED.sql().equals(value("status"))) {
        return Map.of("exited_at", NOW);
      }
      return Map.of();
    }
  }

  /** A {@code build_job_event} row: a {@code noted} event now, not yet published. */
  public static final class EventRow extends IdRow<EventRow> {
    private EventRow(long jobId) {
      super("build_job_event");
      put("job_id", jobId);
    }

    private EventRow() {
      super("build_job_event");
    }

    public EventRow type(String type) {
      return put("type", type);
    }

    /** The detail {@code {"message": message}}, as the queue's own events carry it. */
    public EventRow message(String message) {
      return put("detail", new Json(JSON.createObjectNode().put("message", message).toString()));
    }

    /** Published by the outbox at the database's now. */
    public EventRow published() {
      return put("published_at", NOW);
    }

    @Override
    Map<String, Object> defaults() {
      return Map.of("type", "noted", "at", NOW);
    }

    @Override
    Map<String, Object> implied() {
      return Map.of();
    }
  }
}
