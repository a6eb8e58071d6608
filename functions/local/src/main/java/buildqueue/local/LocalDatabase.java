package buildqueue.local;

import buildqueue.BuildQueueException;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The server's PostgreSQL: an embedded one whose data lives in {@code <data dir>/postgres} and
 * survives restarts, or an existing one given by URL. Also what a worker process needs to reach the
 * same database ({@link #workerUrl()} and credentials).
 *
 * <p>One server per data directory, held by a lock on {@code server.lock}. An embedded PostgreSQL
 * left running by a server that was killed (its postmaster outlives it) is adopted rather than
 * fought over, so the workers that server left keep their database and nothing is interrupted. The
 * embedded cluster itself (its version check, its start, its passwords) is {@link EmbeddedCluster}.
 */
public final class LocalDatabase implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(LocalDatabase.class.getName());
  private static final Duration STOP_WAIT = Duration.ofSeconds(60);

  private final HikariDataSource pool;
  private final String url;
  private final String user;
  private final String password;
  private final String workerPassword;
  private final Runnable stopServer;
  private final FileChannel lock;

  private LocalDatabase(
      String url,
      String user,
      String password,
      String workerPassword,
      Runnable stopServer,
      FileChannel lock) {
    this.url = url;
    this.user = user;
    this.password = password;
    this.workerPassword = workerPassword;
    this.stopServer = stopServer;
    this.lock = lock;
    this.pool = pool(url, user, password);
  }

  public static LocalDatabase open(LocalSettings settings) {
    if (settings.databaseUrl() != null) {
      DatabasePasswords passwords = DatabasePasswords.loadOrCreate(settings.dataDir());
      return new LocalDatabase(
          settings.databaseUrl(),
          settings.databaseUser(),
          settings.databasePassword(),
          passwords.worker(),
          null,
          null);
    }
    FileChannel lock = lock(settings.dataDir());
    Runnable stop = null;
    try {
      Path dir = settings.dataDir().resolve("postgres");
      EmbeddedCluster.refuseAnotherMajorVersion(dir, EmbeddedCluster.embeddedMajorVersion());
      // A data directory made before passwords were asked for: its cluster trusts every local
      // connection, and is given passwords and password authentication once it runs.
      boolean trusting =
          Files.exists(dir.resolve("PG_VERSION")) && !DatabasePasswords.exist(settings.dataDir());
      DatabasePasswords passwords = DatabasePasswords.loadOrCreate(settings.dataDir());
      Optional<LeftRunning> left = LeftRunning.find(dir);
      int port;
      if (left.isPresent()) {
        LOG.log(
            Level.WARNING,
            "adopting the PostgreSQL (pid {0}, port {1}) that a server which did not stop cleanly left"
                + " running in {2}; its workers keep running",
            Long.toString(left.get().pid()),
            Integer.toString(left.get().port()),
            dir);
        port = left.get().port();
        stop = left.get()::stop;
      } else {
        EmbeddedPostgres pg = EmbeddedCluster.start(settings.dataDir(), dir, passwords, trusting);
        port = pg.getPort();
        stop = () -> EmbeddedCluster.closeQuietly(pg);
      }
      // No user in the URL: a URL's user wins over the pool's, and a worker gets this URL too.
      String jdbcUrl = "jdbc:postgresql://localhost:" + port + "/postgres";
      if (trusting) {
        EmbeddedCluster.askForPasswords(jdbcUrl, dir, passwords);
      }
      return new LocalDatabase(
          jdbcUrl,
          DatabasePasswords.SUPERUSER,
          passwords.superuser(),
          passwords.worker(),
          stop,
          lock);
    } catch (RuntimeException e) {
      if (stop != null) {
        stop.run();
      }
      release(lock);
      throw e;
    }
  }

  private static FileChannel lock(Path dataDir) {
    Path file = dataDir.resolve("server.lock");
    try {
      Files.createDirectories(dataDir);
      FileChannel channel =
          FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      try {
        if (channel.tryLock() != null) {
          return channel;
        }
      } catch (OverlappingFileLockException heldInThisJvm) {
        // another runtime in this process has it
      }
      channel.close();
      throw new BuildQueueException(
          "another buildqueue server is using "
              + dataDir
              + "; stop it first, or give this one another --data-dir");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot lock " + file, e);
    }
  }

  private static void release(FileChannel lock) {
    if (lock != null) {
      try {
        lock.close(); // releases the lock
      } catch (IOException e) {
        LOG.log(Level.WARNING, "could not release the data directory lock: " + e.getMessage());
      }
    }
  }

  /** A postmaster still running on our data directory: {@code postmaster.pid} names it. */
  record LeftRunning(long pid, int port) {
    static Optional<LeftRunning> find(Path dir) {
      Path pidFile = dir.resolve("postmaster.pid");
      try {
        if (!Files.exists(pidFile)) {
          return Optional.empty();
        }
        List<String> lines = Files.readAllLines(pidFile);
        long pid = Long.parseLong(lines.get(0).strip());
        Path dataDir = Path.of(lines.get(1).strip());
        int port = Integer.parseInt(lines.get(3).strip());
        boolean ours = Files.exists(dataDir) && Files.isSameFile(dataDir, dir);
        boolean isPostgres =
            ProcessHandle.of(pid)
                .filter(ProcessHandle::isAlive)
                .flatMap(WorkerProcesses::arguments)
                .map(args -> args.length > 0 && args[0].contains("postgres"))
                .orElse(false);
        return ours && isPostgres ? Optional.of(new LeftRunning(pid, port)) : Optional.empty();
      } catch (IOException | RuntimeException e) {
        return Optional
            .empty(); // a stale or partial pid file: PostgreSQL itself deals with it at start
      }
    }

    /** A fast shutdown (SIGINT), as {@code pg_ctl stop -m fast} does, then a wait for the exit. */
    void stop() {
      try {
        new ProcessBuilder("kill", "-INT", Long.toString(pid)).inheritIO().start().waitFor();
        Optional<ProcessHandle> p = ProcessHandle.of(pid);
        if (p.isPresent()) {
          p.get().onExit().get(STOP_WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        }
      } catch (IOException
          | java.util.concurrent.ExecutionException
          | java.util.concurrent.TimeoutException e) {
        LOG.log(Level.WARNING, "PostgreSQL (pid " + pid + ") did not stop cleanly: " + e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
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
      throw new BuildQueueException(
          "cannot connect to PostgreSQL at " + redacted(url) + ": " + e.getMessage(), e);
    }
  }

  public DataSource dataSource() {
    return pool;
  }

  /**
   * The JDBC URL a worker process on this host uses: the server's, without any user or password
   * among its parameters, since a worker logs in as the worker role ({@link #workerUser()}).
   */
  public String workerUrl() {
    int q = url.indexOf('?');
    if (q < 0) {
      return url;
    }
    List<String> kept =
        java.util.Arrays.stream(url.substring(q + 1).split("&"))
            .filter(p -> !p.toLowerCase(java.util.Locale.ROOT).matches("(user|password)(=.*)?"))
            .toList();
    return kept.isEmpty() ? url.substring(0, q) : url.substring(0, q + 1) + String.join("&", kept);
  }

  /** The role a worker logs in as (V005): it can call the worker transitions and nothing else. */
  public String workerUser() {
    return DatabasePasswords.WORKER;
  }

  public String workerPassword() {
    return workerPassword;
  }

  /** Lets the worker role log in with its password (after the migrations made it). */
  public void allowWorkerLogin(buildqueue.db.Database db) {
    buildqueue.db.WorkerRole.allowLogin(db, workerPassword);
  }

  public String user() {
    return user;
  }

  public String password() {
    return password;
  }

  public boolean embedded() {
    return stopServer != null;
  }

  /** A URL safe to print: without its parameters, which may hold a password. */
  static String redacted(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q) + "?…";
  }

  @Override
  public void close() {
    pool.close();
    if (stopServer != null) {
      stopServer.run();
    }
    release(lock);
  }
}
