package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
  void every_migration_file_is_listed_in_order() throws IOException {
    try (Stream<Path> files = Files.list(Path.of("src/main/resources/buildqueue/db/migrations"))) {
      List<String> names = files.map(p -> p.getFileName().toString()).sorted().toList();
      assertThat(Migrator.MIGRATIONS).isEqualTo(names);
    }
  }
}
