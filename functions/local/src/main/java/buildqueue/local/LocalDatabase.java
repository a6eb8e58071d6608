package buildqueue.local;

import buildqueue.BuildQueueException;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.sql.DataSource;

/**
 * The server's PostgreSQL: an embedded one whose data lives in {@code <data dir>/postgres} and
 * survives restarts, or an existing one given by URL. Also what a worker process needs to reach
 * the same database ({@link #workerUrl()} and credentials).
 */
public final class LocalDatabase implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(LocalDatabase.class.getName());

  private final EmbeddedPostgres embedded;
  private final HikariDataSource pool;
  private final String url;
  private final String user;
  private final String password;

  private LocalDatabase(EmbeddedPostgres embedded, String url, String user, String password) {
    this.embedded = embedded;
    this.url = url;
    this.user = user;
    this.password = password;
    this.pool = pool(url, user, password);
  }

  public static LocalDatabase open(LocalSettings settings) {
    if (settings.databaseUrl() != null) {
      return new LocalDatabase(null, settings.databaseUrl(), settings.databaseUser(), settings.databasePassword());
    }
    Path dir = settings.dataDir().resolve("postgres");
    EmbeddedPostgres pg;
    try {
      Files.createDirectories(dir);
      boolean fresh = !Files.exists(dir.resolve("PG_VERSION"));
      pg = EmbeddedPostgres.builder()
          .setDataDirectory(dir)
          .setCleanDataDirectory(false)
          // The server stops it itself, after its workers had their grace period (LocalRuntime).
          .setRegisterShutdownHook(false)
          .setServerConfig("max_connections", "100")
          .setOutputRedirector(ProcessBuilder.Redirect.appendTo(settings.dataDir().resolve("postgres.log").toFile()))
          .setErrorRedirector(ProcessBuilder.Redirect.appendTo(settings.dataDir().resolve("postgres.log").toFile()))
          .start();
      LOG.log(Level.INFO, "embedded PostgreSQL {0} in {1} on port {2}", fresh ? "created" : "started", dir, Integer.toString(pg.getPort()));
    } catch (IOException e) {
      throw new UncheckedIOException("could not start embedded PostgreSQL in " + dir
          + "; see " + settings.dataDir().resolve("postgres.log") + " (is another server using this data directory?)", e);
    }
    try {
      return new LocalDatabase(pg, pg.getJdbcUrl("postgres", "postgres"), "postgres", null);
    } catch (RuntimeException e) {
      closeQuietly(pg);
      throw e;
    }
  }

  private static HikariDataSource pool(String url, String user, String password) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    if (user != null) {
      config.setUsername(user);
    }
    if (password != null) {
      config.setPassword(password);
    }
    config.setPoolName("buildqueue-server");
    config.setMaximumPoolSize(8);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(10_000);
    try {
      return new HikariDataSource(config);
    } catch (RuntimeException e) {
      throw new BuildQueueException("cannot connect to PostgreSQL at " + redacted(url) + ": " + e.getMessage(), e);
    }
  }

  public DataSource dataSource() {
    return pool;
  }

  /** The JDBC URL a worker process on this host uses. */
  public String workerUrl() {
    return url;
  }

  public String user() {
    return user;
  }

  public String password() {
    return password;
  }

  public boolean embedded() {
    return embedded != null;
  }

  /** A URL safe to print: without its parameters, which may hold a password. */
  static String redacted(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q) + "?…";
  }

  private static void closeQuietly(EmbeddedPostgres pg) {
    try {
      pg.close();
    } catch (IOException e) {
      LOG.log(Level.WARNING, "embedded PostgreSQL did not stop cleanly: " + e.getMessage());
    }
  }

  @Override
  public void close() {
    pool.close();
    if (embedded != null) {
      closeQuietly(embedded);
    }
  }
}
