package buildqueue.testing;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A queue wired for tests: the adapter under test (counted), a settable clock, in-process workers
 * with the {@code demo}, {@code gate}, {@code noop}, {@code quiet} and {@code print} kinds, and
 * readers for the rows tests assert on. The readers use the plain JDBC adapter so they never add to
 * the statement count.
 */
public final class QueueHarness implements AutoCloseable {
  public final TestDatabase testDb;
  public final CountingDatabase db;

  /** What workers run on: the worker role's connection, counted with {@link #db}. */
  public final CountingDatabase workerDb;

  public final QueueClock.Settable clock;
  public final QueueConfig config;
  public final GateHandler gates = new GateHandler();
  public final JobHandlers handlers;

  /** The in-process platform (threads as workers); null in a {@link #manual} harness. */
  public final InProcessPlatform platform;

  /** The manual platform (the test plays the workers); null in an in-process harness. */
  public final ManualPlatform manual;

  public final BuildQueue queue;

  /** Worker-side transitions over the counted adapter, for tests that play a worker by hand. */
  public final WorkerTransitions workers;

  /** The order in which {@code noop} jobs ran, and how many ran at once at most per job. */
  public final List<Long> noopRuns =
      java.util.Collections.synchronizedList(new java.util.ArrayList<>());

  private final java.util.Map<Long, java.util.concurrent.atomic.AtomicInteger> running =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicInteger maxConcurrentRunsOfOneJob =
      new java.util.concurrent.atomic.AtomicInteger();

  private final JobHandler noop =
      new JobHandler() {
        @Override
        public String kind() {
          return "noop";
        }

        @Override
        public JobOutcome run(JobContext context) {
          java.util.concurrent.atomic.AtomicInteger n =
              running.computeIfAbsent(
                  context.jobId(), k -> new java.util.concurrent.atomic.AtomicInteger());
          maxConcurrentRunsOfOneJob.accumulateAndGet(n.incrementAndGet(), Math::max);
          noopRuns.add(context.jobId());
          n.decrementAndGet();
          return JobOutcome.succeeded();
        }
      };

  /**
   * {@code quiet}: behaves as a running program that prints nothing: it checks in every 10 ms for
   * {@code {"millis": n}} ms, as the process runner does, then succeeds.
   */
  private final JobHandler quiet =
      new JobHandler() {
        @Override
        public String kind() {
          return "quiet";
        }

        @Override
        public JobOutcome run(JobContext context) throws InterruptedException {
          long until =
              System.nanoTime()
                  + Duration.ofMillis(context.payload().path("millis").asLong(100)).toNanos();
          while (System.nanoTime() < until) {
            if (context.checkIn(null) == JobContext.CheckIn.CANCEL_REQUESTED) {
              return JobOutcome.succeeded();
            }
            Thread.sleep(10);
          }
          return JobOutcome.succeeded();
        }
      };

  /**
   * {@code print}: writes {@code {"lines": [...]}} to its log, {@code "repeat"} times, then
   * succeeds.
   */
  private final JobHandler print =
      new JobHandler() {
        @Override
        public String kind() {
          return "print";
        }

        @Override
        public JobOutcome run(JobContext context) {
          int repeat = context.payload().path("repeat").asInt(1);
          for (int i = 0; i < repeat; i++) {
            context
                .payload()
                .path("lines")
                .forEach(l -> context.log().line(JobLog.Stream.STDOUT, l.asText()));
          }
          return JobOutcome.succeeded();
        }
      };

  /**
   * {@code artifacts}: leaves {@code {"files": n}} files (default 3) in a fresh directory and
   * uploads them as a program's are ({@link JobContext#uploadArtifacts}), then succeeds, or fails
   * with the refusal.
   */
  private final JobHandler artifacts =
      new JobHandler() {
        @Override
        public String kind() {
          return "artifacts";
        }

        @Override
        public JobOutcome run(JobContext context) throws Exception {
          java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("bq-artifacts-");
          try {
            for (int i = 1; i <= context.payload().path("files").asInt(3); i++) {
              java.nio.file.Files.writeString(
                  dir.resolve("file-" + i + ".txt"), "job " + context.jobId() + " file " + i);
            }
            String refused = context.uploadArtifacts(dir, buildqueue.kinds.ArtifactLimits.GLOBAL);
            return refused == null ? JobOutcome.succeeded() : JobOutcome.failed(refused);
          } finally {
            try (var files = java.nio.file.Files.list(dir)) {
              for (java.nio.file.Path f : files.toList()) {
                java.nio.file.Files.delete(f);
              }
            }
            java.nio.file.Files.delete(dir);
          }
        }
      };

  /** {@code workerAdapter}: the same adapter connected as the worker role (V005). */
  public QueueHarness(
      TestDatabase testDb, Database adapter, Database workerAdapter, QueueConfig config) {
    this(testDb, adapter, workerAdapter, config, false);
  }

  private QueueHarness(
      TestDatabase testDb,
      Database adapter,
      Database workerAdapter,
      QueueConfig config,
      boolean manualWorkers) {
    this.testDb = testDb;
    this.db = new CountingDatabase(adapter);
    this.workerDb = db.alsoCounting(workerAdapter);
    this.clock = new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));
    this.config = config;
    this.handlers = JobHandlers.builtIn().with(gates, noop, quiet, print, artifacts);
    this.workers = new WorkerTransitions(workerDb, config, clock);
    if (manualWorkers) {
      this.platform = null;
      this.manual = new ManualPlatform();
      this.queue = new BuildQueue(db, manual, config, clock);
    } else {
      this.manual = null;
      this.platform = new InProcessPlatform(workerDb, config, clock, handlers);
      this.queue = new BuildQueue(db, platform, config, clock);
      platform.onStopped(
          (taskId, workerId, token, reason) -> queue.taskStopped(taskId, workerId, token, reason));
    }
  }

  /**
   * A harness whose platform runs nothing: the test plays every worker through {@link #workers}.
   */
  public static QueueHarness manual(TestDatabase testDb, QueueConfig config) {
    TestAdapter adapter = TestAdapter.selected();
    return new QueueHarness(
        testDb, adapter.open(testDb), adapter.openAsWorker(testDb), config, true);
  }

  /** As {@link #manual}, on adapters the caller opened (a database it migrated itself, say). */
  public static QueueHarness manualOn(
      TestDatabase testDb, Database adapter, Database workerAdapter) {
    return new QueueHarness(testDb, adapter, workerAdapter, testConfig(), true);
  }

  public static QueueHarness manual(TestDatabase testDb) {
    return manual(testDb, testConfig());
  }

  /** The most runs of one {@code noop} job that were ever in progress at once (must be 1). */
  public int maxConcurrentRunsOfOneJob() {
    return maxConcurrentRunsOfOneJob.get();
  }

  /** A harness on the adapter selected for this test run ({@link TestAdapter#selected()}). */
  public static QueueHarness open(TestDatabase testDb, QueueConfig config) {
    TestAdapter adapter = TestAdapter.selected();
    return new QueueHarness(testDb, adapter.open(testDb), adapter.openAsWorker(testDb), config);
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

  public JobTransitions.Enqueued submitWithKey(
      String user, String kind, String payload, String key) {
    return queue.enqueue(user, kind, new Json(payload), key);
  }

  public Row job(long id) {
    return testDb
        .jdbc()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  public String status(long jobId) {
    return job(jobId).string("status");
  }

  public Row worker(long id) {
    return testDb
        .jdbc()
        .queryOptional("select * from build_worker where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  public List<Row> workers() {
    return testDb.jdbc().query("select * from build_worker order by id");
  }

  public List<Row> liveWorkers() {
    return testDb.jdbc().query("select * from build_worker where status <> 'exited' order by id");
  }

  public List<Row> events(long jobId) {
    return testDb
        .jdbc()
        .query(
            "select type, detail ->> 'message' as message from build_job_event where job_id = :id order by id",
            Params.of("id", jobId));
  }

  public List<String> eventTypes(long jobId) {
    return events(jobId).stream().map(r -> r.string("type")).toList();
  }

  public void awaitStatus(long jobId, String status) {
    Await.until(
        "job " + jobId + " to be " + status + " (is " + safeStatus(jobId) + ")",
        () -> status.equals(status(jobId)));
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
    if (platform == null) {
      return;
    }
    for (Row w : liveWorkers()) {
      if (w.string("task_id") != null) {
        platform.kill(w.string("task_id"));
      }
    }
    platform.releaseHeldStarts();
  }
}
