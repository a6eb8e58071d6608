package buildqueue.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Figure 2: how many single-row commits per second this PostgreSQL takes, with pgbench when it is
 * installed (Debian's postgresql-client ships it; the embedded binaries do not), else an equivalent
 * JDBC loop: N connections in autocommit, each inserting one row per statement.
 */
final class CommitCeiling {
  private static final String TABLE =
      "create table commit_probe (id bigserial primary key, v integer not null)";
  private static final String INSERT = "insert into commit_probe (v) values (1)";
  private static final Pattern TPS =
      Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)");

  private final BenchPostgres pg;
  private final Optional<Path> pgbench;

  CommitCeiling(BenchPostgres pg) {
    this.pg = pg;
    this.pgbench = findOnPath("pgbench");
  }

  String tool() {
    return pgbench
        .map(p -> p + " (" + version(p) + ")")
        .orElse("JDBC loop (pgbench not installed)");
  }

  /** Commits per second with {@code clients} connections for {@code seconds}. */
  double commitsPerSecond(int clients, int seconds) {
    String db = pg.createEmptyDatabase("bq_ceiling");
    try {
      try (Connection c = DriverManager.getConnection(pg.jdbcUrl(db), "postgres", "")) {
        c.createStatement().execute(TABLE);
      }
      return pgbench.isPresent() ? viaPgbench(db, clients, seconds) : viaJdbc(db, clients, seconds);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    } finally {
      pg.drop(db);
    }
  }

  private double viaPgbench(String db, int clients, int seconds) {
    try {
      Path script = Files.createTempFile("commit-probe", ".sql");
      Files.writeString(script, INSERT + ";\n");
      List<String> cmd =
          List.of(
              pgbench.get().toString(),
              "-n",
              "-M",
              "prepared",
              "-c",
              Integer.toString(clients),
              "-j",
              Integer.toString(Math.min(clients, 2)),
              "-T",
              Integer.toString(seconds),
              "-f",
              script.toString(),
              "-h",
              "localhost",
              "-p",
              Integer.toString(pg.port()),
              "-U",
              "postgres",
              db);
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      int code = p.waitFor();
      Files.deleteIfExists(script);
      Matcher m = TPS.matcher(out);
      if (code != 0 || !m.find()) {
        throw new IllegalStateException("pgbench exited " + code + ": " + out);
      }
      return Double.parseDouble(m.group(1));
    } catch (IOException e) {
      throw new IllegalStateException("running pgbench", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private double viaJdbc(String db, int clients, int seconds) {
    AtomicLong commits = new AtomicLong();
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    List<Thread> threads = new ArrayList<>();
    long start = System.nanoTime();
    for (int i = 0; i < clients; i++) {
      Thread t =
          new Thread(
              () -> {
                try (Connection c = DriverManager.getConnection(pg.jdbcUrl(db), "postgres", "");
                    PreparedStatement ps = c.prepareStatement(INSERT)) {
                  while (System.nanoTime() < end) {
                    ps.executeUpdate();
                    commits.incrementAndGet();
                  }
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    return commits.get() / ((System.nanoTime() - start) / 1e9);
  }

  static Optional<Path> findOnPath(String name) {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(java.io.File.pathSeparator)) {
      Path candidate = Path.of(dir, name);
      if (Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  private static String version(Path pgbench) {
    try {
      Process p =
          new ProcessBuilder(pgbench.toString(), "--version").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      p.waitFor();
      return out;
    } catch (IOException e) {
      return "version unknown";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "version unknown";
    }
  }
}
