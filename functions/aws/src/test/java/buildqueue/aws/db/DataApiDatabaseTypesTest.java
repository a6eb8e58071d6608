package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every value type both ways through the real SDK client, the fake and PostgreSQL. */
class DataApiDatabaseTypesTest extends DataApiAdapterTest {
  private static final String SCRATCH =
      """
      create table scratch (
        id bigserial primary key, t text, i2 int2, i4 int4, i8 int8, f bool, ts timestamptz,
        tsl timestamp, u uuid, jb jsonb, j json, n numeric, d float8, r float4, dt date, b bytea)""";

  private static final String INSERT =
      """
      insert into scratch (t, i4, i8, f, ts, u, jb, j)
      values (:t, :i4, :i8, :f, :ts, :u, :jb, :j)
      returning id""";

  @BeforeEach
  void createScratch() {
    tdb.jdbc().update(SCRATCH);
  }

  @Test
  void every_parameter_type_arrives_as_its_postgres_type_and_comes_back_normalised() {
    Instant at = Instant.parse("2026-12-01T10:15:30.123Z");
    UUID id = UUID.randomUUID();
    Row r =
        db.query(
                """
        select :text::text as text, :n::int as small, :big::bigint as big, :flag as flag,
               :at::timestamptz as at, :id as id, :doc::jsonb as doc, :nothing::text as nothing,
               pg_typeof(:flag)::text as flag_type, pg_typeof(:id)::text as id_type,
               pg_typeof(:big)::text as big_type, pg_typeof(:text)::text as text_type""",
                Params.of("text", "grüße ☃", "n", 7, "big", Long.MAX_VALUE)
                    .and("flag", true)
                    .and("at", at)
                    .and("id", id)
                    .and("doc", new Json("{\"a\": [1, 2]}"))
                    .and("nothing", null))
            .get(0);
    assertThat(r.string("text")).isEqualTo("grüße ☃");
    assertThat(r.get("small")).isEqualTo(7L);
    assertThat(r.get("big")).isEqualTo(Long.MAX_VALUE);
    assertThat(r.get("flag")).isEqualTo(true);
    assertThat(r.get("at")).isEqualTo(at);
    assertThat(r.get("id")).isEqualTo(id);
    assertThat(r.get("doc")).isEqualTo(new Json("{\"a\": [1, 2]}"));
    assertThat(r.has("nothing")).isTrue();
    assertThat(r.get("nothing")).isNull();
    assertThat(r.string("flag_type")).isEqualTo("boolean");
    assertThat(r.string("id_type")).isEqualTo("uuid");
    assertThat(r.string("big_type")).isEqualTo("bigint");
    assertThat(r.string("text_type")).isEqualTo("character varying");
  }

  @Test
  void typed_values_go_into_typed_columns_without_casts() {
    Instant at = Instant.parse("2026-12-01T10:15:30.250Z");
    UUID u = UUID.randomUUID();
    long id =
        db.query(
                INSERT,
                Params.of("t", "x", "i4", 42, "i8", 1L << 40)
                    .and("f", false)
                    .and("ts", at)
                    .and("u", u)
                    .and("jb", new Json("{\"k\": \"v\"}"))
                    .and("j", new Json("[1,2]")))
            .get(0)
            .longValue("id");

    Row stored =
        tdb.jdbc()
            .queryOptional("select * from scratch where id = :id", Params.of("id", id))
            .orElseThrow();
    assertThat(stored.string("t")).isEqualTo("x");
    assertThat(stored.get("i4")).isEqualTo(42L);
    assertThat(stored.get("i8")).isEqualTo(1L << 40);
    assertThat(stored.get("f")).isEqualTo(false);
    assertThat(stored.get("ts")).isEqualTo(at);
    assertThat(stored.get("u")).isEqualTo(u);
    assertThat(stored.get("jb")).isEqualTo(new Json("{\"k\": \"v\"}"));
    assertThat(stored.get("j")).isEqualTo(new Json("[1,2]"));
  }

  @Test
  void nulls_of_every_type_are_written_and_read_back_as_null() {
    long id =
        db.query(
                INSERT,
                Params.of("t", null, "i4", null, "i8", null)
                    .and("f", null)
                    .and("ts", null)
                    .and("u", null)
                    .and("jb", null)
                    .and("j", null))
            .get(0)
            .longValue("id");

    Row viaDataApi =
        db.queryOptional("select * from scratch where id = :id", Params.of("id", id)).orElseThrow();
    Row viaJdbc =
        tdb.jdbc()
            .queryOptional("select * from scratch where id = :id", Params.of("id", id))
            .orElseThrow();
    assertThat(viaDataApi.asMap()).hasSize(16);
    viaDataApi
        .asMap()
        .forEach(
            (column, value) -> {
              if (!column.equals("id")) {
                assertThat(value).as(column).isNull();
                assertThat(viaJdbc.get(column)).as(column).isNull();
              }
            });
  }

  @Test
  void unicode_and_awkward_text_survive_both_ways() {
    List<String> texts =
        List.of(
            "",
            " ",
            "grüße ☃",
            "日本語のテキスト",
            "emoji 🚀👩‍💻",
            "עברית",
            "quote ' \" back\\slash",
            "line\nbreak\ttab",
            ":notAParameter and ::cast",
            "$$dollar$$",
            "a".repeat(10_000));
    for (String text : texts) {
      long id =
          db.query("insert into scratch (t) values (:t) returning id", Params.of("t", text))
              .get(0)
              .longValue("id");
      assertThat(
              db.query("select t from scratch where id = :id", Params.of("id", id))
                  .get(0)
                  .string("t"))
          .isEqualTo(text);
      assertThat(
              tdb.jdbc()
                  .query("select t from scratch where id = :id", Params.of("id", id))
                  .get(0)
                  .string("t"))
          .isEqualTo(text);
    }
  }

  @Test
  void longs_at_the_edges_survive_both_ways() {
    List<Long> longs =
        List.of(Long.MAX_VALUE, Long.MIN_VALUE, (1L << 53) + 1, -((1L << 53) + 1), 0L, -1L);
    for (long n : longs) {
      assertThat(db.query("select :n::bigint as n", Params.of("n", n)).get(0).get("n"))
          .isEqualTo(n);
      long id =
          db.query("insert into scratch (i8) values (:n) returning id", Params.of("n", n))
              .get(0)
              .longValue("id");
      assertThat(
              tdb.jdbc()
                  .query("select i8 from scratch where id = :id", Params.of("id", id))
                  .get(0)
                  .get("i8"))
          .isEqualTo(n);
    }
    assertThat(db.query("select :n::int as n", Params.of("n", Integer.MIN_VALUE)).get(0).get("n"))
        .isEqualTo((long) Integer.MIN_VALUE);
    assertThat(db.query("select 32767::int2 as n").get(0).get("n")).isEqualTo(32767L);
  }

  @Test
  void timestamps_with_and_without_fractions_are_read_as_utc_instants() {
    List<Instant> instants =
        List.of(
            Instant.parse("2026-12-01T10:00:00Z"), Instant.parse("2026-12-01T10:00:00.5Z"),
            Instant.parse("2026-12-01T10:00:00.120Z"), Instant.parse("2026-12-01T10:00:00.123456Z"),
            Instant.parse("2026-12-01T10:00:00.000001Z"), Instant.parse("1969-12-31T23:59:59.999Z"),
            Instant.parse("2026-03-29T01:30:00Z"), Instant.parse("9999-12-31T23:59:59.999999Z"));
    for (Instant at : instants) {
      tdb.jdbc()
          .update(
              "insert into scratch (ts, tsl) values (:at, (:at::timestamptz at time zone 'UTC'))",
              Params.of("at", at));
    }
    List<Row> rows = db.query("select ts, tsl from scratch order by id");
    assertThat(rows).extracting(r -> r.get("ts")).containsExactlyElementsOf(instants);
    assertThat(rows).extracting(r -> r.get("tsl")).containsExactlyElementsOf(instants);
  }

  @Test
  void instants_are_sent_in_utc_at_millisecond_precision() {
    Instant whole = Instant.parse("2026-12-01T10:00:00Z");
    Instant fine = Instant.parse("2026-12-01T10:00:00.123456789Z");
    Instant old = Instant.parse("1969-07-20T20:17:40.001Z");
    Row r =
        db.query(
                """
        select :whole::timestamptz = '2026-12-01 10:00:00+00' as whole_ok, :fine::timestamptz as fine,
               :old::timestamptz as old""",
                Params.of("whole", whole, "fine", fine, "old", old))
            .get(0);
    assertThat(r.bool("whole_ok")).isTrue();
    assertThat(r.get("fine")).isEqualTo(Instant.parse("2026-12-01T10:00:00.123Z"));
    assertThat(r.get("old")).isEqualTo(old);
  }

  @Test
  void jsonb_comes_back_as_postgres_prints_it_and_json_verbatim() {
    String doc =
        "{\"name\":\"grüße 🚀\",\"nested\":{\"list\":[1,2.5,null,true],\"quote\":\"\\\"\"}}";
    long id =
        db.query(
                "insert into scratch (jb, j) values (:doc, :doc) returning id",
                Params.of("doc", new Json(doc)))
            .get(0)
            .longValue("id");
    Row viaDataApi =
        db.query("select jb, j from scratch where id = :id", Params.of("id", id)).get(0);
    Row viaJdbc =
        tdb.jdbc().query("select jb, j from scratch where id = :id", Params.of("id", id)).get(0);
    assertThat(viaDataApi.get("j")).isEqualTo(new Json(doc));
    assertThat(viaDataApi.get("jb")).isEqualTo(viaJdbc.get("jb"));
    assertThat(viaDataApi.json("jb").text())
        .contains("\"grüße 🚀\"")
        .contains("[1, 2.5, null, true]");
  }

  @Test
  void rows_read_through_the_data_api_equal_rows_read_through_jdbc() {
    tdb.jdbc()
        .update(
            """
        insert into scratch (t, i2, i4, i8, f, ts, tsl, u, jb, j, n, d, r, dt, b) values
          ('text', 2, 4, 8, true, '2026-12-01 10:00:00.123456+00', '2026-12-01 10:00:00', gen_random_uuid(),
           '{"a": 1}', '{"b":2}', 12345678901234567890.123456789, 2.5, 1.25, '2026-12-01', '\\xdeadbeef'),
          (null, null, null, null, null, null, null, null, null, null, null, null, null, null, null)""");
    String select = "select * from scratch order by id";
    List<Map<String, Object>> viaDataApi = db.query(select).stream().map(Row::asMap).toList();
    List<Map<String, Object>> viaJdbc = tdb.jdbc().query(select).stream().map(Row::asMap).toList();
    assertThat(viaDataApi).isEqualTo(viaJdbc);
    assertThat(viaDataApi.get(0).get("n"))
        .isEqualTo(new BigDecimal("12345678901234567890.123456789"));
    assertThat(viaDataApi.get(0).get("d")).isEqualTo(2.5d);
    assertThat(viaDataApi.get(0).get("r")).isEqualTo(1.25f);
    assertThat(viaDataApi.get(0).get("b")).isEqualTo("\\xdeadbeef");
    assertThat(viaDataApi.get(0).get("dt")).isEqualTo("2026-12-01");
  }

  @Test
  void update_returns_the_number_of_rows_it_changed() {
    tdb.jdbc().update("insert into scratch (t) values ('a'), ('a'), ('b')");
    assertThat(
            db.update(
                "update scratch set t = :to where t = :from", Params.of("to", "c", "from", "a")))
        .isEqualTo(2);
    assertThat(db.update("update scratch set t = 'x' where false")).isZero();
  }

  @Test
  void a_parameter_used_twice_is_sent_once_and_unused_ones_not_at_all() {
    Row r =
        db.query("select :x::text as a, :x::text || '!' as b", Params.of("x", "hi", "unused", 1))
            .get(0);
    assertThat(r.asMap()).containsExactly(Map.entry("a", "hi"), Map.entry("b", "hi!"));
  }

  @Test
  void a_missing_parameter_is_a_clear_error_and_sends_nothing() {
    assertThatThrownBy(() -> db.query("select :absent::text as a", Params.none()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(":absent");
    assertThat(fake.calls(DataApiFake.Operation.EXECUTE)).isZero();
  }

  @Test
  void an_array_column_is_refused_with_a_message_that_says_what_to_do() {
    assertThatThrownBy(() -> db.query("select array['a', 'b'] as tags"))
        .isInstanceOf(DatabaseException.class)
        .hasMessageContaining("tags")
        .hasMessageContaining("array_to_json");
    assertThat(db.query("select array_to_json(array['a', 'b']) as tags").get(0).get("tags"))
        .isEqualTo(new Json("[\"a\",\"b\"]"));
  }
}
