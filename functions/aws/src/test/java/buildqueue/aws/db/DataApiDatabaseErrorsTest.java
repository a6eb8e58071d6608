package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.aws.fake.Fault;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Params;
import buildqueue.db.UniqueViolationException;
import buildqueue.testing.Await;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.model.DatabaseErrorException;

/** How Data API errors reach the queue: one exception type per meaning, and no blind retries. */
class DataApiDatabaseErrorsTest extends DataApiAdapterTest {
  @Test
  void a_unique_violation_is_a_unique_violation_exception_naming_the_statement() {
    db.update("insert into build_user (user_id) values (:u)", Params.of("u", "alice"));
    assertThatThrownBy(
            () ->
                db.update(
                    """
            insert into build_user (user_id)
            values (:u)""",
                    Params.of("u", "alice")))
        .isInstanceOf(UniqueViolationException.class)
        .hasMessageContaining("duplicate key value violates unique constraint \"build_user_pkey\"")
        .hasMessageContaining("(in statement starting: insert into build_user (user_id))")
        .hasCauseInstanceOf(DatabaseErrorException.class);
  }

  @Test
  void a_unique_violation_is_recognised_by_its_sqlstate_or_its_text_alone() {
    fake.inject(
        Fault.error(400, "DatabaseErrorException", "ERROR: conflict on insert; SQLState: 23505"));
    assertThatThrownBy(() -> db.query("select 1 as one"))
        .isInstanceOf(UniqueViolationException.class);
    fake.inject(
        Fault.error(
            400,
            "DatabaseErrorException",
            "ERROR: duplicate key value violates unique constraint \"x\""));
    assertThatThrownBy(() -> db.query("select 1 as one"))
        .isInstanceOf(UniqueViolationException.class);
  }

  @Test
  void another_sql_error_is_a_database_exception_without_parameter_values() {
    assertThatThrownBy(
            () ->
                db.query("select :dividend::int / 0 as quotient", Params.of("dividend", 987654321)))
        .isExactlyInstanceOf(DatabaseException.class)
        .hasMessageContaining("division by zero")
        .hasMessageContaining("SQLState: 22012")
        .hasMessageContaining("(in statement starting: select :dividend::int / 0 as quotient)")
        .hasMessageNotContaining("987654321");
  }

  @Test
  void a_service_error_names_its_code_and_is_not_retried_by_the_sdk() {
    fake.inject(Fault.error(503, "ServiceUnavailableError", "The service is unavailable"));
    assertThatThrownBy(() -> db.update("insert into build_user (user_id) values ('bob')"))
        .isExactlyInstanceOf(DatabaseException.class)
        .hasMessageContaining("ServiceUnavailableError (HTTP 503): The service is unavailable")
        .hasMessageContaining("insert into build_user");
    assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(1);
    assertThat(tdb.jdbc().query("select user_id from build_user")).isEmpty();
  }

  @Test
  void a_write_whose_answer_is_lost_is_not_repeated() {
    fake.inject(
        Fault.error(504, "DatabaseUnavailableException", "writer unavailable").afterApplying());
    assertThatThrownBy(() -> db.update("insert into build_user (user_id) values ('carol')"))
        .isInstanceOf(DatabaseException.class)
        .hasMessageContaining("DatabaseUnavailableException (HTTP 504)");
    assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(1);
    assertThat(tdb.jdbc().query("select user_id from build_user")).hasSize(1);
  }

  @Test
  void a_read_timeout_is_not_retried_and_says_the_write_may_have_been_applied() {
    try (RdsDataClient impatient =
        DataApiClients.create(
            fake.settings(tdb.name()),
            StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDFAKE", "fake")),
            Duration.ofSeconds(1),
            Duration.ofMillis(500),
            Duration.ofSeconds(5))) {
      Database slow = new DataApiDatabase(impatient, fake.settings(tdb.name()));
      fake.inject(Fault.delay(Duration.ofMillis(1500)).whereSql(sql -> sql.contains("build_user")));
      assertThatThrownBy(() -> slow.update("insert into build_user (user_id) values ('dave')"))
          .isExactlyInstanceOf(DatabaseException.class)
          .hasMessageContaining("may or may not have been applied");
      Await.until(
          "the slow insert to land",
          () -> !tdb.jdbc().query("select user_id from build_user").isEmpty());
      assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(1);
      assertThat(tdb.jdbc().query("select user_id from build_user")).hasSize(1);
    }
  }

  @Test
  void a_refused_call_names_the_error_the_data_api_gave(RdsDataClient client) {
    Database wrongDatabase = new DataApiDatabase(client, fake.settings("no_such_database"));
    assertThatThrownBy(() -> wrongDatabase.query("select 1 as one"))
        .isExactlyInstanceOf(DatabaseException.class)
        .hasMessageContaining("DatabaseNotFoundException (HTTP 404)");
  }
}
