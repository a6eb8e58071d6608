package buildqueue.aws.testing;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.fake.DataApiTestAdapter;
import buildqueue.aws.lambda.QueueServices;
import buildqueue.core.JobTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Instant;
import java.util.List;

/**
 * A queue function's world for handler tests: a fresh database, a settable clock, a manual worker
 * platform (launches are recorded; the test plays the workers), an EventBridge fake, and the
 * services one function holds. Rows are read back through plain JDBC.
 */
public final class QueueWorld implements AutoCloseable {
  public final TestDatabase tdb;
  public final QueueClock.Settable clock =
      new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));
  public final ManualPlatform platform = new ManualPlatform();
  public final EventBridgeFake eventBridge = new EventBridgeFake();
  public final MetricsCapture metrics = new MetricsCapture();
  public final QueueServices services;
  public final WorkerTransitions workers;

  public QueueWorld(TestDatabase tdb, Component component) {
    this(tdb, component, tdb.jdbc());
  }

  /** A world whose functions talk to the database through the named adapter (jdbc, dataapi). */
  public QueueWorld(String adapter, TestDatabase tdb, Component component) {
    this(tdb, component, adapter(adapter, tdb));
  }

  /** The database adapter a function would use: JDBC, or the Data API through its wire fake. */
  public static Database adapter(String name, TestDatabase tdb) {
    return switch (name) {
      case "jdbc" -> tdb.jdbc();
      case "dataapi" -> new DataApiTestAdapter().open(tdb);
      default -> throw new IllegalArgumentException("no adapter " + name);
    };
  }

  public QueueWorld(TestDatabase tdb, Component component, Database adapter) {
    this.tdb = tdb;
    this.services =
        TestServices.of(
            component, adapter, platform, eventBridge, clock, QueueHarness.testConfig(), metrics);
    this.workers = new WorkerTransitions(tdb.worker(), QueueHarness.testConfig(), clock);
  }

  public long submit(String user) {
    return services.queue().enqueue(user, "demo", new Json("{\"steps\": 1}"), null).jobId();
  }

  /**
   * A job enqueued by a function that died right after its enqueue committed: no dispatch, and its
   * history rows wait in the outbox (a submission through {@link #submit} publishes its own).
   */
  public long submitUnpublished(String user) {
    return new JobTransitions(services.db(), QueueHarness.testConfig(), clock)
        .enqueue(user, "demo", new Json("{\"steps\": 1}"), null)
        .jobId();
  }

  public WorkerLaunch lastLaunch() {
    return platform.lastLaunch();
  }

  public Row job(long id) {
    return tdb.jdbc()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  public Row worker(long id) {
    return tdb.jdbc()
        .queryOptional("select * from build_worker where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  public List<Row> liveWorkers() {
    return tdb.jdbc().query("select * from build_worker where status <> 'exited' order by id");
  }

  /** Every row of the queue's tables, for "nothing changed" assertions. */
  public String snapshot() {
    return tdb.jdbc().query("select * from build_worker order by id").toString()
        + tdb.jdbc().query("select * from build_job order by id")
        + tdb.jdbc().query("select id, job_id, type, detail, at from build_job_event order by id");
  }

  public long unpublishedEvents() {
    return tdb.jdbc()
        .query("select count(*) as n from build_job_event where published_at is null")
        .get(0)
        .longValue("n");
  }

  @Override
  public void close() {
    eventBridge.close();
  }
}
