package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.BuildQueue;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.CheckedDatabase;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class WorkerQueueFaultTest {

  /** The queue's database; it fails one statement when told, as a restarting server would. */
  private static Database flaky(Database target, AtomicBoolean down) {
    return new CheckedDatabase(
        target,
        sql -> {
          if (down.getAndSet(false)) {
            throw new DatabaseException("Connection to localhost refused");
          }
        });
  }

  @Test
  void a_database_failure_under_a_progress_report_ends_the_worker_and_not_the_job(
      TestDatabase tdb) {
    QueueConfig config = QueueConfig.defaults();
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, config, QueueClock.DATABASE);
    long jobId = queue.enqueue("alice", "probe", new Json("{}"), null).jobId();
    WorkerLaunch launch = platform.lastLaunch();

    AtomicBoolean down = new AtomicBoolean();
    JobHandler losesItsDatabase =
        new JobHandler() {
          @Override
          public String kind() {
            return "probe";
          }

          @Override
          public JobOutcome run(JobContext context) {
            down.set(true);
            context.reportProgress(1);
            return JobOutcome.succeeded();
          }
        };
    WorkerLoop loop =
        new WorkerLoop(
            flaky(tdb.worker(), down),
            config,
            QueueClock.DATABASE,
            JobHandlers.of(losesItsDatabase),
            why -> {
              throw new AssertionError("not killed: " + why);
            },
            WorkerLoop.Listener.NONE);

    assertThatThrownBy(() -> loop.run(launch.workerId(), launch.token()))
        .isInstanceOf(DatabaseException.class);

    Row job =
        tdb.jdbc()
            .queryOptional(
                "select status, error from build_job where id = :id", Params.of("id", jobId))
            .orElseThrow();
    assertThat(job.string("status")).isEqualTo("running");
    assertThat(job.string("error")).isNull();
  }
}
