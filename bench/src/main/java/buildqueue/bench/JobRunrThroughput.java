package buildqueue.bench;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jobrunr.configuration.JobRunr;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.lambdas.JobRequest;
import org.jobrunr.jobs.lambdas.JobRequestHandler;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.scheduling.JobRequestScheduler;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.server.JobActivator;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr (the open-source edition) for figure 3, in this JVM on a fresh database of the
 * benchmark's PostgreSQL: U users × J no-op job requests, enqueued first, then the background job
 * server started; the time from its start to the last job's SUCCEEDED state is what counts.
 *
 * <p>What would keep a user's jobs one at a time — mutexes, dynamic queues, job chaining ({@code
 * continueWith}) — is JobRunr Pro; the open-source edition runs any enqueued job on any worker. So,
 * as for db-scheduler, the chain is built on its public API: every job is created up front, the
 * user's first enqueued and the rest scheduled far in the future, and a job's handler moves the
 * user's next job to ENQUEUED (a read and an UPDATE a job, which ours does not pay, not atomic with
 * this job's success). Without it a user's jobs would run up to N at once, a plain pool rather than
 * a serial queue per user. The open-source edition polls at least every 5 s on SQL storage (it
 * refuses less); a worker that goes idle looks for enqueued jobs at once, so the poll only bounds
 * the start: the first look comes min(poll ÷ 5, 1 s) after the server starts, inside the measured
 * time as graphile-worker's and pg-boss's starts are.
 */
final class JobRunrThroughput {
  /** The least poll interval JobRunr accepts for a SQL storage provider. */
  static final Duration POLL = Duration.ofSeconds(5);

  private final BenchPostgres pg;
  private final int poolSize;

  JobRunrThroughput(BenchPostgres pg, int poolSize) {
    this.pg = pg;
    this.poolSize = poolSize;
  }

  static String version() {
    String v = JobRunr.class.getPackage().getImplementationVersion();
    return v == null ? "?" : v;
  }

  /**
   * One no-op job of one user; JobRunr stores it as JSON (fields only) and hands it back to its
   * handler.
   */
  public static final class Noop implements JobRequest {
    private int user;
    private int seq;

    public Noop() {}

    Noop(int user, int seq) {
      this.user = user;
      this.seq = seq;
    }

    @Override
    public Class<NoopHandler> getJobRequestHandler() {
      return NoopHandler.class;
    }
  }

  /** Counts the job and releases the user's next. */
  public static final class NoopHandler implements JobRequestHandler<Noop> {
    private final StorageProvider storage;
    private final int perUser;
    private final int total;
    private final AtomicInteger done = new AtomicInteger();
    private final CountDownLatch allDone = new CountDownLatch(1);
    private final SerialCheck serial;

    NoopHandler(StorageProvider storage, int users, int perUser) {
      this.storage = storage;
      this.perUser = perUser;
      this.total = users * perUser;
      this.serial = new SerialCheck(users);
    }

    @Override
    public void run(Noop job) {
      serial.ran(job.user, job.seq);
      if (job.seq + 1 < perUser) {
        Job next = storage.getJobById(id(job.user, job.seq + 1));
        next.enqueue();
        storage.save(next);
      }
      if (done.incrementAndGet() == total) {
        allDone.countDown();
      }
    }
  }

  static UUID id(int user, int seq) {
    return UUID.nameUUIDFromBytes(("u" + user + "/" + seq).getBytes(StandardCharsets.UTF_8));
  }

  /** Runs one load on database {@code db}; the caller counts its commits and drops it. */
  Peers.Result run(String db, int users, int perUser, int concurrency, int capSeconds) {
    int total = users * perUser;
    try (HikariDataSource ds = pg.pool(db, poolSize)) {
      // Creates JobRunr's tables (its migrations) on the empty database.
      StorageProvider storage = new PostgresStorageProvider(ds);
      NoopHandler handler = new NoopHandler(storage, users, perUser);
      JobActivator activator =
          new JobActivator() {
            @Override
            public <T> T activateJob(Class<T> type) {
              return type.cast(handler);
            }
          };
      try {
        JobRequestScheduler scheduler =
            JobRunr.configure()
                .useJsonMapper(new JacksonJsonMapper())
                .useStorageProvider(storage)
                .useJobActivator(activator)
                .useBackgroundJobServer(
                    BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration()
                        .andWorkerCount(concurrency)
                        .andPollInterval(POLL),
                    false)
                .initialize()
                .getJobRequestScheduler();
        Instant parked = Instant.now().plus(Duration.ofDays(3650));
        long e0 = System.nanoTime();
        // Round-robin over users as they would arrive; one job at a time, like an API call.
        for (int j = 0; j < perUser; j++) {
          for (int u = 0; u < users; u++) {
            if (j == 0) {
              scheduler.enqueue(id(u, j), new Noop(u, j));
            } else {
              scheduler.schedule(id(u, j), parked, new Noop(u, j));
            }
          }
        }
        long e1 = System.nanoTime();
        CpuBusy.Snapshot cpu = CpuBusy.now();
        JobRunr.getBackgroundJobServer().start();
        boolean finished =
            handler.allDone.await(capSeconds, TimeUnit.SECONDS)
                && awaitSucceeded(storage, total, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        long e2 = System.nanoTime();
        CpuBusy.Share busy = CpuBusy.since(cpu);
        handler.serial.verify();
        return new Peers.Result(
            handler.done.get(), (e1 - e0) / 1e6, (e2 - e1) / 1e6, !finished, busy);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      } finally {
        // Stops the server (its workers and zookeepers) and closes the storage provider; the pool
        // is ours.
        JobRunr.destroy();
      }
    }
  }

  /**
   * The handler counts a job before JobRunr records its success; the clock stops at the last one.
   */
  private static boolean awaitSucceeded(StorageProvider storage, int total, long deadline)
      throws InterruptedException {
    while (System.nanoTime() < deadline) {
      if (storage.countJobs(StateName.SUCCEEDED) >= total) {
        return true;
      }
      Thread.sleep(1);
    }
    return false;
  }
}
