package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The JDBC adapter's contract: the value mapping every adapter shares, errors, transactions. */
@ExtendWith(PostgresExtension.class)
class JdbcDatabaseTest {

  @Test
  void values_round_trip_with_the_normalised_java_types(TestDatabase tdb) {
    Database db = tdb.jdbc();
    Instant at = Instant.parse("2026-12-01T10:15:30.123456Z");
    UUID id = UUID.randomUUID();
    Row r =
        db.query(
                """
        select :text::text as text, :n::int as small, :big::bigint as big, :flag::boolean as flag,
               :at::timestamptz as at, :id::uuid as id, :doc::jsonb as doc, :nothing::text as nothing""",
                Params.of("text", "grüße ☃", "n", 7, "big", Long.MAX_VALUE)
                    .and("flag", true)
                    .and("at", at)
                    .and("id", id)
                    .and("doc", new Json("{\"a\": [1, 2]}"))
                    .and("nothing", null))
            .get(0);
    assertThat(r.string("text")).isEqualTo("grüße ☃");
    assertThat(r.longValue("small")).isEqualTo(7L);
    assertThat(r.longValue("big")).isEqualTo(Long.MAX_VALUE);
    assertThat(r.bool("flag")).isTrue();
    assertThat(r.instant("at")).isEqualTo(at);
    assertThat(r.uuid("id")).isEqualTo(id);
    assertThat(r.json("doc")).isEqualTo(new Json("{\"a\": [1, 2]}"));
    assertThat(r.get("nothing")).isNull();
  }

  @Test
  void a_unique_violation_has_its_own_exception(TestDatabase tdb) {
    Database db = tdb.jdbc();
    db.update("insert into build_user (user_id) values ('a')");
    assertThatThrownBy(() -> db.update("insert into build_user (user_id) values ('a')"))
        .isInstanceOf(UniqueViolationException.class)
        .hasMessageContaining("insert into build_user");
  }

  @Test
  void a_transaction_commits_when_its_work_returns_and_rolls_back_when_it_throws(TestDatabase tdb) {
    Database db = tdb.jdbc();
    db.transaction(tx -> tx.update("insert into build_user (user_id) values ('kept')"));
    assertThatThrownBy(
            () ->
                db.transaction(
                    tx -> {
                      tx.update("insert into build_user (user_id) values ('lost')");
                      return tx.transaction(
                          inner ->
                              inner.update("insert into build_user (user_id) values ('kept')"));
                    }))
        .isInstanceOf(UniqueViolationException.class);
    assertThat(db.query("select user_id from build_user"))
        .extracting(r -> r.string("user_id"))
        .containsExactly("kept");
  }

  @Test
  void a_missing_parameter_is_a_clear_error(TestDatabase tdb) {
    assertThatThrownBy(() -> tdb.jdbc().query("select :absent", Params.none()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("no value for parameter :absent");
  }
}
