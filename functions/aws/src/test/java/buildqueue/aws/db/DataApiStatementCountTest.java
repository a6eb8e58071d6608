package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.aws.fake.DataApiFakeExtension;
import buildqueue.db.CountingDatabase;
import buildqueue.db.Migrator;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * The adapter adds no hidden round trips: one Execute per statement the port is asked to run, one
 * Begin and one Commit per transaction. So the statement counts the queue suite pins are the Data
 * API calls a job costs in AWS.
 */
@ExtendWith({PostgresExtension.class, DataApiFakeExtension.class})
class DataApiStatementCountTest {

  @Test
  void a_jobs_life_makes_one_data_api_call_per_statement(
      TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    try (QueueHarness h =
        new QueueHarness(
            tdb,
            Adapters.dataApi(fake, client, tdb),
            Adapters.dataApiAsWorker(fake, client, tdb),
            QueueHarness.testConfig())) {
      long job = h.submit("alice", "noop", "{}");
      h.awaitStatus(job, "succeeded");
      h.awaitQuiet();
      assertThat(h.db.statements()).isEqualTo(6);
      assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(h.db.statements());
      assertThat(fake.calls(Operation.BEGIN)).isEqualTo(h.db.transactions()).isZero();
    }
  }

  @Test
  void a_transaction_costs_exactly_a_begin_and_a_commit(DataApiFake fake, RdsDataClient client) {
    try (TestDatabase empty = TestDatabases.createEmpty()) {
      CountingDatabase db = new CountingDatabase(Adapters.dataApi(fake, client, empty));
      assertThat(new Migrator(db).migrate()).containsExactlyElementsOf(Migrator.MIGRATIONS);
      assertThat(empty.jdbc().query("select version from build_schema_migration"))
          .hasSize(Migrator.MIGRATIONS.size());
      assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(db.statements());
      assertThat(fake.calls(Operation.BEGIN))
          .isEqualTo(db.transactions())
          .isEqualTo(Migrator.MIGRATIONS.size());
      assertThat(fake.calls(Operation.COMMIT)).isEqualTo(db.transactions());
      assertThat(fake.calls(Operation.ROLLBACK)).isZero();
    }
  }
}
