package buildqueue.testing;

import buildqueue.db.JdbcDatabase;
import buildqueue.db.Migrator;
import buildqueue.db.WorkerRole;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One embedded PostgreSQL per test JVM, started on first use. The production migrations are applied
 * once to a template database; every test gets its own fresh copy of it, so tests are isolated and
 * may run side by side.
 */
public final class TestDatabases {
  private static final String TEMPLATE = "bq_template";
  private static final AtomicInteger COUNTER = new AtomicInteger();

  /** The worker role's password on the test cluster (set once: roles are cluster-wide). */
  public static final String WORKER_ROLE = WorkerRole.NAME;

  public static final String WORKER_PASSWORD = "test-worker-password";
  private static final Object ROLE_LOCK = new Object();
  private static EmbeddedPostgres postgres;

  private TestDatabases() {}

  public static synchronized EmbeddedPostgres postgres() {
    if (postgres == null) {
      try {
        postgres =
            EmbeddedPostgres.builder()
                .setServerConfig("max_connections", "300")
                .setServerConfig("fsync", "off")
                .setServerConfig("synchronous_commit", "off")
                .setServerConfig("full_page_writes", "off")
                .setDataDirectoryCustomizer(TestDatabases::checkWorkerPasswords)
                .start();
      } catch (IOException e) {
        throw new UncheckedIOException("could not start embedded PostgreSQL", e);
      }
      EmbeddedPostgres started = postgres;
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      started.close();
                    } catch (IOException ignored) {
                      // the JVM is exiting
                    }
                  }));
      createTemplate();
    }
    return postgres;
  }

  /**
   * initdb trusts every local login; Aurora checks passwords. The worker role's is checked here too
   * (SCRAM, over TCP as JDBC connects), so a test that gives it a new password sees the old one
   * refused. Other users stay trusted.
   */
  private static void checkWorkerPasswords(File dataDirectory) {
    Path hba = dataDirectory.toPath().resolve("pg_hba.conf");
    String rules =
        "host all "
            + WORKER_ROLE
            + " 127.0.0.1/32 scram-sha-256\n"
            + "host all "
            + WORKER_ROLE
            + " ::1/128 scram-sha-256\n";
    try {
      String existing = Files.readString(hba);
      if (!existing.startsWith(rules)) {
        Files.writeString(hba, rules + existing);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + hba, e);
    }
  }

  private static void createTemplate() {
    execute("create database " + TEMPLATE);
    try (HikariDataSource ds = pool(TEMPLATE, 2)) {
      JdbcDatabase db = new JdbcDatabase(ds);
      new Migrator(db).migrate();
      WorkerRole.allowLogin(db, WORKER_PASSWORD);
    }
  }

  /** A new database with the schema applied, for one test. Close it when done. */
  public static TestDatabase create() {
    postgres();
    String name = "bq_test_" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
    execute("create database " + name + " template " + TEMPLATE);
    HikariDataSource ds = pool(name, 24);
    // Roles are cluster-wide: a test before this one may have given the worker role another
    // password (a local runtime on this cluster makes its own, a rotation test rotates it). One
    // at a time: two ALTER ROLEs at once (the fault simulation's lanes) fail "tuple concurrently
    // updated".
    synchronized (ROLE_LOCK) {
      WorkerRole.allowLogin(new JdbcDatabase(ds), WORKER_PASSWORD);
    }
    return new TestDatabase(
        name, ds, () -> execute("drop database if exists " + name + " with (force)"));
  }

  /** An empty database without migrations, for migrator tests. */
  public static TestDatabase createEmpty() {
    postgres();
    String name = "bq_empty_" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
    execute("create database " + name);
    return new TestDatabase(
        name, pool(name, 24), () -> execute("drop database if exists " + name + " with (force)"));
  }

  public static String jdbcUrl(String database) {
    return postgres().getJdbcUrl("postgres", database);
  }

  static HikariDataSource pool(String database, int size) {
    return pool(database, size, "postgres", null);
  }

  /** A pool on {@code database} as the worker role: what a worker process gets. */
  static HikariDataSource workerPool(String database, int size) {
    return pool(database, size, WORKER_ROLE, WORKER_PASSWORD);
  }

  private static HikariDataSource pool(String database, int size, String user, String password) {
    HikariConfig config = new HikariConfig();
    // Not jdbcUrl(): its URL names the superuser, and a URL's user wins over the pool's.
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres().getPort() + "/" + database);
    config.setUsername(user);
    config.setPassword(password);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setPoolName("test-" + user + "-" + database);
    return new HikariDataSource(config);
  }

  private static void execute(String sql) {
    try (Connection c = postgres().getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }
}
