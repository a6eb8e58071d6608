package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class MigratorTest {

  @Test
  void migrations_apply_once_and_record_their_versions() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      Migrator migrator = new Migrator(db.jdbc());
      assertThat(migrator.migrate()).isEqualTo(Migrator.MIGRATIONS);
      assertThat(migrator.migrate()).isEmpty();
      assertThat(db.jdbc().query("select version from build_schema_migration order by version"))
          .hasSize(Migrator.MIGRATIONS.size());
    }
  }

  @Test
  void a_function_body_written_plainly_is_defined_exactly_as_written() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      String body =
          """

          begin
            -- a comment; then a literal with a quote, a semicolon and a backslash
            return 'it''s; a \\ here';
          end;
          """;
      String script =
          "create function plain_body() returns text language plpgsql as $body$"
              + body
              + "$body$;\n";
      new Migrator(db.jdbc(), List.of("V900__plain_body.sql"), name -> script).migrate();

      assertThat(
              db.jdbc()
                  .query("select prosrc from pg_proc where proname = 'plain_body'")
                  .get(0)
                  .string("prosrc"))
          .isEqualTo(body);
      assertThat(db.jdbc().query("select plain_body() as v").get(0).string("v"))
          .isEqualTo("it's; a \\ here");
    }
  }

  @Test
  void many_processes_migrating_at_once_apply_each_migration_exactly_once() throws Exception {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      List<CompletableFuture<List<String>>> migrators = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        migrators.add(CompletableFuture.supplyAsync(() -> new Migrator(db.jdbc()).migrate()));
      }
      List<String> applied = new ArrayList<>();
      for (var m : migrators) {
        applied.addAll(m.get(60, TimeUnit.SECONDS));
      }
      assertThat(applied).containsExactlyInAnyOrderElementsOf(Migrator.MIGRATIONS);
      assertThat(db.jdbc().query("select 1 from build_job")).isEmpty(); // the schema is there
    }
  }

  @Test
  void each_applied_migration_is_recorded_with_the_checksum_of_its_text() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      new Migrator(db.jdbc()).migrate();

      assertThat(recorded(db)).isEqualTo(checksums(Migrator.MIGRATIONS));
    }
  }

  @Test
  void an_edited_migration_refuses_to_migrate_naming_the_file_and_nothing_is_applied() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      Migrator.firstOf(db.jdbc(), 4).migrate();
      Map<String, String> before = recorded(db);
      // Even a comment: the text applied is the text released.
      Function<String, String> edited =
          n ->
              n.equals("V003__job_logs.sql")
                  ? Migrator.read(n) + "\n-- an afterthought\n"
                  : Migrator.read(n);

      assertThatThrownBy(() -> new Migrator(db.jdbc(), Migrator.MIGRATIONS, edited).migrate())
          .isInstanceOfSatisfying(
              MigrationChangedException.class,
              e -> assertThat(e.files()).containsExactly("V003__job_logs.sql"))
          .hasMessageContaining("V003__job_logs.sql was edited after this database applied it")
          .hasMessageContaining("Nothing was applied")
          .hasMessageNotContaining("V004__fair_shares.sql");

      assertThat(recorded(db)).isEqualTo(before);
      assertThat(db.jdbc().query("select 1 from pg_proc where proname = 'build_worker_start'"))
          .as("V005 not applied")
          .isEmpty();
    }
  }

  @Test
  void a_renamed_migration_refuses_to_migrate_naming_both_names() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      Migrator.firstOf(db.jdbc(), 3).migrate();
      List<String> renamed = new ArrayList<>(Migrator.MIGRATIONS);
      renamed.set(2, "V003__logs.sql");

      assertThatThrownBy(
              () ->
                  new Migrator(
                          db.jdbc(),
                          renamed,
                          n -> Migrator.read(n.equals("V003__logs.sql") ? "V003__job_logs.sql" : n))
                      .migrate())
          .isInstanceOf(MigrationChangedException.class)
          .hasMessageContaining(
              "V003__logs.sql was renamed: this database applied version 3 as V003__job_logs.sql");
      assertThat(recorded(db)).hasSize(3);
    }
  }

  @Test
  void a_database_migrated_before_checksums_were_recorded_gets_them_and_migrates() {
    try (TestDatabase db = TestDatabases.createEmpty()) {
      // The migrations table as the releases before checksums made it.
      db.jdbc()
          .update(
              """
          create table build_schema_migration (
            version    integer primary key,
            name       text not null,
            applied_at timestamptz not null default now()
          )""");
      for (String name : Migrator.MIGRATIONS.subList(0, 4)) {
        db.jdbc()
            .transaction(
                tx -> {
                  tx.update(
                      "insert into build_schema_migration (version, name) values (:v, :n)",
                      Params.of("v", Migrator.version(name), "n", name));
                  SqlScript.statements(Migrator.read(name)).forEach(tx::update);
                  return null;
                });
      }

      assertThat(new Migrator(db.jdbc()).migrate())
          .containsExactly(
              "V005__worker_role.sql",
              "V006__worker_plans.sql",
              "V007__worker_start_lock_order.sql",
              "V008__lane_choice.sql",
              "V009__fewer_round_trips.sql",
              "V010__chained_end_one_statement.sql",
              "V011__outbox_claim_fits_a_row.sql",
              "V012__spot_reclaims.sql",
              "V013__compute_ledger.sql",
              "V014__idle_tick.sql",
              "V015__priorities_and_pause.sql",
              "V016__retry_links.sql",
              "V017__lane_recent_finished.sql",
              "V018__artifacts.sql",
              "V019__webhooks_and_trace_context.sql");

      assertThat(recorded(db)).isEqualTo(checksums(Migrator.MIGRATIONS));
      assertThat(new Migrator(db.jdbc()).migrate()).isEmpty();
    }
  }

  private static Map<String, String> recorded(TestDatabase db) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Row r :
        db.jdbc().query("select name, checksum from build_schema_migration order by version")) {
      out.put(r.string("name"), r.string("checksum"));
    }
    return out;
  }

  private static Map<String, String> checksums(List<String> names) {
    Map<String, String> out = new LinkedHashMap<>();
    names.forEach(n -> out.put(n, Migrator.checksumOf(n)));
    return out;
  }

  @Test
  void every_migration_file_is_listed_in_order() throws IOException {
    try (Stream<Path> files = Files.list(Path.of("src/main/resources/buildqueue/db/migrations"))) {
      List<String> names = files.map(p -> p.getFileName().toString()).sorted().toList();
      assertThat(Migrator.MIGRATIONS).isEqualTo(names);
    }
  }
}
