package buildqueue.bench;

import buildqueue.core.BuildQueue;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Database;
import buildqueue.db.JdbcDatabase;
import buildqueue.testing.GateHandler;
import buildqueue.testing.InProcessPlatform;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobOutcome;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;

/**
 * Our queue on a fresh database of the benchmark's PostgreSQL, with in-process workers, database
 * time, and the statement counter at the {@code Database} port.
 */
final class QueueRig implements AutoCloseable {
  final BenchPostgres pg;
  final String database;
  final HikariDataSource dataSource;
  final Database jdbc;
  final CountingDatabase db;
  final QueueConfig config;
  final InProcessPlatform platform;
  final BuildQueue queue;

  /** {@code gate} holds its worker until opened, so jobs can pile up behind it. */
  final GateHandler gate = new GateHandler();

  private boolean closed;

  /** {@code noop} succeeds at once. */
  static final JobHandler NOOP =
      new JobHandler() {
        @Override
        public String kind() {
          return "noop";
        }

        @Override
        public JobOutcome run(JobContext context) {
          return JobOutcome.succeeded();
        }
      };

  QueueRig(BenchPostgres pg, String prefix, QueueConfig config, int poolSize) {
    this(pg, prefix, config, poolSize, platform -> platform);
  }

  /** {@code decorate} wraps the platform the queue calls (the workers still run in-process). */
  QueueRig(
      BenchPostgres pg,
      String prefix,
      QueueConfig config,
      int poolSize,
      java.util.function.UnaryOperator<buildqueue.platform.WorkerPlatform> decorate) {
    this(pg, prefix, config, poolSize, decorate, new JobHandler[0]);
  }

  /** With more job kinds beside {@code noop} and {@code gate} (programs, for figure 8). */
  QueueRig(BenchPostgres pg, String prefix, QueueConfig config, int poolSize, JobHandler... more) {
    this(pg, prefix, config, poolSize, platform -> platform, more);
  }

  private QueueRig(
      BenchPostgres pg,
      String prefix,
      QueueConfig config,
      int poolSize,
      java.util.function.UnaryOperator<buildqueue.platform.WorkerPlatform> decorate,
      JobHandler... more) {
    this.pg = pg;
    this.database = pg.createQueueDatabase(prefix);
    this.dataSource = pg.pool(database, poolSize);
    this.jdbc = new JdbcDatabase(dataSource);
    this.db = new CountingDatabase(jdbc);
    this.config = config;
    JobHandlers handlers = JobHandlers.of(NOOP, gate).with(more);
    this.platform = new InProcessPlatform(db, config, QueueClock.DATABASE, handlers);
    this.queue = new BuildQueue(db, decorate.apply(platform), config, QueueClock.DATABASE);
    platform.onStopped(
        (taskId, workerId, token, reason) -> queue.taskStopped(taskId, workerId, token, reason));
  }

  void awaitAllEnded() {
    try {
      if (!platform.awaitAllEnded(Duration.ofMinutes(10))) {
        throw new IllegalStateException("workers still running after 10 minutes in " + database);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Closes the pool, so the backends report their commit counts, and returns the database's. */
  long closeAndCountCommits() {
    closePool();
    return pg.xactCommit(database);
  }

  private void closePool() {
    if (!closed) {
      closed = true;
      dataSource.close();
    }
  }

  @Override
  public void close() {
    closePool();
    pg.drop(database);
  }
}
