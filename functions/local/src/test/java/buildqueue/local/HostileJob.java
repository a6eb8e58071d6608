package buildqueue.local;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;

/**
 * A job program that tries every credential it can reach from its worker (see HostileJobTest): its
 * own environment, its worker's through {@code /proc/<pid>/environ}, and with the worker's database
 * login and token, every table and another worker's job. It prints one {@code RESULT} line per
 * attempt: {@code ok}, {@code denied} (PostgreSQL refused) or {@code fenced} (the transition ran
 * and changed nothing).
 */
public final class HostileJob {
  private HostileJob() {}

  public static void main(String[] args) throws Exception {
    com.fasterxml.jackson.databind.JsonNode payload =
        new com.fasterxml.jackson.databind.ObjectMapper()
            .readTree(Path.of(System.getenv("BUILDQUEUE_PAYLOAD")).toFile());
    long victimWorker = payload.path("victimWorker").asLong();
    long victimJob = payload.path("victimJob").asLong();
    long ownJob = Long.parseLong(System.getenv("BUILDQUEUE_JOB_ID"));
    Map<String, String> own = System.getenv();
    result("own-env-has-token", own.containsKey("BUILDQUEUE_WORKER_TOKEN") ? "ok" : "absent");
    result(
        "own-env-has-database-password",
        own.containsKey("BUILDQUEUE_DATABASE_PASSWORD") ? "ok" : "absent");

    Map<String, String> worker =
        workerEnvironment().orElseThrow(() -> new IllegalStateException("no worker found"));
    result("worker-env-through-proc", "ok");
    result("worker-env-names", String.join(",", new java.util.TreeSet<>(worker.keySet())));
    String url = worker.get("BUILDQUEUE_DATABASE_URL");
    String user = worker.get("BUILDQUEUE_DATABASE_USER");
    String password = worker.get("BUILDQUEUE_DATABASE_PASSWORD");
    long workerId = Long.parseLong(worker.get("BUILDQUEUE_WORKER_ID"));
    UUID token = UUID.fromString(worker.get("BUILDQUEUE_WORKER_TOKEN"));
    result("worker-database-user", user);

    result(
        "superuser-with-the-workers-password",
        attempt(() -> login(url, "postgres", password).close()));
    result("superuser-without-a-password", attempt(() -> login(url, "postgres", null).close()));
    try (Connection c = login(url, user, password)) {
      result("read-jobs", attempt(() -> query(c, "select payload from build_job")));
      result("read-workers", attempt(() -> query(c, "select token from build_worker")));
      result("change-jobs", attempt(() -> update(c, "update build_job set status = 'cancelled'")));
      result("own-token-on-another-workers-id", fencedOrNot(c, victimWorker, token, victimJob));
      result("own-worker-on-another-workers-job", fencedOrNot(c, workerId, token, victimJob));
      result("own-worker-own-job", checkIn(c, workerId, token, ownJob) ? "ok" : "fenced");
    }
  }

  private static Optional<Map<String, String>> workerEnvironment() throws Exception {
    Optional<ProcessHandle> p = ProcessHandle.current().parent();
    while (p.isPresent()) {
      Path environ = Path.of("/proc", Long.toString(p.get().pid()), "environ");
      if (Files.isReadable(environ)) {
        Map<String, String> env = new HashMap<>();
        for (String entry :
            new String(Files.readAllBytes(environ), StandardCharsets.UTF_8).split("\0")) {
          int eq = entry.indexOf('=');
          if (eq > 0) {
            env.put(entry.substring(0, eq), entry.substring(eq + 1));
          }
        }
        if (env.containsKey("BUILDQUEUE_WORKER_TOKEN")) {
          return Optional.of(env);
        }
      }
      p = p.get().parent();
    }
    return Optional.empty();
  }

  private static String fencedOrNot(Connection c, long workerId, UUID token, long jobId) {
    try {
      return checkIn(c, workerId, token, jobId) ? "ok" : "fenced";
    } catch (SQLException e) {
      return "denied";
    }
  }

  /** A check-in that would set the job's progress to 99: true if it was recorded. */
  private static boolean checkIn(Connection c, long workerId, UUID token, long jobId)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "select * from build_worker_check_in(?, ?, ?, 99, null, 0, null, null)")) {
      ps.setLong(1, workerId);
      ps.setObject(2, token);
      ps.setLong(3, jobId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  private interface Attempt {
    void run() throws SQLException;
  }

  private static String attempt(Attempt a) {
    try {
      a.run();
      return "ok";
    } catch (SQLException e) {
      return "denied";
    }
  }

  private static Connection login(String url, String user, String password) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user);
    if (password != null) {
      props.setProperty("password", password);
    }
    return DriverManager.getConnection(url, props);
  }

  private static void query(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
    }
  }

  private static void update(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.executeUpdate();
    }
  }

  private static void result(String name, String outcome) {
    System.out.println("RESULT " + name + "=" + outcome);
  }
}
