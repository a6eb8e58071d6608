package buildqueue.local;

import static buildqueue.local.PackagedJar.JAR;
import static buildqueue.local.PackagedJar.cli;
import static buildqueue.local.PackagedJar.freePort;
import static buildqueue.local.PackagedJar.java;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.TestKitClasses;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar as a newcomer runs it: {@code java -jar buildqueue-local.jar serve} with the
 * embedded database, the CLI in separate processes, and SIGKILL ({@link LocalShutdownIT}: SIGTERM
 * and Ctrl-C).
 */
class LocalJarIT {
  @TempDir Path dir;
  private final List<Process> servers = new ArrayList<>();

  /**
   * Servers stop as SIGTERM stops them; anything left (a killed server's PostgreSQL) is stopped
   * too.
   */
  @AfterEach
  void stopServers() throws InterruptedException {
    PackagedJar.stop(servers, dir.resolve("data"));
  }

  private Process serve(int port, String... more) throws IOException {
    List<String> args = new ArrayList<>(List.of("--tick-interval", "500ms"));
    args.addAll(List.of(more));
    return PackagedJar.serve(dir, servers, port, args.toArray(String[]::new));
  }

  @Test
  void the_jar_holds_no_test_double() throws IOException {
    List<String> entries;
    try (JarFile jar = new JarFile(JAR)) {
      entries = jar.stream().map(ZipEntry::getName).toList();
    }
    assertThat(entries).as("the runnable jar").contains("buildqueue/local/Main.class");
    assertThat(TestKitClasses.entries())
        .as("the test kit as loaded")
        .contains("buildqueue/testing/InProcessPlatform.class");
    assertThat(TestKitClasses.doublesIn(entries)).isEmpty();
  }

  @Test
  void a_killed_server_loses_nothing_its_database_and_worker_are_adopted_by_the_next_start()
      throws Exception {
    int port = freePort();
    Process server = serve(port);
    long id =
        TestServer.JSON
            .readTree(
                cli(
                    port,
                    dir.resolve("data"),
                    "submit",
                    "demo",
                    // 30 s: a status poll (a JVM of its own, seconds on a busy machine) must
                    // see it make progress well before it ends and its worker goes.
                    "{\"steps\": 75, \"stepMillis\": 400}",
                    "--user",
                    "bob",
                    "--json"))
            .path("id")
            .asLong();
    Await.until("the job to make progress", Duration.ofSeconds(60), () -> progress(port, id) >= 1);
    List<ProcessHandle> workers =
        server
            .descendants()
            .filter(
                p ->
                    WorkerProcesses.arguments(p)
                        .map(a -> String.join(" ", a).contains("buildqueue.launch="))
                        .orElse(false))
            .toList();
    assertThat(workers).hasSize(1);

    server.destroyForcibly(); // SIGKILL: no shutdown hook, PostgreSQL and the worker are orphaned
    assertThat(server.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(workers.get(0).isAlive()).isTrue();

    serve(port);
    Await.until(
        "the job to succeed", Duration.ofSeconds(120), () -> "succeeded".equals(status(port, id)));
    JsonNode job =
        TestServer.JSON
            .readTree(cli(port, dir.resolve("data"), "status", Long.toString(id), "--json"))
            .path("job");
    assertThat(job.path("attempts").asInt()).as("its first worker finished it").isEqualTo(1);
    Await.until(
        "the adopted worker's slot to be freed",
        Duration.ofSeconds(30),
        () -> {
          try {
            return cli(port, dir.resolve("data"), "status").contains("shared#1        free");
          } catch (Exception e) {
            return false;
          }
        });
  }

  @Test
  void a_process_that_leaves_its_jobs_session_is_gone_one_second_after_the_job_ends()
      throws Exception {
    Path programs = Files.createDirectories(dir.resolve("programs"));
    Files.setPosixFilePermissions(
        dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    Path pidFile = programs.resolve("escapee.pid");
    // The escapee must be writable-to by the job's user, whoever that is (nobody under root).
    Files.setPosixFilePermissions(
        programs, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
    String escapee =
        "setsid /usr/bin/python3 -c 'import os, sys, time\\nopen(sys.argv[2], \\\"w\\\").write(str(os.getpid()))"
            + "\\ntime.sleep(900)' escape-marker-jar "
            + pidFile
            + " & while [ ! -s "
            + pidFile
            + " ]; do sleep 0.05; done";
    Path kinds =
        Files.writeString(
            programs.resolve("kinds.json"),
            "{\"kinds\": {\"escapes\": {\"command\": [\"sh\", \"-c\", \""
                + escapee
                + "\"], \"timeout\": \"1m\"}}}");
    int port = freePort();
    serve(port, "--kinds", kinds.toString());
    long id =
        TestServer.JSON
            .readTree(
                cli(
                    port,
                    dir.resolve("data"),
                    "submit",
                    "escapes",
                    "{}",
                    "--user",
                    "bob",
                    "--json"))
            .path("id")
            .asLong();
    Await.until(
        "the job to succeed", Duration.ofSeconds(120), () -> "succeeded".equals(status(port, id)));
    String pid = Files.readString(pidFile).strip();
    try {
      Await.until(
          "the escapee " + pid + " to be gone",
          Duration.ofSeconds(1),
          () -> {
            try {
              return !new String(
                      Files.readAllBytes(Path.of("/proc", pid, "cmdline")), StandardCharsets.UTF_8)
                  .contains("escape-marker-jar");
            } catch (IOException gone) {
              return true;
            }
          });
    } finally {
      ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  private int progress(int port, long id) {
    try {
      return TestServer.JSON
          .readTree(cli(port, dir.resolve("data"), "status", Long.toString(id), "--json"))
          .path("job")
          .path("progress")
          .asInt();
    } catch (Exception e) {
      return -1;
    }
  }

  private String status(int port, long id) {
    try {
      return TestServer.JSON
          .readTree(cli(port, dir.resolve("data"), "status", Long.toString(id), "--json"))
          .path("job")
          .path("status")
          .asText();
    } catch (Exception e) {
      return "unknown";
    }
  }
}
