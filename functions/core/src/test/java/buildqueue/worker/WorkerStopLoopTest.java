package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.BuildQueue;
import buildqueue.core.ExitTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The worker loop told to stop ({@link WorkerStop}) while its job runs, in process, as the worker
 * role: what it records, and that it takes no further job. The real process and its SIGTERM are the
 * aws module's {@code WorkerSigtermTest}.
 */
@ExtendWith(PostgresExtension.class)
class WorkerStopLoopTest {
  private static final WorkerProcess MUST_NOT_HALT =
      why -> {
        throw new AssertionError("the worker tried to halt: " + why);
      };
  private static final QueueConfig ONE_SLOT = QueueHarness.testConfig().withSharedSlots(1);

  private final WorkerStop stop = new WorkerStop(Duration.ofSeconds(30));
  private final List<Long> ran = new CopyOnWriteArrayList<>();

  /** Runs {@code body} as a job of kind {@code stoppable}. */
  private JobHandler handler(JobBody body) {
    return new JobHandler() {
      @Override
      public String kind() {
        return "stoppable";
      }

      @Override
      public JobOutcome run(JobContext context) {
        ran.add(context.jobId());
        return body.run(context);
      }
    };
  }

  @FunctionalInterface
  private interface JobBody {
    JobOutcome run(JobContext context);
  }

  private WorkerLoop.Exit runWorker(TestDatabase tdb, WorkerLaunch launch, JobHandler handler) {
    return new WorkerLoop(
            tdb.worker(),
            ONE_SLOT,
            QueueClock.DATABASE,
            JobHandlers.of(handler),
            MUST_NOT_HALT,
            WorkerLoop.Listener.NONE)
        .withStop(stop)
        .run(launch.workerId(), launch.token());
  }

  private static Row job(TestDatabase tdb, long id) {
    return tdb.jdbc().query("select * from build_job where id = " + id).get(0);
  }

  private static String workerStatus(TestDatabase tdb, WorkerLaunch launch) {
    return tdb.jdbc()
        .query("select status from build_worker where id = " + launch.workerId())
        .get(0)
        .string("status");
  }

  @Test
  void a_stopped_job_goes_back_to_its_lane_with_its_progress_and_the_worker_takes_no_further_job(
      TestDatabase tdb) {
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, ONE_SLOT, QueueClock.DATABASE);
    long first = queue.enqueue("alice", "stoppable", new Json("{}"), null).jobId();
    long second = queue.enqueue("bob", "stoppable", new Json("{}"), null).jobId();
    WorkerLaunch launch = platform.lastLaunch();

    WorkerLoop.Exit exit =
        runWorker(
            tdb,
            launch,
            handler(
                context -> {
                  context.reportProgress(5);
                  stop.request("SIGTERM in a test");
                  context.reportProgress(6); // written, then it throws: the worker is stopping
                  throw new AssertionError("reportProgress went on while the worker stopped");
                }));

    assertThat(exit).isEqualTo(WorkerLoop.Exit.STOPPED);
    assertThat(ran).containsExactly(first);
    assertThat(job(tdb, first).string("status")).isEqualTo("queued");
    assertThat(job(tdb, first).intValue("progress")).isEqualTo(6);
    assertThat(job(tdb, first).intValue("recoveries")).isZero();
    assertThat(job(tdb, second).string("status"))
        .as("not chained to a stopping worker")
        .isEqualTo("queued");
    assertThat(workerStatus(tdb, launch)).isEqualTo("draining");
    assertThat(platform.launches()).hasSize(1);
  }

  @Test
  void a_stop_without_progress_counts_against_the_recovery_limit_as_the_stop_event_would(
      TestDatabase tdb) {
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, ONE_SLOT, QueueClock.DATABASE);
    long id = queue.enqueue("alice", "stoppable", new Json("{}"), null).jobId();
    for (int attempt = 1; attempt <= ExitTransitions.MAX_RECOVERIES + 1; attempt++) {
      WorkerLaunch launch = platform.lastLaunch();
      WorkerStop stopNow = new WorkerStop(Duration.ofSeconds(30));
      WorkerLoop.Exit exit =
          new WorkerLoop(
                  tdb.worker(),
                  ONE_SLOT,
                  QueueClock.DATABASE,
                  JobHandlers.of(
                      handler(
                          c -> {
                            stopNow.request("SIGTERM in a test");
                            return JobOutcome.interrupted("stopped before any progress");
                          })),
                  MUST_NOT_HALT,
                  WorkerLoop.Listener.NONE)
              .withStop(stopNow)
              .run(launch.workerId(), launch.token());
      assertThat(exit).isEqualTo(WorkerLoop.Exit.STOPPED);
      queue.taskStopped(
          ManualPlatform.taskIdOf(launch.workerId()),
          launch.workerId(),
          launch.token(),
          "exit 143");
      assertThat(job(tdb, id).intValue("recoveries"))
          .as("after stop %d", attempt)
          .isEqualTo(attempt);
    }
    assertThat(job(tdb, id).string("status")).isEqualTo("failed");
    assertThat(job(tdb, id).string("error")).isEqualTo(ExitTransitions.REPEATED_EXIT_ERROR);
  }

  @Test
  void a_job_that_finishes_as_the_worker_stops_succeeds_and_nothing_is_chained(TestDatabase tdb) {
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, ONE_SLOT, QueueClock.DATABASE);
    long first = queue.enqueue("alice", "stoppable", new Json("{}"), null).jobId();
    long second = queue.enqueue("bob", "stoppable", new Json("{}"), null).jobId();
    WorkerLaunch launch = platform.lastLaunch();

    WorkerLoop.Exit exit =
        runWorker(
            tdb,
            launch,
            handler(
                context -> {
                  stop.request("SIGTERM in a test");
                  return JobOutcome.succeeded();
                }));

    assertThat(exit).isEqualTo(WorkerLoop.Exit.STOPPED);
    assertThat(job(tdb, first).string("status")).isEqualTo("succeeded");
    assertThat(job(tdb, second).string("status")).isEqualTo("queued");
    assertThat(job(tdb, second).intValue("attempts")).isZero();
    assertThat(workerStatus(tdb, launch)).isEqualTo("draining");
  }

  @Test
  void a_worker_told_to_stop_before_it_starts_does_not_start(TestDatabase tdb) {
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, ONE_SLOT, QueueClock.DATABASE);
    long id = queue.enqueue("alice", "stoppable", new Json("{}"), null).jobId();
    stop.request("SIGTERM in a test");

    WorkerLoop.Exit exit =
        runWorker(tdb, platform.lastLaunch(), handler(context -> JobOutcome.succeeded()));

    assertThat(exit).isEqualTo(WorkerLoop.Exit.NOT_STARTED);
    assertThat(ran).isEmpty();
    assertThat(job(tdb, id).string("status")).isEqualTo("dispatched");
    assertThat(workerStatus(tdb, platform.lastLaunch())).isEqualTo("launching");
  }
}
