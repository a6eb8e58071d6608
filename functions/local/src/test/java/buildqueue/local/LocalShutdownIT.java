package buildqueue.local;

import static buildqueue.local.PackagedJar.JAR;
import static buildqueue.local.PackagedJar.cli;
import static buildqueue.local.PackagedJar.freePort;
import static buildqueue.local.PackagedJar.java;
import static buildqueue.local.PackagedJar.read;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stopping the packaged server while a job's program runs, as a user does: Ctrl-C in the terminal
 * (SIGINT to the whole foreground process group) and SIGTERM to the server alone. Each time the
 * server stops its worker gracefully, starts nothing while it shuts down, leaves no program of the
 * job running once it is gone, and the next start runs the job again from its progress: it ends
 * once, after exactly two attempts.
 *
 * <p>The job is a shell program whose {@code $0} is a marker of this test, so that {@code
 * /proc/<pid>/cmdline} tells its processes from every other; it reports each of its steps as
 * progress and prints the attempt and the step it starts from. After step 3 it waits for a gate
 * file ({@code $1}) that the test creates before the restart: a status poll is a JVM of its own,
 * seconds on a busy machine, and must not find the job past its first attempt's end.
 */
class LocalShutdownIT {
  private static final int STEPS = 12;
  private static final String PROGRAM =
      """
      i=$(( ${BUILDQUEUE_PROGRESS:-0} + 1 ))
      echo "attempt $BUILDQUEUE_ATTEMPT starts at step $i"
      while [ "$i" -le %d ]; do
        sleep 1
        echo "{\\"progress\\": $i}" >> "$BUILDQUEUE_CONTROL"
        if [ "$i" -eq 3 ]; then
          while [ ! -e "$1" ]; do sleep 0.2; done
        fi
        i=$((i + 1))
      done
      """
          .formatted(STEPS);
  private static final Pattern STARTS = Pattern.compile("attempt (\\d+) starts at step (\\d+)");

  @TempDir Path dir;
  private final String marker = "bq-shutdown-it-" + UUID.randomUUID();
  private Path gate;
  private final List<Process> servers = new ArrayList<>();
  private int port;
  private Path kinds;

  @BeforeEach
  void catalogue() throws IOException {
    // Run as root, the server runs jobs as nobody, who must pass through the data directory's
    // parent to its job's directory (JUnit makes temporary directories 700).
    Files.setPosixFilePermissions(
        dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    port = freePort();
    gate = dir.resolve("gate");
    String json =
        TestServer.JSON.writeValueAsString(
            TestServer.JSON
                .createObjectNode()
                .set(
                    "kinds",
                    TestServer.JSON
                        .createObjectNode()
                        .set(
                            "long-build",
                            TestServer.JSON
                                .createObjectNode()
                                .put("timeout", "5m")
                                .set(
                                    "command",
                                    TestServer.JSON
                                        .createArrayNode()
                                        .add("sh")
                                        .add("-c")
                                        .add(PROGRAM)
                                        .add(marker)
                                        .add(gate.toString())))));
    kinds = Files.writeString(dir.resolve("kinds.json"), json);
  }

  @AfterEach
  void stopServers() throws InterruptedException {
    PackagedJar.stop(servers, dir.resolve("data"));
    programs().forEach(ProcessHandle::destroyForcibly);
  }

  @Test
  void ctrl_c_to_the_servers_process_group_stops_the_job_gracefully_and_the_next_start_resumes_it()
      throws Exception {
    Process server = serve();
    long pgid = processGroupOf(server.pid());
    assertThat(pgid)
        .as("the server leads a process group of its own, as in a terminal")
        .isEqualTo(server.pid());
    long id = submitAndAwaitProgress();

    long signalled = System.nanoTime();
    signal("-INT", "-" + pgid); // what a terminal's Ctrl-C does: the whole foreground group

    stoppedCleanly(server, signalled);
    restartedAndResumed(id);
  }

  @Test
  void sigterm_to_the_server_alone_stops_the_job_gracefully_and_the_next_start_resumes_it()
      throws Exception {
    Process server = serve();
    long id = submitAndAwaitProgress();

    long signalled = System.nanoTime();
    signal("-TERM", Long.toString(server.pid()));

    stoppedCleanly(server, signalled);
    restartedAndResumed(id);
  }

  private long submitAndAwaitProgress() throws Exception {
    long id =
        TestServer.JSON
            .readTree(
                cli(
                    port,
                    dir.resolve("data"),
                    "submit",
                    "long-build",
                    "{}",
                    "--user",
                    "bob",
                    "--json"))
            .path("id")
            .asLong();
    Await.until(
        "the job to report progress 3",
        Duration.ofSeconds(90),
        () -> job(id).path("progress").asInt() >= 3);
    assertThat(programs()).as("the job's program runs").isNotEmpty();
    return id;
  }

  /**
   * The server exits by itself; while it shuts down no program of the job starts but the one that
   * ran, and once it is gone no process of the job, no worker, and no PostgreSQL is left.
   */
  private void stoppedCleanly(Process server, long signalled) throws Exception {
    Set<Long> before = Set.copyOf(programs().stream().map(ProcessHandle::pid).toList());
    List<ProcessHandle> workers = workersOf(server);
    assertThat(workers).as("one worker runs the job").hasSize(1);
    Set<Long> seen = ConcurrentHashMap.newKeySet();
    Await.until(
        "the server to exit",
        Duration.ofSeconds(90),
        () -> {
          programs().forEach(p -> seen.add(p.pid()));
          return !server.isAlive();
        });
    System.out.printf(
        "server exited %d ms after the signal%n", (System.nanoTime() - signalled) / 1_000_000);
    assertThat(seen)
        .as("programs of the job seen while the server shut down: none new")
        .isSubsetOf(before);
    assertThat(programs()).as("processes of the job after the server is gone").isEmpty();
    assertThat(workers.get(0).isAlive()).as("the worker after the server is gone").isFalse();
    assertThat(LocalDatabase.LeftRunning.find(dir.resolve("data").resolve("postgres")))
        .as("the embedded PostgreSQL after the server is gone")
        .isEmpty();
  }

  /**
   * The next start runs the job again from its progress; it succeeds after exactly two attempts.
   */
  private void restartedAndResumed(long id) throws Exception {
    Files.createFile(gate);
    serve();
    Await.until(
        "the job to end",
        Duration.ofSeconds(120),
        () -> Set.of("succeeded", "failed", "cancelled").contains(job(id).path("status").asText()));
    JsonNode job = job(id);
    assertThat(job.path("status").asText()).isEqualTo("succeeded");
    assertThat(job.path("attempts").asInt())
        .as("the interrupted attempt and the one after the restart")
        .isEqualTo(2);
    List<int[]> starts = new ArrayList<>();
    Matcher m = STARTS.matcher(cli(port, dir.resolve("data"), "logs", Long.toString(id)));
    while (m.find()) {
      starts.add(new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))});
    }
    assertThat(starts)
        .as("the starts of the job's program in its log")
        .isNotEmpty()
        .allSatisfy(start -> assertThat(start[0]).as("attempt").isBetween(1, 2));
    int[] last = starts.get(starts.size() - 1);
    assertThat(last[0]).isEqualTo(2);
    assertThat(last[1])
        .as("the second attempt resumes from the progress of the first (3)")
        .isEqualTo(4);
  }

  private Process serve() throws IOException {
    Path log = dir.resolve("server-" + servers.size() + ".log");
    // Through setsid, as a shell starts a foreground job: the server leads its own process group.
    Process p =
        new ProcessBuilder(
                "setsid",
                java(),
                "-jar",
                JAR,
                "serve",
                "--port",
                Integer.toString(port),
                "--data-dir",
                dir.resolve("data").toString(),
                "--tick-interval",
                "500ms",
                "--kinds",
                kinds.toString())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .start();
    servers.add(p);
    Await.until(
        "the server to say it is running",
        Duration.ofSeconds(90),
        () -> read(log).contains("buildqueue is running") || !p.isAlive());
    assertThat(p.isAlive()).as("the server runs; its log: %s", read(log)).isTrue();
    return p;
  }

  private static List<ProcessHandle> workersOf(Process server) {
    return server
        .descendants()
        .filter(
            p ->
                WorkerProcesses.arguments(p)
                    .map(a -> String.join(" ", a).contains("buildqueue.launch="))
                    .orElse(false))
        .toList();
  }

  /**
   * Every process on this host whose command line carries this test's marker: the job's programs.
   */
  private List<ProcessHandle> programs() {
    try (Stream<ProcessHandle> all = ProcessHandle.allProcesses()) {
      return all.filter(p -> p.pid() != ProcessHandle.current().pid())
          .filter(
              p -> WorkerProcesses.arguments(p).map(a -> List.of(a).contains(marker)).orElse(false))
          .filter(ProcessHandle::isAlive)
          .toList();
    }
  }

  private static long processGroupOf(long pid) throws IOException {
    String stat =
        Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
    return Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[2]);
  }

  private static void signal(String signal, String target) throws Exception {
    Process kill =
        new ProcessBuilder("kill", signal, "--", target).redirectErrorStream(true).start();
    String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).as("kill %s %s: %s", signal, target, out).isZero();
  }

  private JsonNode job(long id) {
    try {
      return TestServer.JSON
          .readTree(cli(port, dir.resolve("data"), "status", Long.toString(id), "--json"))
          .path("job");
    } catch (Exception e) {
      return TestServer.JSON.createObjectNode();
    }
  }
}
