package buildqueue.faults;

import buildqueue.aws.db.DataApiDatabase;
import buildqueue.aws.db.ResumeRetry;
import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.aws.fake.Fault;
import buildqueue.db.Database;
import buildqueue.testing.TestDatabase;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * Faults of the RDS Data API adapter, answered by the wire-level fake as the service answers them:
 * a statement that fails before running ({@code 504 DatabaseUnavailableException}), one whose
 * answer is lost after it ran or committed, a transaction broken by an error, and an auto-paused
 * cluster resuming ({@code DatabaseResumingException} for the next few calls: few enough and the
 * adapter's resume retry rides them out; more and its budget runs out and callers see the outage).
 * The retry waits on a clock of its own that only its pauses move, so scenarios stay deterministic
 * and take no real time.
 */
final class DataApiFaults implements DatabaseFaults {
  private static final String UNAVAILABLE = "DatabaseUnavailableException";

  private final DataApiFake fake;
  private final RdsDataClient client;
  private final DataApiDatabase adapter;
  private final DataApiDatabase workerAdapter;

  DataApiFaults(TestDatabase db, Lane lane) {
    this.fake = DataApiFake.start();
    fake.serve(db.name(), db.dataSource());
    this.client = fake.newClient();
    AtomicLong nanos = new AtomicLong();
    ResumeRetry retry =
        new ResumeRetry(ResumeRetry.DEFAULT_BUDGET, d -> nanos.addAndGet(d.toNanos()), nanos::get);
    this.adapter = new DataApiDatabase(client, fake.settings(db.name()), retry);
    fake.serve(db.name(), DataApiFake.WORKER_SECRET_ARN, db.workerDataSource());
    this.workerAdapter = new DataApiDatabase(client, fake.workerSettings(db.name()), retry);
  }

  @Override
  public Database adapter() {
    return adapter;
  }

  @Override
  public Database workerAdapter() {
    return workerAdapter;
  }

  @Override
  public <T> T failBeforeEffect(Database target, Function<Database, T> statement) {
    fake.inject(
        Fault.error(504, UNAVAILABLE, "the writer is unavailable (injected)")
            .on(Operation.EXECUTE));
    return statement.apply(target);
  }

  @Override
  public <T> T failAfterEffect(Database target, Function<Database, T> statement) {
    fake.inject(
        Fault.error(504, UNAVAILABLE, "the answer was lost (injected)")
            .on(Operation.EXECUTE)
            .afterApplying());
    return statement.apply(target);
  }

  @Override
  public void loseCommitReply(Database tx) {
    fake.inject(
        Fault.error(504, UNAVAILABLE, "the commit's answer was lost (injected)")
            .on(Operation.COMMIT)
            .afterApplying());
  }

  @Override
  public void breakTransaction(Database tx) {
    fake.inject(
        Fault.error(504, UNAVAILABLE, "the transaction's connection was lost (injected)")
            .on(Operation.EXECUTE));
  }

  /**
   * The cluster auto-pauses: the next 1 to 14 calls answer that it is resuming. Up to 8 fit the
   * adapter's 30 s resume budget (0.5 + 1 + 2 + 4 + 5 + 5 + 5 + 5 s of pauses); more exhaust it.
   */
  @Override
  public buildqueue.faults.Fault outage(boolean on, Random random) {
    if (on) {
      fake.inject(Fault.resuming().times(1 + random.nextInt(14)));
      return buildqueue.faults.Fault.DATABASE_RESUMING;
    }
    fake.clearFaults();
    return buildqueue.faults.Fault.NONE;
  }

  @Override
  public boolean refusesDuringOutage() {
    return false;
  }

  @Override
  public void close() {
    client.close();
    fake.close();
  }
}
