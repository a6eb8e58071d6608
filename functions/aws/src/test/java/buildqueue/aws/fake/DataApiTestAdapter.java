package buildqueue.aws.fake;

import buildqueue.aws.db.DataApiDatabase;
import buildqueue.db.Database;
import buildqueue.testing.TestAdapter;
import buildqueue.testing.TestDatabase;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * Runs the queue suite on {@link DataApiDatabase}: {@code -Dbuildqueue.test.adapter=dataapi}. One
 * fake and one SDK client serve the whole test JVM; each test's database is registered with the
 * fake under its own name and addressed by the request's {@code database} field.
 */
public final class DataApiTestAdapter implements TestAdapter {

  @Override
  public String name() {
    return "dataapi";
  }

  @Override
  public Database open(TestDatabase db) {
    Shared shared = Shared.INSTANCE;
    shared.fake.serve(db.name(), db.dataSource());
    return new DataApiDatabase(shared.client, shared.fake.settings(db.name()));
  }

  @Override
  public Database openAsWorker(TestDatabase db) {
    Shared shared = Shared.INSTANCE;
    shared.fake.serve(db.name(), DataApiFake.WORKER_SECRET_ARN, db.workerDataSource());
    return new DataApiDatabase(shared.client, shared.fake.workerSettings(db.name()));
  }

  /** The fake behind the suite, for tests that want to look at its counters. */
  public static DataApiFake fake() {
    return Shared.INSTANCE.fake;
  }

  private static final class Shared {
    static final Shared INSTANCE = new Shared();

    final DataApiFake fake = DataApiFake.start();
    final RdsDataClient client = fake.newClient();

    private Shared() {
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    client.close();
                    fake.close();
                  }));
    }
  }
}
