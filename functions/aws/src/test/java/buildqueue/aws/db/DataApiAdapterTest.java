package buildqueue.aws.db;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.DataApiFakeExtension;
import buildqueue.db.Database;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * A test of the Data API adapter: a fresh test database ({@link #tdb}, read and prepared over
 * JDBC), the fake serving it ({@link #fake}) and the adapter under test over the real SDK client
 * ({@link #db}). A subclass's own {@code @BeforeEach} runs after this one's.
 */
@ExtendWith({PostgresExtension.class, DataApiFakeExtension.class})
abstract class DataApiAdapterTest {
  TestDatabase tdb;
  DataApiFake fake;
  Database db;

  @BeforeEach
  final void openAdapter(TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    this.tdb = tdb;
    this.fake = fake;
    this.db = Adapters.dataApi(fake, client, tdb);
  }
}
