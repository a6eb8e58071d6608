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
 * survives restarts, or an existing one given by URL. Also what a worker process needs to reach
 * the same database ({@link #workerUrl()} and credentials).
 *
 * <p>One server per data directory, held by a lock on {@code server.lock}. An embedded PostgreSQL
 * left running by a server that was killed (its postmaster outlives it) is adopted rather than
 * fought over, so the workers that server left keep their database and nothing is interrupted.
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

  private LocalDatabase(String url, String user, String password, String workerPassword, Runnable stopServer,
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
      return new LocalDatabase(settings.databaseUrl(), settings.databaseUser(), settings.databasePassword(),
          passwords.worker(), null, null);
    }
    FileChannel lock = lock(settings.dataDir());
    Runnable stop = null;
    try {
      Path dir = settings.dataDir().resolve("postgres");
      refuseAnotherMajorVersion(dir, embeddedMajorVersion());
      // A data directory made before passwords were asked for: its cluster trusts every local
      // connection, and is given passwords and password authentication once it runs.
      boolean trusting = Files.exists(dir.resolve("PG_VERSION")) && !DatabasePasswords.exist(settings.dataDir());
      DatabasePasswords passwords = DatabasePasswords.loadOrCreate(settings.dataDir());
      Optional<LeftRunning> left = LeftRunning.find(dir);
      int port;
      if (left.isPresent()) {
        LOG.log(Level.WARNING, "adopting the PostgreSQL (pid {0}, port {1}) that a server which did not stop cleanly left"
            + " running in {2}; its workers keep running", Long.toString(left.get().pid()),
            Integer.toString(left.get().port()), dir);
        port = left.get().port();
        stop = left.get()::stop;
      } else {
        EmbeddedPostgres pg = start(settings.dataDir(), dir, passwords, trusting);
        port = pg.getPort();
        stop = () -> closeQuietly(pg);
      }
      // No user in the URL: a URL's user wins over the pool's, and a worker gets this URL too.
      String jdbcUrl = "jdbc:postgresql://localhost:" + port + "/postgres";
      if (trusting) {
        askForPasswords(jdbcUrl, dir, passwords);
      }
      return new LocalDatabase(jdbcUrl, DatabasePasswords.SUPERUSER, passwords.superuser(), passwords.worker(), stop,
          lock);
    } catch (RuntimeException e) {
      if (stop != null) {
        stop.run();
      }
      release(lock);
      throw e;
    }
  }

  /**
   * The major version of the PostgreSQL this jar embeds: the parent pom's {@code
   * postgres-binaries.version}, written into {@code postgres.properties} by the build.
   */
  static int embeddedMajorVersion() {
    String resource = "/buildqueue/local/postgres.properties";
    java.util.Properties p = new java.util.Properties();
    try (java.io.InputStream in = LocalDatabase.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(resource + " is missing from the jar: build it with Maven");
      }
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + resource, e);
    }
    String version = p.getProperty("binaries.version", "");
    if (!version.matches("\\d+\\..*")) {
      throw new IllegalStateException(resource + " names no PostgreSQL version (" + version + "): build it with Maven");
    }
    return Integer.parseInt(version.substring(0, version.indexOf('.')));
  }

  /**
   * A data directory made by another major version of PostgreSQL (an earlier buildqueue embedded
   * PostgreSQL 14) cannot be opened by this one: {@code PG_VERSION} says which made it. Refused
   * before anything starts or is written, saying what to do, so the data in it stay as they were.
   */
  static void refuseAnotherMajorVersion(Path dir, int major) {
    Path file = dir.resolve("PG_VERSION");
    if (!Files.exists(file)) {
      return;
    }
    String found;
    try {
      found = Files.readString(file).strip();
    } catch (IOException e) {
      throw new BuildQueueException("cannot read " + file + " (which PostgreSQL made " + dir + "): " + e.getMessage(), e);
    }
    if (found.equals(Integer.toString(major))) {
      return;
    }
    throw new BuildQueueException("the embedded PostgreSQL data in " + dir + " were made by PostgreSQL " + found
        + " (an earlier buildqueue), and this buildqueue runs PostgreSQL " + major + ", which cannot open them."
        + " Nothing was changed. To start afresh, move the directory away (mv " + dir + " " + dir + "-pg" + found
        + ") and start again; the old jobs stay in the moved directory. To keep them, upgrade the directory"
        + " with PostgreSQL's own tools (pg_upgrade, or pg_dump with the earlier buildqueue serving it and a"
        + " restore into the new one) before starting this buildqueue on it.");
  }

  private static EmbeddedPostgres start(Path dataDir, Path dir, DatabasePasswords passwords, boolean trusting) {
    Path log = dataDir.resolve("postgres.log");
    Path pwfile = null;
    try {
      Files.createDirectories(dir);
      boolean fresh = !Files.exists(dir.resolve("PG_VERSION"));
      EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder();
      if (fresh) {
        // initdb's own "-A trust" is overridden by the later option: the superuser gets its
        // password at once, and there is no moment when the cluster trusts anyone.
        pwfile = passwords.superuserPasswordFile(dataDir);
        builder.setLocaleConfig("auth", "scram-sha-256").setLocaleConfig("pwfile", pwfile.toString());
      }
      if (!trusting) {
        builder.setDataDirectoryCustomizer(d -> writeHba(d.toPath()));
        // Its readiness check logs in too.
        builder.setConnectConfig("password", passwords.superuser());
      }
      EmbeddedPostgres pg = builder
          .setDataDirectory(dir)
          .setCleanDataDirectory(false)
          // The server stops it itself, after its workers had their grace period (LocalRuntime).
          .setRegisterShutdownHook(false)
          .setServerConfig("max_connections", "100")
          .setOutputRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .setErrorRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .start();
      LOG.log(Level.INFO, "embedded PostgreSQL {0} in {1} on port {2}", fresh ? "created" : "started", dir,
          Integer.toString(pg.getPort()));
      return pg;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start embedded PostgreSQL in " + dir + "; see " + log, e);
    } finally {
      if (pwfile != null) {
        try {
          Files.deleteIfExists(pwfile);
        } catch (IOException e) {
          LOG.log(Level.WARNING, "could not remove " + pwfile + ": " + e.getMessage());
        }
      }
    }
  }

  /**
   * Every role gives its password, over TCP and the local socket alike: workers, and the jobs they
   * run, connect as the same OS user as the server, so "trust" would give them the superuser.
   */
  static final String HBA =
      """
      # Written by buildqueue at every start (LocalDatabase): every role gives its password.
      local all all scram-sha-256
      host  all all 127.0.0.1/32 scram-sha-256
      host  all all ::1/128 scram-sha-256
      """;

  private static void writeHba(Path dir) {
    try {
      Files.writeString(dir.resolve("pg_hba.conf"), HBA);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + dir.resolve("pg_hba.conf"), e);
    }
  }

  /**
   * For a cluster made when it trusted local connections: gives the superuser its password (the
   * driver sends only a SCRAM verifier computed here), then requires passwords and reloads.
   */
  private static void askForPasswords(String jdbcUrl, Path dir, DatabasePasswords passwords) {
    java.util.Properties props = new java.util.Properties();
    props.setProperty("user", DatabasePasswords.SUPERUSER);
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(jdbcUrl, props)) {
      c.unwrap(org.postgresql.PGConnection.class)
          .alterUserPassword(DatabasePasswords.SUPERUSER, passwords.superuser().toCharArray(), "scram-sha-256");
      writeHba(dir);
      try (java.sql.Statement st = c.createStatement()) {
        st.execute("select pg_reload_conf()");
      }
      LOG.log(Level.INFO, "the embedded PostgreSQL in {0} now asks every role for its password", dir);
    } catch (java.sql.SQLException e) {
      throw new BuildQueueException("could not give the embedded PostgreSQL in " + dir + " passwords: " + e.getMessage(), e);
    }
  }

  private static FileChannel lock(Path dataDir) {
    Path file = dataDir.resolve("server.lock");
    try {
      Files.createDirectories(dataDir);
      FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      try {
        if (channel.tryLock() != null) {
          return channel;
        }
      } catch (OverlappingFileLockException heldInThisJvm) {
        // another runtime in this process has it
      }
      channel.close();
      throw new BuildQueueException("another buildqueue server is using " + dataDir
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
        boolean isPostgres = ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
            .flatMap(LocalProcessPlatform::arguments)
            .map(args -> args.length > 0 && args[0].contains("postgres"))
            .orElse(false);
        return ours && isPostgres ? Optional.of(new LeftRunning(pid, port)) : Optional.empty();
      } catch (IOException | RuntimeException e) {
        return Optional.empty(); // a stale or partial pid file: PostgreSQL itself deals with it at start
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
      } catch (IOException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
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
      throw new BuildQueueException("cannot connect to PostgreSQL at " + redacted(url) + ": " + e.getMessage(), e);
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
    List<String> kept = java.util.Arrays.stream(url.substring(q + 1).split("&"))
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
    if (stopServer != null) {
      stopServer.run();
    }
    release(lock);
  }
}
