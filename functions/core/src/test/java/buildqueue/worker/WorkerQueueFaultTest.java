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
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class WorkerQueueFaultTest {

  /** The queue's database; it fails one statement when told, as a restarting server would. */
  private static final class FlakyDatabase implements Database {
    final Database target;
    final AtomicBoolean down;

    FlakyDatabase(Database target, AtomicBoolean down) {
      this.target = target;
      this.down = down;
    }

    private void up() {
      if (down.getAndSet(false)) {
        throw new DatabaseException("Connection to localhost refused");
      }
    }

    @Override
    public List<Row> query(String sql, Params params) {
      up();
      return target.query(sql, params);
    }

    @Override
    public int update(String sql, Params params) {
      up();
      return target.update(sql, params);
    }

    @Override
    public <T> T transaction(Function<Database, T> work) {
      up();
      return target.transaction(tx -> work.apply(new FlakyDatabase(tx, down)));
    }
  }

  @Test
  void a_database_failure_under_a_progress_report_ends_the_worker_and_not_the_job(TestDatabase tdb) {
    QueueConfig config = QueueConfig.defaults();
    ManualPlatform platform = new ManualPlatform();
    BuildQueue queue = new BuildQueue(tdb.jdbc(), platform, config, QueueClock.DATABASE);
    long jobId = queue.enqueue("alice", "probe", new Json("{}"), null).jobId();
    WorkerLaunch launch = platform.lastLaunch();

    AtomicBoolean down = new AtomicBoolean();
    JobHandler losesItsDatabase = new JobHandler() {
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
    WorkerLoop loop = new WorkerLoop(new FlakyDatabase(tdb.jdbc(), down), config, QueueClock.DATABASE,
        JobHandlers.of(losesItsDatabase), why -> {
          throw new AssertionError("not killed: " + why);
        }, WorkerLoop.Hooks.NONE);

    assertThatThrownBy(() -> loop.run(launch.workerId(), launch.token())).isInstanceOf(DatabaseException.class);

    Row job = tdb.jdbc().queryOptional("select status, error from build_job where id = :id", Params.of("id", jobId))
        .orElseThrow();
    assertThat(job.string("status")).isEqualTo("running");
    assertThat(job.string("error")).isNull();
  }
}
