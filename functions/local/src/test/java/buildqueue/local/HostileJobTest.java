package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import buildqueue.core.QueueConfig;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.Await;
import buildqueue.worker.exec.JobUser;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A hostile job on the local server, with its embedded PostgreSQL asking every role for a password.
 *
 * <p>Run as the server's own user (a server that is not root), it finds its worker's environment
 * through /proc and uses the worker's database login and token on everything it can think of. It
 * can change its own job, and nothing else: every table is refused to the worker role, the
 * superuser will not take the worker's password, and another worker's job is fenced off. (The
 * server's data directory is then within its reach: see the README.)
 *
 * <p>Run by a root server, as the job user {@code nobody}, it reaches none of that: not the token
 * secret (so no admin token), not the password file, not its worker's or the server's environment,
 * not the superuser.
 */
class HostileJobTest {
  /**
   * The hostile program for a root server: a Python script (the system's, which {@code nobody} can
   * run) that prints one {@code RESULT} line per attempt. A token signed with the secret it read,
   * or with a guess when it read none, asks for an admin-only resource.
   */
  private static final String AS_NOBODY =
      """
      import base64, hashlib, hmac, json, os, socket, struct, time, urllib.error, urllib.request
      p = json.load(open(os.environ["BUILDQUEUE_PAYLOAD"]))
      def result(k, v):
          print(f"RESULT {k}={v}", flush=True)
      def attempt(f):
          try:
              f()
              return "ok"
          except PermissionError:
              return "denied"
          except OSError as e:
              return type(e).__name__
      data = p["dataDir"]
      result("uid", os.getuid())
      result("own-env-has-token", "ok" if "BUILDQUEUE_WORKER_TOKEN" in os.environ else "absent")
      result("read-token-secret", attempt(lambda: open(os.path.join(data, "token-secret"), "rb").read()))
      result("read-database-passwords", attempt(lambda: open(os.path.join(data, "database-passwords.properties")).read()))
      result("list-data-dir", attempt(lambda: os.listdir(data)))
      result("list-job-logs", attempt(lambda: os.listdir(os.path.join(data, "jobs"))))
      worker = os.getppid()
      result("worker-is-parent", "ok" if "buildqueue.worker=" in open(f"/proc/{worker}/cmdline").read() else "no")
      result("read-worker-environ", attempt(lambda: open(f"/proc/{worker}/environ", "rb").read()))
      server = int(open(f"/proc/{worker}/stat").read().rsplit(")", 1)[1].split()[1])
      result("read-server-environ", attempt(lambda: open(f"/proc/{server}/environ", "rb").read()))
      try:
          key = base64.b64decode(open(os.path.join(data, "token-secret")).read().strip())
      except OSError:
          key = b"a guess"
      b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
      now = int(time.time())
      claims = {"iss": "buildqueue-local", "sub": "mallory", "scope": "buildqueue/admin", "iat": now, "exp": now + 300}
      unsigned = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
      token = unsigned + "." + b64(hmac.new(key, unsigned.encode(), hashlib.sha256).digest())
      request = urllib.request.Request(p["api"] + "/lanes", headers={"Authorization": "Bearer " + token})
      try:
          result("forged-admin-token", urllib.request.urlopen(request).status)
      except urllib.error.HTTPError as e:
          result("forged-admin-token", e.code)
      with socket.create_connection(("127.0.0.1", p["databasePort"])) as db:
          body = struct.pack("!i", 196608) + b"user\\0postgres\\0database\\0postgres\\0\\0"
          db.sendall(struct.pack("!i", len(body) + 4) + body)
          kind, length, code = struct.unpack("!cii", db.recv(9))
          result("superuser-without-a-password", "ok" if kind == b"R" and code == 0 else "denied")
      """;

  @TempDir Path dataDir;
  @TempDir Path programs;

  @Test
  void a_job_with_every_credential_its_worker_has_can_change_its_own_job_and_nothing_else()
      throws Exception {
    String java = ProcessHandle.current().info().command().orElseThrow();
    String catalogue =
        """
        {"kinds": {"hostile": {"command": ["%s", "-cp", "%s", "buildqueue.local.HostileJob"], "timeout": "2m"}}}
        """
            .formatted(java, System.getProperty("java.class.path"));
    Path kinds = Files.writeString(programs.resolve("kinds.json"), catalogue);
    LocalSettings settings =
        LocalSettings.defaults()
            .withPort(0)
            .withDataDir(dataDir)
            .withTickInterval(Duration.ofMillis(200))
            .withShutdownGrace(Duration.ZERO)
            .withQueue(QueueConfig.defaults().withLivenessInterval(Duration.ofMillis(300)))
            .withKindsFile(kinds)
            .withJobUser(System.getProperty("user.name"));
    try (LocalRuntime runtime = LocalRuntime.start(settings)) {
      // The victim: Bob's long job on his own worker.
      ApiClient admin =
          new ApiClient(
              runtime.baseUri(), runtime.tokens().mint("admin", true, Duration.ofMinutes(5)));
      assertThat(
              admin
                  .put("users/bob", TestServer.JSON.createObjectNode().put("dedicatedWorker", true))
                  .status())
          .isBetween(200, 204);
      long victim =
          submit(
              runtime,
              "bob",
              "demo",
              TestServer.JSON.createObjectNode().put("steps", 600).put("stepMillis", 100));
      Await.until(
          "bob's job to run",
          Duration.ofSeconds(60),
          () -> "running".equals(job(runtime, victim).string("status")));
      long victimWorker = job(runtime, victim).longValue("worker_id");
      int victimProgress = job(runtime, victim).intValue("progress");

      long hostile =
          submit(
              runtime,
              "mallory",
              "hostile",
              TestServer.JSON
                  .createObjectNode()
                  .put("victimWorker", victimWorker)
                  .put("victimJob", victim));
      Await.until(
          "the hostile job to end",
          Duration.ofSeconds(90),
          () -> job(runtime, hostile).string("status").matches("succeeded|failed"));

      Map<String, String> results = results(runtime, hostile);
      assertThat(results)
          .containsEntry("own-env-has-token", "absent")
          .containsEntry("own-env-has-database-password", "absent")
          .containsEntry("worker-env-through-proc", "ok")
          .containsEntry("worker-database-user", "buildqueue_worker")
          .containsEntry("superuser-with-the-workers-password", "denied")
          .containsEntry("superuser-without-a-password", "denied")
          .containsEntry("read-jobs", "denied")
          .containsEntry("read-workers", "denied")
          .containsEntry("change-jobs", "denied")
          .containsEntry("own-token-on-another-workers-id", "fenced")
          .containsEntry("own-worker-on-another-workers-job", "fenced")
          .containsEntry("own-worker-own-job", "ok");
      assertThat(results.get("worker-env-names").split(","))
          .as("the worker's environment: an allowlist, never the server's")
          .allMatch(
              name -> name.startsWith("BUILDQUEUE_") || WorkerProcessStarter.passedToWorkers(name));
      Row after = job(runtime, victim);
      assertThat(after.intValue("progress"))
          .as("bob's progress moves only by his own worker")
          .isNotEqualTo(99)
          .isGreaterThanOrEqualTo(victimProgress);
      assertThat(after.string("status")).isEqualTo("running");
      assertThat(after.longValue("worker_id")).isEqualTo(victimWorker);
    }
  }

  @Test
  void run_by_root_a_job_runs_as_nobody_and_reaches_no_secret_of_the_server_or_its_worker()
      throws Exception {
    assumeTrue(JobUser.runningAsRoot(), "only a root server runs jobs as another user");
    // Where nobody can read its program: not in the root-only temporary directories.
    Files.setPosixFilePermissions(programs, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path script = Files.writeString(programs.resolve("hostile.py"), AS_NOBODY);
    Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rw-r--r--"));
    Path kinds =
        Files.writeString(
            programs.resolve("kinds.json"),
            "{\"kinds\": {\"hostile\": {\"command\": [\"/usr/bin/python3\", \""
                + script
                + "\"], \"timeout\": \"2m\"}}}");
    LocalSettings settings =
        LocalSettings.defaults()
            .withPort(0)
            .withDataDir(dataDir)
            .withTickInterval(Duration.ofMillis(200))
            .withShutdownGrace(Duration.ZERO)
            .withQueue(QueueConfig.defaults().withLivenessInterval(Duration.ofMillis(300)))
            .withKindsFile(kinds);
    assertThat(settings.jobUser()).as("the default").isEqualTo("nobody");
    try (LocalRuntime runtime = LocalRuntime.start(settings)) {
      String url =
          runtime
              .database()
              .queryOptional("select inet_server_port()::text as port", Params.none())
              .orElseThrow()
              .string("port");
      long hostile =
          submit(
              runtime,
              "mallory",
              "hostile",
              TestServer.JSON
                  .createObjectNode()
                  .put("dataDir", dataDir.toString())
                  .put("api", runtime.baseUri().toString().replaceAll("/$", ""))
                  .put("databasePort", Integer.parseInt(url)));
      Await.until(
          "the hostile job to end",
          Duration.ofSeconds(90),
          () -> job(runtime, hostile).string("status").matches("succeeded|failed"));

      Map<String, String> results = results(runtime, hostile);
      String log =
          runtime
              .database()
              .queryOptional(
                  "select tail from build_job_log where job_id = :id", Params.of("id", hostile))
              .map(r -> r.string("tail"))
              .orElse("");
      assertThat(results)
          .as("what the job tried, and got; its log:%n%s", log)
          .containsEntry("uid", "65534")
          .containsEntry("own-env-has-token", "absent")
          .containsEntry("read-token-secret", "denied")
          .containsEntry("read-database-passwords", "denied")
          .containsEntry("list-data-dir", "denied")
          .containsEntry("list-job-logs", "denied")
          .containsEntry("worker-is-parent", "ok")
          .containsEntry("read-worker-environ", "denied")
          .containsEntry("read-server-environ", "denied")
          .containsEntry("forged-admin-token", "401")
          .containsEntry("superuser-without-a-password", "denied");
      assertThat(job(runtime, hostile).string("status")).isEqualTo("succeeded");
    }
  }

  private static Map<String, String> results(LocalRuntime runtime, long job) {
    Map<String, String> out = new LinkedHashMap<>();
    Row log =
        runtime
            .database()
            .queryOptional(
                "select tail from build_job_log where job_id = :id", Params.of("id", job))
            .orElseThrow();
    for (String line : log.string("tail").split("\n")) {
      int at = line.indexOf("RESULT ");
      if (at >= 0) {
        String[] kv = line.substring(at + "RESULT ".length()).strip().split("=", 2);
        out.put(kv[0], kv[1]);
      }
    }
    return out;
  }

  private static Row job(LocalRuntime runtime, long id) {
    return runtime
        .database()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  private static long submit(LocalRuntime runtime, String user, String kind, ObjectNode payload) {
    ApiClient client =
        new ApiClient(runtime.baseUri(), runtime.tokens().mint(user, false, Duration.ofMinutes(5)));
    ApiClient.Reply reply =
        client.post(
            "jobs", TestServer.JSON.createObjectNode().put("kind", kind).set("payload", payload));
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }
}
