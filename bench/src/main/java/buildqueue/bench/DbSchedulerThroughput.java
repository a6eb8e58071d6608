package buildqueue.bench;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.task.TaskInstanceId;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * db-scheduler for figure 3, in this JVM on a fresh database of the benchmark's PostgreSQL: U users
 * × J no-op one-time tasks, enqueued first, then the scheduler started; the time from its start to
 * the last execution's removal is what counts.
 *
 * <p>db-scheduler has no queue, lock or group per key: every due execution is fair game for any
 * thread. Two ways to fit the load: one free task instance per job (nothing keeps a user's jobs
 * apart, so with N threads up to N of one user's jobs run at once), or a chain in which each job
 * makes the user's next one due. The chain is chosen: it is the same work as ours and the other
 * peers' (one job of a user at a time, in order), and the rate of the free variant would be that of
 * a plain pool, not of a serial queue per user. To keep "all jobs enqueued first" every job is
 * inserted up front, the user's first due now and the rest parked far in the future; a job's
 * handler reschedules the user's next to now. That costs one more UPDATE per job, which ours does
 * not pay, and it is not atomic with the job's completion (a crash between them can leave the next
 * job parked, or due while this one is re-run); the row says so.
 */
final class DbSchedulerThroughput {
  private static final String TASK = "noop";

  /** As fast as it polls: the same 10 ms as graphile-worker's fast row. */
  static final Duration POLL = Duration.ofMillis(10);

  private final BenchPostgres pg;
  private final int poolSize;

  DbSchedulerThroughput(BenchPostgres pg, int poolSize) {
    this.pg = pg;
    this.poolSize = poolSize;
  }

  static String version() {
    try (InputStream in =
        Scheduler.class.getResourceAsStream(
            "/META-INF/maven/com.github.kagkarlsson/db-scheduler/pom.properties")) {
      if (in == null) {
        return "?";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "?");
    } catch (IOException e) {
      return "?";
    }
  }

  /** Runs one load on database {@code db}; the caller counts its commits and drops it. */
  Peers.Result run(String db, int users, int perUser, int concurrency, int capSeconds) {
    int total = users * perUser;
    AtomicInteger done = new AtomicInteger();
    CountDownLatch allDone = new CountDownLatch(1);
    SerialCheck serial = new SerialCheck(users);
    OneTimeTask<Void> task =
        Tasks.oneTime(TASK)
            .execute(
                (instance, ctx) -> {
                  // Instance ids are "user/seq": release the user's next job before this one is
                  // removed.
                  String id = instance.getId();
                  int slash = id.indexOf('/');
                  int seq = Integer.parseInt(id.substring(slash + 1));
                  serial.ran(Integer.parseInt(id.substring(1, slash)), seq);
                  if (seq + 1 < perUser) {
                    ctx.getSchedulerClient()
                        .reschedule(
                            TaskInstanceId.of(TASK, id.substring(0, slash) + "/" + (seq + 1)),
                            Instant.now());
                  }
                  if (done.incrementAndGet() == total) {
                    allDone.countDown();
                  }
                });
    try (HikariDataSource ds = pg.pool(db, poolSize)) {
      createTable(ds);
      Scheduler scheduler =
          Scheduler.create(ds, task)
              .threads(concurrency)
              .pollingInterval(POLL)
              // A job made due by this scheduler's own client wakes its poller at once.
              .enableImmediateExecution()
              // One statement picks and locks a batch (SKIP LOCKED), refetched when half the
              // threads idle:
              // its documented choice for throughput on PostgreSQL.
              .pollUsingLockAndFetch(0.5, 1.0)
              .shutdownMaxWait(Duration.ofSeconds(10))
              .build();
      try {
        Instant parked = Instant.now().plus(Duration.ofDays(3650));
        Instant now = Instant.now();
        long e0 = System.nanoTime();
        // Round-robin over users as they would arrive; one insert per job, like an API call.
        for (int j = 0; j < perUser; j++) {
          for (int u = 0; u < users; u++) {
            scheduler.schedule(task.instance("u" + u + "/" + j), j == 0 ? now : parked);
          }
        }
        long e1 = System.nanoTime();
        CpuBusy.Snapshot cpu = CpuBusy.now();
        scheduler.start();
        boolean finished =
            allDone.await(capSeconds, TimeUnit.SECONDS)
                && awaitTableEmpty(ds, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        long e2 = System.nanoTime();
        CpuBusy.Share busy = CpuBusy.since(cpu);
        serial.verify();
        return new Peers.Result(done.get(), (e1 - e0) / 1e6, (e2 - e1) / 1e6, !finished, busy);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      } finally {
        scheduler.stop();
      }
    }
  }

  /** db-scheduler leaves its table to the application; this is its PostgreSQL schema. */
  private static void createTable(HikariDataSource ds) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          """
          create table scheduled_tasks (
            task_name text not null,
            task_instance text not null,
            task_data bytea,
            execution_time timestamp with time zone not null,
            picked boolean not null,
            picked_by text,
            last_success timestamp with time zone,
            last_failure timestamp with time zone,
            consecutive_failures int,
            last_heartbeat timestamp with time zone,
            version bigint not null,
            priority smallint,
            primary key (task_name, task_instance)
          );
          create index execution_time_idx on scheduled_tasks (execution_time);
          create index last_heartbeat_idx on scheduled_tasks (last_heartbeat);
          create index priority_execution_time_idx on scheduled_tasks (priority desc, execution_time asc);
          """);
    } catch (SQLException e) {
      throw new IllegalStateException("creating db-scheduler's table: " + e.getMessage(), e);
    }
  }

  /**
   * The handler counts a job before db-scheduler removes its row; the last removal is part of the
   * work, so the clock stops when the table is empty.
   */
  private static boolean awaitTableEmpty(HikariDataSource ds, long deadline)
      throws InterruptedException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      while (System.nanoTime() < deadline) {
        try (ResultSet rs = s.executeQuery("select count(*) from scheduled_tasks")) {
          rs.next();
          if (rs.getLong(1) == 0) {
            return true;
          }
        }
        Thread.sleep(1);
      }
      return false;
    } catch (SQLException e) {
      throw new IllegalStateException("counting db-scheduler's executions: " + e.getMessage(), e);
    }
  }
}
