package buildqueue.db;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Applies the numbered migrations under {@code buildqueue/db/migrations/} through the {@link
 * Database} port, so the same code migrates over JDBC locally and over the RDS Data API on deploy
 * (Flyway cannot speak the Data API). Each migration runs in one transaction together with its row
 * in {@code build_schema_migration}; many processes may migrate at once: a unique violation on that
 * row means another process applied the migration, and waiting on its insert means it has committed.
 *
 * <p>Statements are kept short: over the RDS Data API a call fails after 45 s. The deploy's migrate
 * function sends every statement with {@code continueAfterTimeout}, as AWS advises for DDL, so a
 * slow one is never cut off half-way, but its call still fails and the migration's transaction
 * is abandoned uncommitted, so the deploy fails. A migration must therefore finish each statement within
 * 45 s on the production data; one that cannot (an index on a large {@code build_job}) needs a
 * step outside a transaction, which this migrator does not offer yet.
 */
public final class Migrator {
  /** In order. A file, once released, never changes: add a new one instead. */
  public static final List<String> MIGRATIONS = List.of("V001__queue.sql", "V002__event_publish_claim.sql",
      "V003__job_logs.sql", "V004__fair_shares.sql", "V005__worker_role.sql", "V006__worker_plans.sql");

  private static final String CREATE_TABLE =
      """
      create table if not exists build_schema_migration (
        version    integer primary key,
        name       text not null,
        applied_at timestamptz not null default now()
      )""";

  private static final String APPLIED = "select version from build_schema_migration";

  private static final String RECORD =
      "insert into build_schema_migration (version, name) values (:version, :name)";

  private final Database db;
  private final List<String> migrations;

  public Migrator(Database db) {
    this(db, MIGRATIONS);
  }

  private Migrator(Database db, List<String> migrations) {
    this.db = db;
    this.migrations = migrations;
  }

  /**
   * Applies only the first {@code count} migrations: a database as an older release left it, for
   * tests of the upgrade path.
   */
  public static Migrator firstOf(Database db, int count) {
    return new Migrator(db, MIGRATIONS.subList(0, count));
  }

  /** Applies what is missing and returns the names of the migrations this call applied. */
  public List<String> migrate() {
    try {
      db.update(CREATE_TABLE);
    } catch (UniqueViolationException racedWithAnotherMigrator) {
      // Two concurrent "create table if not exists" can collide in the catalog; the table exists.
    }
    Set<Long> applied = new HashSet<>();
    for (Row row : db.query(APPLIED)) {
      applied.add(row.longValue("version"));
    }
    List<String> done = new ArrayList<>();
    for (String name : migrations) {
      int version = version(name);
      if (applied.contains((long) version)) {
        continue;
      }
      List<String> statements = SqlScript.statements(read(name));
      try {
        db.transaction(
            tx -> {
              tx.update(RECORD, Params.of("version", version, "name", name));
              statements.forEach(tx::update);
              return null;
            });
        done.add(name);
      } catch (UniqueViolationException appliedByAnotherProcess) {
        // Its transaction has committed: our insert waited for it before failing.
      }
    }
    return done;
  }

  static int version(String name) {
    if (!name.matches("V\\d+__[a-z0-9_]+\\.sql")) {
      throw new IllegalArgumentException("migration name must look like V001__what.sql: " + name);
    }
    return Integer.parseInt(name.substring(1, name.indexOf("__")));
  }

  private static String read(String name) {
    String path = "/buildqueue/db/migrations/" + name;
    try (InputStream in = Migrator.class.getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("migration " + path + " is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
