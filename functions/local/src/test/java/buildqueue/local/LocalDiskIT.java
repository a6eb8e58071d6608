package buildqueue.local;

import static buildqueue.local.PackagedJar.JAR;
import static buildqueue.local.PackagedJar.cli;
import static buildqueue.local.PackagedJar.freePort;
import static buildqueue.local.PackagedJar.java;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Disk is bounded, through the packaged jar with real programs: a job's output is kept once and
 * capped, with one line saying what was dropped; the retention removes a finished job's files; and
 * {@code try} refuses a bad payload before it starts a database.
 */
class LocalDiskIT {
  private static final long CAP = 1024 * 1024;

  /** 200 MB of output in lines of 1,000 bytes, as fast as the machine can print it. */
  private static final String KINDS =
      """
      {"kinds": {
        "flood": {"command": ["sh", "-c", "yes \\"$(head -c 999 /dev/zero | tr '\\\\0' x)\\" | head -c 200000000; echo flooded >&2"],
                  "timeout": "10m", "payloadSchema": {"type": "object"}},
        "chatty": {"command": ["sh", "-c", "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.5; done"],
                   "timeout": "5m", "payloadSchema": {"type": "object", "required": ["sections"],
                     "properties": {"sections": {"type": "integer", "minimum": 1}}}}}}
      """;

  @TempDir Path dir;
  private final List<Process> servers = new ArrayList<>();

  @AfterEach
  void stopServers() throws InterruptedException {
    PackagedJar.stop(servers, dir.resolve("data"));
  }

  @Test
  void a_job_printing_200_mb_keeps_its_cap_on_disk_says_what_it_dropped_and_the_server_stays_flat()
      throws Exception {
    int port = freePort();
    Process server = serve(port, "--max-log-bytes", "1m");
    long rssBefore = rss(server.pid());

    long id = submit(port, "flood");
    long workerPeak = 0;
    String status;
    while (!"succeeded".equals(status = status(port, id))) {
      // "dispatched" lasts while the worker process starts: seconds when the machine is busy.
      assertThat(status)
          .as("job %s: %s", id, cli(port, dir.resolve("data"), "status", Long.toString(id)))
          .isIn("queued", "dispatched", "running", "unknown");
      for (ProcessHandle p : server.descendants().toList()) {
        workerPeak = Math.max(workerPeak, peak(p.pid()));
      }
      Thread.sleep(200); // sampling the worker's memory, not waiting for an event
    }
    long rssAfter = rss(server.pid());

    long jobs = bytesUnder(dir.resolve("data/jobs"));
    long workers = bytesUnder(dir.resolve("data/workers"));
    long work = bytesUnder(dir.resolve("data/work"));
    System.out.printf(
        "200 MB job: jobs/ %d B, workers/ %d B, work/ %d B; server RSS %d -> %d KiB; worker peak RSS"
            + " %d KiB%n",
        jobs, workers, work, rssBefore / 1024, rssAfter / 1024, workerPeak / 1024);
    assertThat(jobs + workers + work)
        .as("the output is kept once, capped: jobs/ %d, workers/ %d, work/ %d", jobs, workers, work)
        .isLessThan(CAP + 64 * 1024);
    assertThat(jobs).as("the kept part").isGreaterThan(CAP - 2000);
    String logs = cli(port, dir.resolve("data"), "logs", Long.toString(id));
    assertThat(logs)
        .containsPattern(
            "\\[buildqueue] output truncated after [0-9]+ bytes \\(the cap is 1048576\\); "
                + "[0-9]+ bytes dropped");
    long dropped = Long.parseLong(logs.replaceAll("(?s).*; ([0-9]+) bytes dropped.*", "$1"));
    assertThat(dropped).as("what was dropped").isGreaterThan(198_000_000L);
    List<String> file = Files.readAllLines(dir.resolve("data/jobs/job-" + id + ".log"));
    assertThat(file.get(file.size() - 1)).startsWith("[buildqueue] output truncated after");
    assertThat(rssAfter - rssBefore)
        .as("the server's resident memory grows by less than 64 MiB")
        .isLessThan(64L * 1024 * 1024);
  }

  @Test
  void the_retention_removes_a_finished_jobs_log_and_its_workers_files() throws Exception {
    int port = freePort();
    // Long enough for a status poll (a CLI in a JVM of its own, seconds on a busy machine) to see
    // the job succeeded before the retention deletes it: with 2 s the poll could miss it.
    serve(port, "--retention", "10s");
    long id = submit(port, "chatty", "{\"sections\": 1}");
    Path log = dir.resolve("data/jobs/job-" + id + ".log");
    Await.until("the job's log to be written", Duration.ofSeconds(60), () -> Files.exists(log));
    Await.until(
        "the job to finish", Duration.ofSeconds(60), () -> "succeeded".equals(status(port, id)));

    Await.until(
        "the job to be deleted by the retention",
        Duration.ofSeconds(60),
        () -> "gone".equals(status(port, id)));
    Await.until(
        "its log and its worker's files to be removed",
        Duration.ofSeconds(30),
        () ->
            !Files.exists(log)
                && files(dir.resolve("data/workers")).isEmpty()
                && files(dir.resolve("data/work")).isEmpty());
  }

  @Test
  void try_refuses_a_bad_payload_at_once_and_starts_no_database() throws Exception {
    Path tmp = Files.createDirectories(dir.resolve("tmp"));
    Path kinds = Files.writeString(dir.resolve("kinds.json"), KINDS);
    long start = System.nanoTime();
    Process p =
        new ProcessBuilder(
                java(),
                "-Djava.io.tmpdir=" + tmp,
                "-jar",
                JAR,
                "try",
                "chatty",
                "{\"sections\": \"five\"}",
                "--kinds",
                kinds.toString())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    long millis = (System.nanoTime() - start) / 1_000_000;
    System.out.printf("try with a refused payload answered in %d ms%n", millis);

    assertThat(p.exitValue()).as("stderr: %s", err).isEqualTo(Main.USAGE);
    assertThat(err).contains("$.sections");
    assertThat(tmp.resolve("embedded-pg"))
        .as("no PostgreSQL was unpacked, let alone started")
        .doesNotExist();
    assertThat(files(tmp)).as("nothing left in the temporary directory").isEmpty();
  }

  private Process serve(int port, String... more) throws IOException {
    Path kinds = Files.writeString(dir.resolve("kinds.json"), KINDS);
    List<String> args =
        new ArrayList<>(List.of("--tick-interval", "200ms", "--kinds", kinds.toString()));
    args.addAll(List.of(more));
    return PackagedJar.serve(dir, servers, port, args.toArray(String[]::new));
  }

  private long submit(int port, String kind) throws Exception {
    return submit(port, kind, "{}");
  }

  private long submit(int port, String kind, String payload) throws Exception {
    return TestServer.JSON
        .readTree(
            cli(port, dir.resolve("data"), "submit", kind, payload, "--user", "bob", "--json"))
        .path("id")
        .asLong();
  }

  /** The job's status, or "gone" once the API no longer knows it. */
  private String status(int port, long id) {
    try {
      JsonNode job =
          TestServer.JSON
              .readTree(cli(port, dir.resolve("data"), "status", Long.toString(id), "--json"))
              .path("job");
      return job.path("status").asText();
    } catch (AssertionError e) {
      return e.getMessage().contains("404") ? "gone" : "unknown";
    } catch (Exception e) {
      return "unknown";
    }
  }

  /** Resident memory of a process, in bytes ({@code VmRSS}). */
  private static long rss(long pid) {
    return statusBytes(pid, "VmRSS:");
  }

  /** Peak resident memory of a process so far, in bytes ({@code VmHWM}); 0 if it is gone. */
  private static long peak(long pid) {
    return statusBytes(pid, "VmHWM:");
  }

  private static long statusBytes(long pid, String field) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith(field)) {
          return Long.parseLong(line.substring(field.length()).replace("kB", "").strip()) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // gone
    }
    return 0;
  }

  private static long bytesUnder(Path root) throws IOException {
    if (!Files.exists(root)) {
      return 0;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      return paths
          .filter(Files::isRegularFile)
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  return 0;
                }
              })
          .sum();
    }
  }

  private static List<Path> files(Path root) {
    if (!Files.exists(root)) {
      return List.of();
    }
    try (Stream<Path> paths = Files.walk(root)) {
      return paths.filter(p -> !p.equals(root)).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
