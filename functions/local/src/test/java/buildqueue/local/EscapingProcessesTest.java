package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Job programs that try to outlive their job, through the whole local runtime with real worker
 * processes: a {@code setsid} child, a daemon that double-forks and calls {@code setsid()}, a
 * {@code nohup} child, a {@code setsid} child that ignores SIGTERM, and a {@code setsid} child of a
 * program still running at its timeout. Each writes the pid of the process meant to escape; one
 * second after the job has ended, none of those pids is a live process with its marker on its
 * command line. (Before the worker was a child subreaper, the {@code setsid} ones were reparented
 * to PID 1 and lived on.)
 */
@ExtendWith(PostgresExtension.class)
class EscapingProcessesTest {
  /**
   * A process meant to escape: it ignores SIGTERM if asked, writes its pid, then sleeps for 15
   * minutes; {@code $1} is its marker, {@code $2} its pid file. The system's Python, not a shim:
   * the process must be itself from its first instruction on. The program waits for the pid file,
   * so the escapee is up and in place before the program (and with it the job) ends.
   */
  private static final String ESCAPEE =
      "/usr/bin/python3 -c 'import os, signal, sys, time\n"
          + "if sys.argv[1].endswith(\"sigterm\"): signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
          + "open(sys.argv[2], \"w\").write(str(os.getpid()))\n"
          + "time.sleep(900)' %1$s %2$s";

  private static final String AWAIT_PID = "while [ ! -s %2$s ]; do sleep 0.05; done; echo started";

  /** Forks, leaves the session, forks again; the grandchild writes its pid and sleeps on. */
  private static final String DAEMON =
      """
      import os, sys, time
      pidfile = sys.argv[1]
      if os.fork() == 0:
          os.setsid()
          if os.fork() == 0:
              with open(pidfile + ".tmp", "w") as f:
                  f.write(str(os.getpid()))
              os.rename(pidfile + ".tmp", pidfile)
              time.sleep(900)
              os._exit(0)
          while not os.path.exists(pidfile):
              time.sleep(0.01)
          os._exit(0)
      os.wait()
      print("daemon started", flush=True)
      """;

  @TempDir Path dataDir;
  @TempDir Path programs;
  private TestServer server;
  private final Map<String, Path> pidFiles = new LinkedHashMap<>();

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
    // Whatever escaped a failing run is not left behind for the next test.
    pidFiles.forEach(
        (marker, file) -> escaped(file, marker).ifPresent(ProcessHandle::destroyForcibly));
  }

  @Test
  void no_process_a_job_started_is_alive_one_second_after_the_job_ends(TestDatabase db)
      throws Exception {
    Path daemon = Files.writeString(programs.resolve("daemon.py"), DAEMON);
    Map<String, String> commands = new LinkedHashMap<>();
    commands.put("setsid", "setsid " + ESCAPEE + " & " + AWAIT_PID);
    commands.put("nohup", "nohup " + ESCAPEE + " > /dev/null 2>&1 & " + AWAIT_PID);
    commands.put("ignores-sigterm", "setsid " + ESCAPEE + " & " + AWAIT_PID);
    // Still running at its timeout: SIGTERM, the grace, SIGKILL end it and what it left.
    commands.put("times-out", "setsid " + ESCAPEE + " & " + AWAIT_PID + "; sleep 900");
    StringBuilder kinds = new StringBuilder("{\"kinds\": {");
    for (Map.Entry<String, String> e : commands.entrySet()) {
      String marker = "escape-marker-" + e.getKey();
      Path pidFile = programs.resolve(e.getKey() + ".pid");
      pidFiles.put(marker, pidFile);
      kinds
          .append(kind(e.getKey(), "sh", "-c", e.getValue().formatted(marker, pidFile)))
          .append(", ");
    }
    Path daemonPid = programs.resolve("daemon.pid");
    pidFiles.put("daemon.py", daemonPid);
    kinds
        .append(kind("daemon", "/usr/bin/python3", daemon.toString(), daemonPid.toString()))
        .append("}}");
    Path catalogue = Files.writeString(programs.resolve("kinds.json"), kinds);
    server = TestServer.start(db, TestServer.settings(db, dataDir).withKindsFile(catalogue));

    for (String kind : new String[] {"setsid", "nohup", "ignores-sigterm", "times-out", "daemon"}) {
      ApiClient.Reply reply =
          server
              .client("ada", false)
              .post(
                  "jobs",
                  TestServer.JSON
                      .createObjectNode()
                      .put("kind", kind)
                      .set("payload", TestServer.JSON.createObjectNode()));
      assertThat(reply.status()).as(reply.text()).isEqualTo(201);
      long job = reply.json().path("id").asLong();
      server.awaitStatus(job, kind.equals("times-out") ? "failed" : "succeeded");
      String marker = kind.equals("daemon") ? "daemon.py" : "escape-marker-" + kind;
      Path file = pidFiles.get(marker);
      assertThat(file)
          .as("the %s program wrote the pid of the process meant to escape", kind)
          .exists();
      Await.until(
          kind + "'s escapee (pid " + read(file) + ") to be gone one second after its job ended",
          Duration.ofSeconds(1),
          () -> escaped(file, marker).isEmpty());
    }
  }

  private static String kind(String name, String... command) {
    StringBuilder json = new StringBuilder("\"" + name + "\": {\"command\": [");
    for (int i = 0; i < command.length; i++) {
      json.append(i == 0 ? "" : ", ").append(TestServer.JSON.getNodeFactory().textNode(command[i]));
    }
    String timeout = name.equals("times-out") ? "2s" : "1m";
    return json.append("], \"timeout\": \"" + timeout + "\", \"cancelGracePeriod\": \"1s\"}")
        .toString();
  }

  /** The process a pid file names, if it is alive with {@code marker} on its command line. */
  private static Optional<ProcessHandle> escaped(Path pidFile, String marker) {
    String pid = read(pidFile);
    if (pid.isEmpty()) {
      return Optional.empty();
    }
    try {
      byte[] cmdline = Files.readAllBytes(Path.of("/proc", pid, "cmdline"));
      String stat = Files.readString(Path.of("/proc", pid, "stat"), StandardCharsets.ISO_8859_1);
      char state = stat.charAt(stat.lastIndexOf(')') + 2);
      if (state != 'Z' && new String(cmdline, StandardCharsets.UTF_8).contains(marker)) {
        return ProcessHandle.of(Long.parseLong(pid));
      }
    } catch (IOException e) {
      // gone
    }
    return Optional.empty();
  }

  private static String read(Path file) {
    try {
      return Files.exists(file) ? Files.readString(file).strip() : "";
    } catch (IOException e) {
      return "";
    }
  }
}
