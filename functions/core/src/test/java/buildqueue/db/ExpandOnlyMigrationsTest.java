package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Migrations are expand-only (docs/architecture.md §3): during a deploy, and after one that is
 * rolled back, the previous release runs on the new schema, so no migration may take away or narrow
 * anything the previous level had. Each migration is applied in turn and the catalog ({@link
 * SchemaCatalog}) after it is compared with the catalog before it.
 */
class ExpandOnlyMigrationsTest {
  /**
   * What a released migration took away that no release depends on, each with why that is safe. A
   * new entry needs the same: a release that ran on the level before must still run on this one.
   * Every entry must still be found (a stale one would hide the next real narrowing). Keys read
   * "V00n__name.sql: " followed by the narrowing as {@link SchemaCatalog#narrowingsTo} words it.
   *
   * <p>Empty today, and checked so: V006 replaces V005's worker functions and V001's {@code
   * build_lane_of} with {@code create or replace}, keeping each signature, result, security definer
   * and grant; V005's {@code revoke create on schema public from public} takes nothing away on
   * PostgreSQL 15 and later (the template's 17 among them), where PUBLIC never had that privilege.
   */
  private static final Map<String, String> ALLOWED = Map.of();

  @Test
  void no_released_migration_takes_away_or_narrows_what_the_level_before_it_had() {
    Map<String, List<String>> found = walk(Migrator.MIGRATIONS, Migrator::read);

    List<String> unexplained = new ArrayList<>();
    found.forEach(
        (migration, narrowings) ->
            narrowings.stream()
                .map(n -> migration + ": " + n)
                .filter(n -> !ALLOWED.containsKey(n))
                .forEach(unexplained::add));
    assertThat(unexplained).as("narrowings of released migrations not in ALLOWED").isEmpty();

    List<String> all =
        found.entrySet().stream()
            .flatMap(e -> e.getValue().stream().map(n -> e.getKey() + ": " + n))
            .toList();
    assertThat(all).as("every ALLOWED entry is still found").containsAll(ALLOWED.keySet());
  }

  /**
   * A test-only migration after the released ones: each of these must be caught, naming the object.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      drops a column           | alter table build_job drop column supersede_key                              | column build_job.supersede_key disappeared
      narrows a type           | alter table build_job alter column progress type smallint                    | column build_job.progress changed type from integer to smallint
      bounds a text            | alter table build_job alter column kind type varchar(40)                     | column build_job.kind changed type from text to character varying(40)
      makes a column not null  | alter table build_job alter column error set not null                        | column build_job.error became not null
      adds a required column   | alter table build_job add column owner_team text not null                    | column build_job.owner_team was added not null without a default
      drops a default          | alter table build_job alter column progress drop default                     | column build_job.progress (not null) lost its default
      adds a check             | alter table build_job add constraint small_progress check (progress < 100)   | constraint build_job.small_progress
      drops a unique index     | drop index build_worker_live_slot                                            | relation build_worker_live_slot disappeared
      drops a function         | drop function build_lane_of(text)                                            | function build_lane_of(text) disappeared
      changes a result type    | drop function build_worker_drain(bigint, uuid); create function build_worker_drain(p_worker_id bigint, p_token uuid) returns integer language sql as 'select 1' | function build_worker_drain(bigint,uuid) changed its result from boolean to integer
      drops security definer   | alter function build_worker_drain(bigint, uuid) security invoker             | function build_worker_drain(bigint,uuid) no longer runs as its owner
      revokes a worker grant   | revoke execute on function build_worker_drain(bigint, uuid) from buildqueue_worker | privilege EXECUTE on function build_worker_drain(bigint,uuid) to buildqueue_worker was revoked
      revokes a table grant    | revoke select on build_job from postgres                                     | privilege SELECT on relation build_job to postgres was revoked
      drops a table            | drop table build_job_log                                                     | relation build_job_log disappeared
      drops an enum label      | create type build_test_mood as enum ('calm', 'busy'); alter type build_test_mood rename value 'busy' to 'swamped' | type build_test_mood changed
      """)
  void a_migration_that_takes_something_away_is_caught(
      String what, String statements, String expected) {
    // An enum of its own is made by a first test-only migration, so the second one narrows it.
    String[] parts =
        what.equals("drops an enum label") ? statements.split("; ") : new String[] {statements};
    List<String> migrations = new ArrayList<>(Migrator.MIGRATIONS);
    Map<String, String> extra = new TreeMap<>();
    for (int k = 0; k < parts.length; k++) {
      String name = "V%03d__test_step.sql".formatted(nextVersion() + k);
      migrations.add(name);
      extra.put(name, parts[k] + "\n");
    }
    String bad = migrations.get(migrations.size() - 1);

    Map<String, List<String>> found =
        walkFromReleased(migrations, n -> extra.containsKey(n) ? extra.get(n) : Migrator.read(n));

    assertThat(found.get(bad)).as(what).anyMatch(n -> n.startsWith(expected));
  }

  @Test
  void a_migration_that_only_adds_passes() {
    String good =
        """
        alter table build_job add column note varchar(40);
        alter table build_user add column team text not null default 'none';
        create index build_job_note on build_job (note);
        create function build_job_note(p_job_id bigint) returns text
        language sql stable as 'select note from build_job where id = p_job_id';
        grant execute on function build_job_note(bigint) to buildqueue_worker;
        """;
    List<String> migrations = new ArrayList<>(Migrator.MIGRATIONS);
    String next = "V%03d__test_good.sql".formatted(nextVersion());
    migrations.add(next);

    Map<String, List<String>> found =
        walkFromReleased(migrations, n -> n.equals(next) ? good : Migrator.read(n));

    assertThat(found.get(next)).isEmpty();
  }

  /**
   * The version after the newest migration's: versions may skip numbers (a branch's migration keeps
   * the number it was given until the branches merge), so not the count of migrations + 1.
   */
  private static int nextVersion() {
    return Migrator.version(Migrator.MIGRATIONS.get(Migrator.MIGRATIONS.size() - 1)) + 1;
  }

  @Test
  void widening_is_told_from_narrowing() {
    assertThat(SchemaCatalog.widens("integer", "bigint")).isTrue();
    assertThat(SchemaCatalog.widens("bigint", "integer")).isFalse();
    assertThat(SchemaCatalog.widens("character varying(10)", "character varying(20)")).isTrue();
    assertThat(SchemaCatalog.widens("character varying(20)", "character varying(10)")).isFalse();
    assertThat(SchemaCatalog.widens("character varying(20)", "text")).isTrue();
    assertThat(SchemaCatalog.widens("text", "character varying(20)")).isFalse();
    assertThat(SchemaCatalog.widens("numeric(10,2)", "numeric(12,2)")).isTrue();
    assertThat(SchemaCatalog.widens("numeric(10,2)", "numeric(10,3)")).isFalse();
    assertThat(SchemaCatalog.widens("timestamp without time zone", "timestamp with time zone"))
        .isFalse();
  }

  /**
   * Applies each migration after the released ones in turn, on a copy of the suite's database
   * (which has the released ones): what each took away from the level before.
   */
  private static Map<String, List<String>> walkFromReleased(
      List<String> migrations, java.util.function.Function<String, String> source) {
    Map<String, List<String>> found = new java.util.LinkedHashMap<>();
    try (TestDatabase db = TestDatabases.create()) {
      SchemaCatalog before = SchemaCatalog.read(db.jdbc());
      for (int i = Migrator.MIGRATIONS.size() + 1; i <= migrations.size(); i++) {
        assertThat(new Migrator(db.jdbc(), migrations.subList(0, i), source).migrate())
            .containsExactly(migrations.get(i - 1));
        SchemaCatalog after = SchemaCatalog.read(db.jdbc());
        found.put(migrations.get(i - 1), before.narrowingsTo(after));
        before = after;
      }
    }
    return found;
  }

  /**
   * Applies each migration in turn on a fresh database: what each one took away from the level
   * before.
   */
  private static Map<String, List<String>> walk(
      List<String> migrations, java.util.function.Function<String, String> source) {
    Map<String, List<String>> found = new java.util.LinkedHashMap<>();
    try (TestDatabase db = TestDatabases.createEmpty()) {
      SchemaCatalog before = SchemaCatalog.read(db.jdbc());
      for (int i = 1; i <= migrations.size(); i++) {
        new Migrator(db.jdbc(), migrations.subList(0, i), source).migrate();
        SchemaCatalog after = SchemaCatalog.read(db.jdbc());
        found.put(migrations.get(i - 1), before.narrowingsTo(after));
        before = after;
      }
    }
    return found;
  }
}
