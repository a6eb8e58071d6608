package buildqueue.local;

import buildqueue.BuildQueueException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The embedded PostgreSQL of a data directory ({@code <data dir>/postgres}): which major version
 * made it, its start (every role asked for its password from the first moment), and the passwords
 * given to a cluster made when it trusted local connections.
 */
final class EmbeddedCluster {
  private static final System.Logger LOG = System.getLogger(EmbeddedCluster.class.getName());

  private EmbeddedCluster() {}

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
      throw new IllegalStateException(
          resource + " names no PostgreSQL version (" + version + "): build it with Maven");
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
      throw new BuildQueueException(
          "cannot read " + file + " (which PostgreSQL made " + dir + "): " + e.getMessage(), e);
    }
    if (found.equals(Integer.toString(major))) {
      return;
    }
    throw new BuildQueueException(
        "the embedded PostgreSQL data in "
            + dir
            + " were made by PostgreSQL "
            + found
            + " (an earlier buildqueue), and this buildqueue runs PostgreSQL "
            + major
            + ", which cannot open them."
            + " Nothing was changed. To start afresh, move the directory away (mv "
            + dir
            + " "
            + dir
            + "-pg"
            + found
            + ") and start again; the old jobs stay in the moved directory. To keep them, upgrade the directory"
            + " with PostgreSQL's own tools (pg_upgrade, or pg_dump with the earlier buildqueue serving it and a"
            + " restore into the new one) before starting this buildqueue on it.");
  }

  static EmbeddedPostgres start(
      Path dataDir, Path dir, DatabasePasswords passwords, boolean trusting) {
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
        builder
            .setLocaleConfig("auth", "scram-sha-256")
            .setLocaleConfig("pwfile", pwfile.toString());
      }
      if (!trusting) {
        builder.setDataDirectoryCustomizer(d -> writeHba(d.toPath()));
        // Its readiness check logs in too.
        builder.setConnectConfig("password", passwords.superuser());
      }
      EmbeddedPostgres pg =
          builder
              .setDataDirectory(dir)
              .setCleanDataDirectory(false)
              // The server stops it itself, after its workers had their grace period
              // (LocalRuntime).
              .setRegisterShutdownHook(false)
              .setServerConfig("max_connections", "100")
              .setOutputRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
              .setErrorRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
              .start();
      LOG.log(
          Level.INFO,
          "embedded PostgreSQL {0} in {1} on port {2}",
          fresh ? "created" : "started",
          dir,
          Integer.toString(pg.getPort()));
      return pg;
    } catch (IOException e) {
      throw new UncheckedIOException(
          "could not start embedded PostgreSQL in " + dir + "; see " + log, e);
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
  static void askForPasswords(String jdbcUrl, Path dir, DatabasePasswords passwords) {
    java.util.Properties props = new java.util.Properties();
    props.setProperty("user", DatabasePasswords.SUPERUSER);
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(jdbcUrl, props)) {
      c.unwrap(org.postgresql.PGConnection.class)
          .alterUserPassword(
              DatabasePasswords.SUPERUSER, passwords.superuser().toCharArray(), "scram-sha-256");
      writeHba(dir);
      try (java.sql.Statement st = c.createStatement()) {
        st.execute("select pg_reload_conf()");
      }
      LOG.log(
          Level.INFO, "the embedded PostgreSQL in {0} now asks every role for its password", dir);
    } catch (java.sql.SQLException e) {
      throw new BuildQueueException(
          "could not give the embedded PostgreSQL in " + dir + " passwords: " + e.getMessage(), e);
    }
  }

  static void closeQuietly(EmbeddedPostgres pg) {
    try {
      pg.close();
    } catch (IOException e) {
      LOG.log(Level.WARNING, "embedded PostgreSQL did not stop cleanly: " + e.getMessage());
    }
  }
}
