package buildqueue.aws.db;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/** The adapter under test, pointed at the fake serving a test database. */
final class Adapters {
  private Adapters() {}

  static DataApiDatabase dataApi(DataApiFake fake, RdsDataClient client, TestDatabase tdb) {
    return dataApi(fake, client, tdb, ResumeRetry.standard());
  }

  static DataApiDatabase dataApi(
      DataApiFake fake, RdsDataClient client, TestDatabase tdb, ResumeRetry retry) {
    fake.serve(tdb.name(), tdb.dataSource());
    return new DataApiDatabase(client, fake.settings(tdb.name()), retry);
  }

  /**
   * The adapter as a worker task has it: the worker role's secret, so its statements run as that
   * role.
   */
  static DataApiDatabase dataApiAsWorker(DataApiFake fake, RdsDataClient client, TestDatabase tdb) {
    fake.serve(tdb.name(), DataApiFake.WORKER_SECRET_ARN, tdb.workerDataSource());
    return new DataApiDatabase(client, fake.workerSettings(tdb.name()), ResumeRetry.standard());
  }

  /** A clock that only moves when the retry sleeps, so budget tests take no time. */
  static final class FakeTime implements ResumeRetry.Sleeper {
    final List<Duration> sleeps = new ArrayList<>();
    private long nanos;

    @Override
    public synchronized void sleep(Duration d) {
      sleeps.add(d);
      nanos += d.toNanos();
    }

    synchronized long nanoTime() {
      return nanos;
    }

    Duration slept() {
      return sleeps.stream().reduce(Duration.ZERO, Duration::plus);
    }

    ResumeRetry retry(Duration budget) {
      return new ResumeRetry(budget, this, this::nanoTime);
    }
  }
}
