package buildqueue.aws.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.model.BadRequestException;
import software.amazon.awssdk.services.rdsdata.model.ColumnMetadata;
import software.amazon.awssdk.services.rdsdata.model.DatabaseErrorException;
import software.amazon.awssdk.services.rdsdata.model.DatabaseResumingException;
import software.amazon.awssdk.services.rdsdata.model.ExecuteStatementResponse;
import software.amazon.awssdk.services.rdsdata.model.Field;
import software.amazon.awssdk.services.rdsdata.model.SqlParameter;
import software.amazon.awssdk.services.rdsdata.model.TransactionNotFoundException;
import software.amazon.awssdk.services.rdsdata.model.TypeHint;
import software.amazon.awssdk.services.rdsdata.model.UnsupportedResultException;

/**
 * The fake as the raw SDK client sees it: that it answers like the Data API, so adapter tests
 * against it mean something, and so fault tests can rely on its behaviour.
 */
@ExtendWith({PostgresExtension.class, DataApiFakeExtension.class})
class DataApiFakeTest {
  private DataApiFake fake;
  private RdsDataClient client;
  private TestDatabase tdb;

  @BeforeEach
  void open(TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    this.tdb = tdb;
    this.fake = fake.serve(tdb.name(), tdb.dataSource());
    this.client = client;
  }

  private ExecuteStatementResponse execute(
      String sql, String transactionId, SqlParameter... parameters) {
    return client.executeStatement(
        r ->
            r.resourceArn(DataApiFake.RESOURCE_ARN)
                .secretArn(DataApiFake.SECRET_ARN)
                .database(tdb.name())
                .sql(sql)
                .transactionId(transactionId)
                .includeResultMetadata(true)
                .parameters(parameters));
  }

  private String begin() {
    return client
        .beginTransaction(
            r ->
                r.resourceArn(DataApiFake.RESOURCE_ARN)
                    .secretArn(DataApiFake.SECRET_ARN)
                    .database(tdb.name()))
        .transactionId();
  }

  private static SqlParameter string(String name, String value, TypeHint hint) {
    return SqlParameter.builder()
        .name(name)
        .value(Field.fromStringValue(value))
        .typeHint(hint)
        .build();
  }

  @Test
  void results_are_fields_with_column_metadata_and_timestamps_as_utc_strings() {
    ExecuteStatementResponse r =
        execute(
            """
        select '2026-12-01 11:00:00.5+01'::timestamptz as at, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid as id,
               '{"a":1}'::jsonb as doc, 42::int4 as n, true as flag, null::text as nothing""",
            null);
    assertThat(r.records()).hasSize(1);
    assertThat(r.records().get(0))
        .containsExactly(
            Field.fromStringValue("2026-12-01 10:00:00.5"),
            Field.fromStringValue("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            Field.fromStringValue("{\"a\": 1}"),
            Field.fromLongValue(42L),
            Field.fromBooleanValue(true),
            Field.fromIsNull(true));
    assertThat(r.columnMetadata())
        .extracting(ColumnMetadata::typeName)
        .containsExactly("timestamptz", "uuid", "jsonb", "int4", "bool", "text");
    assertThat(r.columnMetadata())
        .extracting(ColumnMetadata::label)
        .containsExactly("at", "id", "doc", "n", "flag", "nothing");
  }

  @Test
  void a_sql_error_is_a_database_error_with_the_postgres_message_and_sqlstate() {
    assertThatThrownBy(() -> execute("select 1/0", null))
        .isInstanceOfSatisfying(
            DatabaseErrorException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorMessage())
                  .startsWith("ERROR: division by zero")
                  .endsWith("; SQLState: 22012");
            });
  }

  @Test
  void a_transaction_is_gone_after_a_sql_error() {
    String tx = begin();
    execute("insert into build_user (user_id) values ('alice')", tx);
    assertThatThrownBy(() -> execute("insert into build_user (user_id) values ('alice')", tx))
        .isInstanceOf(DatabaseErrorException.class)
        .hasMessageContaining("duplicate key value violates unique constraint \"build_user_pkey\"")
        .hasMessageContaining("Detail: Key (user_id)=(alice) already exists.")
        .hasMessageContaining("SQLState: 23505");
    assertThatThrownBy(() -> execute("select 1", tx))
        .isInstanceOf(TransactionNotFoundException.class)
        .hasMessageContaining("is not found");
    assertThat(fake.openTransactions()).isZero();
    assertThat(tdb.jdbc().query("select user_id from build_user")).isEmpty();
  }

  @Test
  void an_untyped_string_is_a_varchar_and_needs_a_cast_or_a_hint() {
    tdb.jdbc().update("create table stamps (at timestamptz)");
    assertThatThrownBy(
            () ->
                execute(
                    "insert into stamps (at) values (:at)",
                    null,
                    string("at", "2026-12-01 10:00:00", null)))
        .isInstanceOf(DatabaseErrorException.class)
        .hasMessageContaining(
            "is of type timestamp with time zone but expression is of type character varying");
    execute(
        "insert into stamps (at) values (:at)",
        null,
        string("at", "2026-12-01 10:00:00", TypeHint.TIMESTAMP));
    execute(
        "insert into stamps (at) values (:at::timestamptz)",
        null,
        string("at", "2026-12-01 10:00:00", null));
    assertThat(tdb.jdbc().query("select at from stamps")).hasSize(2);
  }

  @Test
  void a_timestamp_hint_takes_only_the_documented_format() {
    assertThatThrownBy(
            () ->
                execute(
                    "select :at::timestamptz",
                    null,
                    string("at", "2026-12-01T10:00:00Z", TypeHint.TIMESTAMP)))
        .isInstanceOf(DatabaseErrorException.class)
        .hasMessageContaining("YYYY-MM-DD HH:MM:SS[.FFF]");
  }

  @Test
  void one_statement_per_call() {
    assertThatThrownBy(() -> execute("select 1; select 2", null))
        .isInstanceOf(DatabaseErrorException.class);
    assertThat(execute("select 1 as one; ", null).records()).hasSize(1);
  }

  @Test
  void text_whose_reading_aws_leaves_undocumented_is_refused() {
    assertThatThrownBy(() -> execute("select ';' as semicolon", null))
        .isInstanceOf(BadRequestException.class);
    assertThatThrownBy(() -> execute("select 1 -- one; two\n", null))
        .isInstanceOf(BadRequestException.class);
    assertThatThrownBy(() -> execute("select to_char(now(), 'HH24:MI:SS')", null))
        .isInstanceOf(BadRequestException.class);
    assertThat(
            execute("select to_char(now() at time zone 'UTC', 'HH24\":\"MI') as t", null).records())
        .hasSize(1);
  }

  @Test
  void injected_faults_fire_as_often_as_asked_and_every_call_is_counted() {
    fake.inject(Fault.resuming().on(Operation.EXECUTE).times(2));
    assertThatThrownBy(() -> execute("select 1", null))
        .isInstanceOf(DatabaseResumingException.class);
    assertThatThrownBy(() -> execute("select 1", null))
        .isInstanceOf(DatabaseResumingException.class);
    assertThat(execute("select 1", null).records()).hasSize(1);
    assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(3);
    assertThat(fake.calls()).isEqualTo(3);
  }

  @Test
  void a_fault_after_applying_keeps_the_write_and_loses_the_answer() {
    fake.inject(
        Fault.error(500, "InternalServerErrorException", "lost")
            .whereSql(s -> s.startsWith("insert"))
            .afterApplying());
    assertThat(execute("select 1", null).records()).hasSize(1);
    assertThatThrownBy(() -> execute("insert into build_user (user_id) values ('bob')", null))
        .hasMessageContaining("lost");
    assertThat(tdb.jdbc().query("select user_id from build_user"))
        .extracting(r -> r.string("user_id"))
        .isEqualTo(List.of("bob"));
  }

  // ---- size limits: the arithmetic is ResultSizeLimits' (2 bytes a row, 4 a column, the values'
  // octets)

  @Test
  void a_row_of_64000_bytes_is_returned_and_one_byte_more_is_refused() {
    String row = "select repeat('x', :n::int) as text";
    assertThat(execute(row, null, longParam("n", 64_000 - 2 - 4)).records()).hasSize(1);

    assertThatThrownBy(() -> execute(row, null, longParam("n", 64_000 - 2 - 4 + 1)))
        .isInstanceOfSatisfying(
            UnsupportedResultException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("UnsupportedResultException");
              assertThat(e.awsErrorDetails().errorMessage())
                  .isEqualTo("Packet for query is too large");
            });
  }

  @Test
  void a_row_counts_a_jsonb_value_as_postgresql_renders_it() {
    // Sent as {"a": 1e63986}, 15 bytes; rendered as {"a": 1000…0}, 8 + 63,986 bytes: with the
    // row's 6 bytes of framing, exactly 64,000.
    String doc = "select ('{\"a\": 1e' || :e || '}')::jsonb as doc";
    assertThat(execute(doc, null, longParam("e", 63_986)).records()).hasSize(1);

    assertThatThrownBy(() -> execute(doc, null, longParam("e", 63_987)))
        .isInstanceOf(UnsupportedResultException.class);
  }

  @Test
  void an_answer_of_1_mib_is_returned_and_one_row_more_is_refused() {
    // 42 bytes a row: 2 + 4 + a uuid's 36 characters. 24,966 rows are 1,048,572 bytes.
    String rows = "select md5(n::text)::uuid as id from generate_series(1, :rows) n";
    assertThat(execute(rows, null, longParam("rows", 24_966)).records()).hasSize(24_966);

    assertThatThrownBy(() -> execute(rows, null, longParam("rows", 24_967)))
        .isInstanceOfSatisfying(
            UnsupportedResultException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorMessage())
                  .isEqualTo("The result exceeds the size limit 1 MB.");
            });
  }

  @Test
  void a_transaction_is_gone_after_an_answer_too_large() {
    String tx = begin();
    execute("insert into build_user (user_id) values ('alice')", tx);

    assertThatThrownBy(() -> execute("select repeat('x', 70000) as text", tx))
        .isInstanceOf(UnsupportedResultException.class);

    assertThatThrownBy(() -> execute("select 1", tx))
        .isInstanceOf(TransactionNotFoundException.class);
    assertThat(fake.openTransactions()).isZero();
    assertThat(tdb.jdbc().query("select user_id from build_user")).isEmpty();
  }

  @Test
  void an_autocommit_write_whose_answer_is_too_large_is_kept_and_its_answer_lost() {
    assertThatThrownBy(
            () ->
                execute(
                    "insert into build_user (user_id) values (repeat('u', 70000)) returning user_id",
                    null))
        .isInstanceOf(UnsupportedResultException.class);

    assertThat(tdb.jdbc().query("select length(user_id) as n from build_user"))
        .extracting(r -> r.intValue("n"))
        .containsExactly(70_000);
  }

  private static SqlParameter longParam(String name, long value) {
    return SqlParameter.builder().name(name).value(Field.fromLongValue(value)).build();
  }
}
