package buildqueue.faults;

import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The database as the actors see it: every statement (and every transaction, as a whole) waits at
 * the scheduler's gate, and may meet a fault chosen from the scenario's random stream:
 *
 * <ul>
 *   <li><b>killed mid-statement</b>: the statement runs, then its backend is terminated by {@code
 *       pg_terminate_backend} from another connection before it commits; nothing is written and the
 *       caller gets the driver's error;
 *   <li><b>reply lost</b>: the statement commits, then its backend is terminated before the reply
 *       reaches the caller, who sees an error for a write that happened;
 *   <li><b>killed mid-transaction</b>: inside a transaction the backend is terminated between two
 *       statements; the whole transaction rolls back;
 *   <li><b>unreachable</b>: during an outage every statement fails before reaching the server.
 * </ul>
 *
 * Callers see what a real caller sees (the adapter's {@link DatabaseException}) and react as their
 * production code does: an API client retries, a worker crashes, a stop event is redelivered.
 */
final class GatedDatabase implements Database {
  private static final Map<String, String> LABELS = new ConcurrentHashMap<>();

  private final Database target;
  private final Scheduler scheduler;
  private final Simulation sim;
  private final DatabaseFaults faults;

  GatedDatabase(DatabaseFaults faults, Scheduler scheduler, Simulation sim) {
    this(faults, faults.adapter(), scheduler, sim);
  }

  /** Gates {@code target}: the queue's adapter, or the worker role's for the workers. */
  GatedDatabase(DatabaseFaults faults, Database target, Scheduler scheduler, Simulation sim) {
    this.faults = faults;
    this.target = target;
    this.scheduler = scheduler;
    this.sim = sim;
  }

  @Override
  public List<Row> query(String sql, Params params) {
    return run(sql, params, true);
  }

  @Override
  public int update(String sql, Params params) {
    return run(sql, params, false);
  }

  @SuppressWarnings("unchecked")
  private <T> T run(String sql, Params given, boolean query) {
    Scheduler.Actor actor = scheduler.gate(label(sql));
    if (actor == null) {
      return (T) execute(target, sql, given, query);
    }
    sim.callerAlive(actor);
    sim.statementStarts(actor, label(sql));
    unreachable(actor);
    Params params = atExecution(given);
    Fault fault = sim.faults().statementFault();
    switch (fault) {
      case KILL_MID_STATEMENT:
        sim.note(actor, "⚡ connection killed mid-statement: " + label(sql));
        return faults.failBeforeEffect(target, tx -> (T) execute(tx, sql, params, query));
      case KILL_AFTER_COMMIT:
        sim.note(actor, "⚡ connection killed after commit, reply lost: " + label(sql));
        return faults.failAfterEffect(target, tx -> (T) execute(tx, sql, params, query));
      default:
        return (T) execute(target, sql, params, query);
    }
  }

  @Override
  public <T> T transaction(Function<Database, T> work) {
    Scheduler.Actor actor = scheduler.gate("transaction");
    if (actor == null) {
      return target.transaction(work);
    }
    sim.callerAlive(actor);
    sim.statementStarts(actor, "transaction");
    unreachable(actor);
    return target.transaction(
        tx -> {
          T result = work.apply(new InTransaction(tx, actor));
          if (sim.faults().statementFault() == Fault.KILL_AFTER_COMMIT) {
            sim.note(actor, "⚡ connection killed after commit of a transaction, reply lost");
            faults.loseCommitReply(tx);
          }
          return result;
        });
  }

  private void unreachable(Scheduler.Actor actor) {
    if (sim.outage() && faults.refusesDuringOutage()) {
      sim.faults().count(Fault.DATABASE_UNREACHABLE);
      sim.note(actor, "⚡ database unreachable");
      throw new DatabaseException("Connection to the database refused (simulated outage)");
    }
  }

  /**
   * The statement's {@code :now} as of when it runs, not when its caller built it: an actor may
   * wait at its gate while the simulated clock moves, and production statements read the database's
   * clock when they execute.
   */
  private Params atExecution(Params given) {
    if (!given.has("now") || !(given.get("now") instanceof Instant)) {
      return given;
    }
    Params out = Params.of("now", sim.now());
    for (Map.Entry<String, Object> e : given.asMap().entrySet()) {
      if (!e.getKey().equals("now")) {
        out = out.and(e.getKey(), e.getValue());
      }
    }
    return out;
  }

  private static Object execute(Database db, String sql, Params params, boolean query) {
    return query ? db.query(sql, params) : db.update(sql, params);
  }

  /** The transaction's statements: each may find its connection killed just before it runs. */
  private final class InTransaction implements Database {
    private final Database tx;
    private final Scheduler.Actor actor;

    InTransaction(Database tx, Scheduler.Actor actor) {
      this.tx = tx;
      this.actor = actor;
    }

    private <T> T maybeKilled(String sql, Supplier<T> statement) {
      if (sim.faults().transactionFault()) {
        sim.note(actor, "⚡ connection killed mid-transaction before: " + label(sql));
        faults.breakTransaction(tx);
      }
      sim.statementStarts(actor, label(sql));
      return statement.get();
    }

    @Override
    public List<Row> query(String sql, Params params) {
      return maybeKilled(sql, () -> tx.query(sql, atExecution(params)));
    }

    @Override
    public int update(String sql, Params params) {
      return maybeKilled(sql, () -> tx.update(sql, atExecution(params)));
    }

    @Override
    public <T> T transaction(Function<Database, T> work) {
      return work.apply(this);
    }
  }

  /** The transition that runs a statement, found once per statement from the call stack. */
  static String label(String sql) {
    return LABELS.computeIfAbsent(
        sql,
        s ->
            StackWalker.getInstance()
                .walk(
                    frames ->
                        frames
                            .filter(
                                f ->
                                    f.getClassName().startsWith("buildqueue.")
                                        && !f.getClassName().startsWith("buildqueue.faults.")
                                        && !f.getClassName().startsWith("buildqueue.db.")
                                        && !f.getClassName()
                                            .startsWith("buildqueue.testing.InProcessPlatform")
                                        && !f.getClassName()
                                            .startsWith("buildqueue.testing.CheckedDatabase"))
                            .findFirst()
                            .map(
                                f ->
                                    f.getClassName()
                                            .substring(f.getClassName().lastIndexOf('.') + 1)
                                        + "."
                                        + f.getMethodName())
                            .orElse(firstLine(s))));
  }

  private static String firstLine(String sql) {
    String line = sql.strip().lines().findFirst().orElse("");
    return line.length() > 60 ? line.substring(0, 60) : line;
  }
}
