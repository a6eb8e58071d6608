package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.aws.fake.DataApiFakeExtension;
import buildqueue.aws.lambda.AwsServices;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Migrator;
import buildqueue.db.Params;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.model.StatementTimeoutException;

/**
 * The Data API's 45 s statement limit: a statement past it is cancelled and its call fails, unless
 * it was sent with {@code continueAfterTimeout}, which schema migrations are (AWS advises it for
 * DDL). The fake's limit is shortened so that a statement of a second stands in for a long one.
 */
@ExtendWith({PostgresExtension.class, DataApiFakeExtension.class})
class DataApiStatementLimitTest {
  static final Duration LIMIT = Duration.ofMillis(300);
  static final String SLOW_DDL = "create table slow_build as select 1 as x from pg_sleep(1.2)";

  DataApiFake fake;
  RdsDataClient client;
  TestDatabase tdb;

  @BeforeEach
  void shortenTheLimit(TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    this.tdb = tdb;
    this.fake = fake.statementLimit(LIMIT);
    this.client = client;
  }

  @AfterEach
  void restoreTheLimit() {
    fake.statementLimit(DataApiFake.STATEMENT_LIMIT);
  }

  boolean tableExists(String name) {
    return tdb.jdbc()
        .query("select to_regclass(:name) is not null as there", Params.of("name", name))
        .get(0)
        .bool("there");
  }

  @Test
  void a_statement_past_the_limit_is_cancelled_and_its_call_fails() {
    Database db = Adapters.dataApi(fake, client, tdb);

    assertThatThrownBy(() -> db.update(SLOW_DDL))
        .isInstanceOf(DatabaseException.class)
        .hasMessageContaining("45 s limit and was cancelled")
        .hasCauseInstanceOf(StatementTimeoutException.class);

    assertThat(tableExists("slow_build")).isFalse();
    assertThat(fake.continueAfterTimeoutCalls()).isZero();
  }

  @Test
  void in_a_transaction_a_statement_past_the_limit_ends_the_transaction_and_nothing_commits() {
    Database db = Adapters.dataApi(fake, client, tdb);

    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update("insert into build_user (user_id) values ('ada')");
                      return tx.query("select 1 as one from pg_sleep(1.2)");
                    }))
        .isInstanceOf(DatabaseException.class)
        .hasCauseInstanceOf(StatementTimeoutException.class);

    assertThat(tdb.jdbc().query("select * from build_user where user_id = 'ada'")).isEmpty();
    assertThat(fake.openTransactions()).isZero();
  }

  @Test
  void a_schema_change_sent_with_continue_after_timeout_runs_on_to_its_end() {
    Database db = AwsServices.forSchemaChanges(Adapters.dataApi(fake, client, tdb));

    assertThatThrownBy(() -> db.update(SLOW_DDL))
        .isInstanceOf(DatabaseException.class)
        .hasMessageContaining("continueAfterTimeout")
        .hasCauseInstanceOf(StatementTimeoutException.class);

    Await.until("the slow DDL finished", Duration.ofSeconds(10), () -> tableExists("slow_build"));
    assertThat(fake.continuedPastLimit()).isEqualTo(1);
  }

  @Test
  void migrations_are_sent_with_continue_after_timeout_and_queue_statements_are_not() {
    try (TestDatabase empty = TestDatabases.createEmpty()) {
      new Migrator(AwsServices.forSchemaChanges(Adapters.dataApi(fake, client, empty))).migrate();

      assertThat(fake.calls(Operation.EXECUTE)).isGreaterThan(Migrator.MIGRATIONS.size());
      assertThat(fake.continueAfterTimeoutCalls()).isEqualTo(fake.calls(Operation.EXECUTE));

      fake.resetCounts();
      long before = fake.continueAfterTimeoutCalls();
      Adapters.dataApi(fake, client, empty).query("select 1 as one");
      assertThat(fake.continueAfterTimeoutCalls()).isEqualTo(before);
    }
  }
}
