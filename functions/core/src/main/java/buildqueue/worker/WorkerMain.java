package buildqueue.worker;

import buildqueue.BuildQueueException;
import buildqueue.core.QueueClock;
import buildqueue.db.JdbcDatabase;
import buildqueue.kinds.KindCatalogue;
import buildqueue.worker.exec.LocalJobLogSink;
import buildqueue.worker.exec.Subreaper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.lang.System.Logger.Level;

/**
 * The worker process over JDBC: reads its {@link WorkerEnvironment}, runs one {@link WorkerLoop}
 * with the built-in {@code demo} and the kinds of its catalogue (if it was given one), and exits.
 * Its jobs' output goes to a file per job ({@link LocalJobLogSink}), at most {@value
 * WorkerEnvironment#MAX_LOG_BYTES} of it per attempt; its own output holds its diagnostics only.
 * Exit 0: the loop ended as designed (drained, start refused, or fenced off). Exit 2: the
 * environment is incomplete or the catalogue refused to load. Exit 1: a fault, such as an
 * unreachable database; the job stays on this worker until the exit is seen, then is requeued. A
 * demo crash or the hard deadline halts the process at once (137), with no cleanup. SIGTERM stops
 * it gracefully within {@value WorkerStop#STOP_TIMEOUT_VARIABLE} ({@link WorkerStop}; exit 143). On
 * Linux the process is the child subreaper of its jobs' processes ({@link Subreaper}): none
 * outlives its attempt, even one that left its job's session.
 */
public final class WorkerMain {
  private static final System.Logger LOG = System.getLogger(WorkerMain.class.getName());

  static final int EXIT_DONE = 0;
  static final int EXIT_FAULT = 1;
  static final int EXIT_BAD_ENVIRONMENT = 2;

  private WorkerMain() {}

  public static void main(String[] args) {
    // This process runs nothing but its jobs: the orphans it adopts are theirs (Subreaper).
    Subreaper.enable();
    System.exit(run(System.getenv()));
  }

  static int run(java.util.Map<String, String> environment) {
    WorkerEnvironment env;
    JobHandlers handlers;
    long maxLogBytes;
    try {
      env = WorkerEnvironment.read(environment);
      maxLogBytes = WorkerEnvironment.maxLogBytes(environment);
      handlers = handlers(env, environment);
    } catch (BuildQueueException e) {
      System.err.println("buildqueue worker: cannot start: " + e.getMessage());
      return EXIT_BAD_ENVIRONMENT;
    }
    WorkerStop stop = new WorkerStop(env.stopTimeout());
    // Closed last: once it is, a SIGTERM'd JVM ends.
    try (WorkerStop.Hook sigterm = stop.onSigterm()) {
      try (HikariDataSource pool = pool(env)) {
        WorkerLoop loop =
            new WorkerLoop(
                    new JdbcDatabase(pool),
                    env.config(),
                    QueueClock.DATABASE,
                    handlers,
                    WorkerProcess.HALT,
                    WorkerLoop.Listener.NONE)
                .withLogSink(LocalJobLogSink.forThisWorker(environment))
                .withMaxLogBytes(maxLogBytes)
                .withArtifacts(WorkerEnvironment.artifactStore(environment))
                .withStop(stop);
        WorkerLoop.Exit exit = loop.run(env.workerId(), env.token());
        LOG.log(
            Level.INFO,
            "worker {0}: {1}",
            env.workerId(),
            exit.name().toLowerCase(java.util.Locale.ROOT));
        return EXIT_DONE;
      } catch (RuntimeException e) {
        LOG.log(
            Level.ERROR,
            "worker " + env.workerId() + " failed; its job is requeued once its exit is seen",
            e);
        return EXIT_FAULT;
      }
    }
  }

  /** The catalogue is loaded before the worker starts, so a bad one fails the start, not a job. */
  static JobHandlers handlers(WorkerEnvironment env, java.util.Map<String, String> environment) {
    return env.kindsFile()
        .map(
            file ->
                JobHandlers.forCatalogue(
                    KindCatalogue.load(file, QueueKindLimits.of(env.config())),
                    CommandRunners.forThisProcess(environment)))
        .orElseGet(JobHandlers::builtIn);
  }

  /**
   * One worker runs one job at a time: two connections cover a transaction plus a stray read, and
   * no idle connection is kept open past the process.
   */
  private static HikariDataSource pool(WorkerEnvironment env) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(env.databaseUrl());
    if (env.databaseUser() != null) {
      config.setUsername(env.databaseUser());
    }
    if (env.databasePassword() != null) {
      config.setPassword(env.databasePassword());
    }
    config.setPoolName("worker-" + env.workerId());
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(1);
    // Fail the start quickly when the database is unreachable rather than wait the default 30 s.
    config.setConnectionTimeout(10_000);
    config.setInitializationFailTimeout(10_000);
    return new HikariDataSource(config);
  }
}
