package buildqueue.db;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Applies the numbered migrations under {@code buildqueue/db/migrations/} through the {@link
 * Database} port, so the same code migrates over JDBC locally and over the RDS Data API on deploy
 * (Flyway cannot speak the Data API). Each migration runs in one transaction together with its row
 * in {@code build_schema_migration}; many processes may migrate at once: a unique violation on that
 * row means another process applied the migration, and waiting on its insert means it has
 * committed.
 *
 * <p>Statements are kept short: over the RDS Data API a call fails after 45 s. The deploy's migrate
 * function sends every statement with {@code continueAfterTimeout}, as AWS advises for DDL, so a
 * slow one is never cut off half-way, but its call still fails and the migration's transaction is
 * abandoned uncommitted, so the deploy fails. A migration must therefore finish each statement
 * within 45 s on the production data; one that cannot (an index on a large {@code build_job}) needs
 * a step outside a transaction, which this migrator does not offer yet.
 *
 * <p>A released migration never changes. Each applied one is recorded with the SHA-256 of its text
 * ({@link #checksum}); before applying anything, the migrator compares every recorded checksum with
 * the text this build holds and refuses with {@link MigrationChangedException}, changing nothing,
 * when one differs. Rows recorded before checksums were (a database an older release migrated) get
 * theirs filled in from this build's text on the first run. Migrations are expand-only, so an older
 * release keeps working on a newer schema: rows of versions this build does not know are left
 * alone.
 */
public final class Migrator {
  /**
   * In order. A file, once released, never changes (its checksum is recorded where it is applied,
   * and MigrationChecksumsTest holds it): add a new one instead, and only add (expand-only, shown
   * by ExpandOnlyMigrationsTest), so the release before keeps running on the new schema.
   */
  public static final List<String> MIGRATIONS =
      List.of(
          "V001__queue.sql",
          "V002__event_publish_claim.sql",
          "V003__job_logs.sql",
          "V004__fair_shares.sql",
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

  private static final String CREATE_TABLE =
      """
      create table if not exists build_schema_migration (
        version    integer primary key,
        name       text not null,
        applied_at timestamptz not null default now(),
        checksum   text
      )""";

  /**
   * Whether the table already has its checksum column (it has not where an older release made it).
   */
  private static final String HAS_CHECKSUM =
      """
      select count(*) as n from pg_attribute
      where attrelid = 'build_schema_migration'::regclass and attname = 'checksum' and not attisdropped""";

  private static final String ADD_CHECKSUM =
      "alter table build_schema_migration add column if not exists checksum text";

  private static final String APPLIED =
      "select version, name, checksum from build_schema_migration order by version";

  private static final String RECORD =
      "insert into build_schema_migration (version, name, checksum) values (:version, :name, :checksum)";

  private static final String FILL_CHECKSUM =
      "update build_schema_migration set checksum = :checksum where version = :version and checksum is null";

  private final Database db;
  private final List<String> migrations;
  private final Function<String, String> source;

  public Migrator(Database db) {
    this(db, MIGRATIONS, Migrator::read);
  }

  /**
   * With the texts {@code source} gives for {@code migrations}: for tests of edited or bad
   * migrations.
   */
  Migrator(Database db, List<String> migrations, Function<String, String> source) {
    this.db = db;
    this.migrations = migrations;
    this.source = source;
  }

  /**
   * Applies only the first {@code count} migrations: a database as an older release left it, for
   * tests of the upgrade path.
   */
  public static Migrator firstOf(Database db, int count) {
    return new Migrator(db, MIGRATIONS.subList(0, count), Migrator::read);
  }

  /**
   * Applies what is missing and returns the names of the migrations this call applied.
   *
   * @throws MigrationChangedException before applying anything, when a migration this database
   *     recorded has another text (or name) in this build
   */
  public List<String> migrate() {
    try {
      db.update(CREATE_TABLE);
    } catch (UniqueViolationException racedWithAnotherMigrator) {
      // Two concurrent "create table if not exists" can collide in the catalog; the table exists.
    }
    if (db.query(HAS_CHECKSUM).get(0).longValue("n") == 0) {
      db.update(ADD_CHECKSUM);
    }
    Map<Long, Row> applied = new HashMap<>();
    for (Row row : db.query(APPLIED)) {
      applied.put(row.longValue("version"), row);
    }
    Map<String, String> texts = new HashMap<>();
    for (String name : migrations) {
      texts.put(name, source.apply(name));
    }
    verify(applied, texts);
    for (String name : migrations) {
      Row recorded = applied.get((long) version(name));
      if (recorded != null && recorded.string("checksum") == null) {
        db.update(
            FILL_CHECKSUM,
            Params.of("version", version(name), "checksum", checksum(texts.get(name))));
      }
    }
    List<String> done = new ArrayList<>();
    for (String name : migrations) {
      int version = version(name);
      if (applied.containsKey((long) version)) {
        continue;
      }
      String text = texts.get(name);
      List<String> statements = SqlScript.sendable(text);
      try {
        db.transaction(
            tx -> {
              tx.update(
                  RECORD, Params.of("version", version, "name", name, "checksum", checksum(text)));
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

  /** Refuses when a recorded migration's name or text is not this build's. */
  private void verify(Map<Long, Row> applied, Map<String, String> texts) {
    List<String> files = new ArrayList<>();
    List<String> changed = new ArrayList<>();
    for (String name : migrations) {
      Row recorded = applied.get((long) version(name));
      if (recorded == null) {
        continue;
      }
      String recordedName = recorded.string("name");
      String recordedSum = recorded.string("checksum");
      String sum = checksum(texts.get(name));
      if (!name.equals(recordedName)) {
        files.add(name);
        changed.add(
            name
                + " was renamed: this database applied version "
                + version(name)
                + " as "
                + recordedName);
      } else if (recordedSum != null && !recordedSum.equals(sum)) {
        files.add(name);
        changed.add(
            name
                + " was edited after this database applied it (SHA-256 then "
                + shortSum(recordedSum)
                + "…, now "
                + shortSum(sum)
                + "…)");
      }
    }
    if (!changed.isEmpty()) {
      throw new MigrationChangedException(files, changed);
    }
  }

  /**
   * The checksum recorded for a migration's text: SHA-256, in hex, of its UTF-8 bytes with line
   * ends made {@code \n} (a checkout that turns them into {@code \r\n} does not change a
   * migration).
   */
  static String checksum(String text) {
    try {
      byte[] bytes = text.replace("\r\n", "\n").getBytes(StandardCharsets.UTF_8);
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  private static String shortSum(String sum) {
    return sum.substring(0, Math.min(12, sum.length()));
  }

  /** The checksum of a migration of this build, by file name. */
  static String checksumOf(String name) {
    return checksum(read(name));
  }

  static int version(String name) {
    if (!name.matches("V\\d+__[a-z0-9_]+\\.sql")) {
      throw new IllegalArgumentException("migration name must look like V001__what.sql: " + name);
    }
    return Integer.parseInt(name.substring(1, name.indexOf("__")));
  }

  static String read(String name) {
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
