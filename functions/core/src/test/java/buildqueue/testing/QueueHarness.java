package buildqueue.testing;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.InProcessPlatform;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A queue wired for tests: the adapter under test (counted), a settable clock, in-process workers
 * with the {@code demo}, {@code gate} and {@code noop} kinds, and readers for the rows tests assert
 * on. The readers use the plain JDBC adapter so they never add to the statement count.
 */
public final class QueueHarness implements AutoCloseable {
  public final TestDatabase testDb;
  public final CountingDatabase db;
  public final QueueClock.Settable clock;
  public final QueueConfig config;
  public final GateHandler gates = new GateHandler();
  public final JobHandlers handlers;
  public final InProcessPlatform platform;
  public final BuildQueue queue;

  public static final JobHandler NOOP =
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

  public QueueHarness(TestDatabase testDb, Database adapter, QueueConfig config) {
    this.testDb = testDb;
    this.db = new CountingDatabase(adapter);
    this.clock = new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));
    this.config = config;
    this.handlers = JobHandlers.builtIn().with(gates, NOOP);
    this.platform = new InProcessPlatform(db, config, clock, handlers);
    this.queue = new BuildQueue(db, platform, config, clock);
    platform.onStopped((taskId, workerId, token, reason) -> queue.taskStopped(taskId, workerId, token, reason));
  }

  /** A harness on the adapter selected for this test run ({@link TestAdapter#selected()}). */
  public static QueueHarness open(TestDatabase testDb, QueueConfig config) {
    return new QueueHarness(testDb, TestAdapter.selected().open(testDb), config);
  }

  public static QueueHarness open(TestDatabase testDb) {
    return open(testDb, testConfig());
  }

  public static QueueConfig testConfig() {
    return QueueConfig.defaults().withLaunchGrace(Duration.ofSeconds(30));
  }

  public long submit(String user, String kind, String payload) {
    return queue.enqueue(user, kind, new Json(payload), null).jobId();
  }

  public long submitGate(String user) {
    return submit(user, GateHandler.KIND, "{}");
  }

  public JobTransitions.Enqueued submitWithKey(String user, String kind, String payload, String key) {
    return queue.enqueue(user, kind, new Json(payload), key);
  }

  public Row job(long id) {
    return testDb.jdbc().queryOptional("select * from build_job where id = :id", Params.of("id", id)).orElseThrow();
  }

  public String status(long jobId) {
    return job(jobId).string("status");
  }

  public Row worker(long id) {
    return testDb.jdbc().queryOptional("select * from build_worker where id = :id", Params.of("id", id)).orElseThrow();
  }

  public List<Row> workers() {
    return testDb.jdbc().query("select * from build_worker order by id");
  }

  public List<Row> liveWorkers() {
    return testDb.jdbc().query("select * from build_worker where status <> 'exited' order by id");
  }

  public List<Row> events(long jobId) {
    return testDb.jdbc().query(
        "select type, detail ->> 'message' as message from build_job_event where job_id = :id order by id",
        Params.of("id", jobId));
  }

  public List<String> eventTypes(long jobId) {
    return events(jobId).stream().map(r -> r.string("type")).toList();
  }

  public void awaitStatus(long jobId, String status) {
    Await.until("job " + jobId + " to be " + status + " (is " + safeStatus(jobId) + ")", () -> status.equals(status(jobId)));
  }

  public void awaitWorkersExited() {
    Await.until("every worker to have exited", () -> liveWorkers().isEmpty());
  }

  private String safeStatus(long jobId) {
    try {
      return status(jobId);
    } catch (RuntimeException e) {
      return "unknown";
    }
  }

  /** Waits for every worker thread to end and the platform to be quiet. */
  public void awaitQuiet() {
    try {
      if (!platform.awaitAllEnded(Duration.ofSeconds(30))) {
        throw new AssertionError("worker threads still running after 30 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  @Override
  public void close() {
    for (Row w : liveWorkers()) {
      if (w.string("task_id") != null) {
        platform.kill(w.string("task_id"));
      }
    }
    platform.releaseHeldStarts();
  }
}
