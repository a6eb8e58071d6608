package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.QueueConfig;
import buildqueue.db.Row;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The local runtime as a user meets it: real HTTP, real worker processes, real PostgreSQL. */
@ExtendWith(PostgresExtension.class)
class EndToEndTest {
  @TempDir Path dataDir;

  @Test
  void jobs_finish_in_fifo_order_per_lane_with_at_most_one_worker_per_slot(TestDatabase db) {
    // One worker per job, so that every slot sees workers come and go and the check below has
    // pairs to compare (with chaining, one worker per slot would run them all). The shared lane in
    // the reference's FIFO order: the default, turns by user, is FairShareTest's.
    LocalSettings oneJobPerWorker =
        TestServer.settings(db, dataDir)
            .withQueue(
                QueueConfig.defaults()
                    .withLivenessInterval(Duration.ofMillis(300))
                    .withChainWindow(Duration.ZERO)
                    .withSharedOrder(QueueConfig.SharedOrder.FIFO));
    try (TestServer server = TestServer.start(db, oneJobPerWorker)) {
      server.setDedicated("ada", true);
      List<Long> jobs = new ArrayList<>();
      for (String user : List.of("bob", "ada", "cy", "bob", "ada", "dee", "ada")) {
        jobs.add(server.submitDemo(user, 3, 30));
      }
      jobs.forEach(id -> server.awaitStatus(id, "succeeded"));
      server.awaitWorkersExited();

      Map<String, List<Row>> byLane =
          jobs.stream().map(server::jobRow).collect(Collectors.groupingBy(r -> r.string("lane")));
      assertThat(byLane.keySet()).containsExactlyInAnyOrder("shared", "user:ada");
      for (List<Row> lane : byLane.values()) {
        List<Long> byId = lane.stream().map(r -> r.longValue("id")).sorted().toList();
        List<Long> byStart =
            lane.stream()
                .sorted(Comparator.comparing((Row r) -> r.instant("started_at")))
                .map(r -> r.longValue("id"))
                .toList();
        assertThat(byStart)
            .as("start order in lane %s", lane.get(0).string("lane"))
            .isEqualTo(byId);
      }

      long skew = processStartSkewMillis();
      Map<String, List<Row>> bySlot =
          server.workerRows().stream().collect(Collectors.groupingBy(r -> r.string("slot")));
      assertThat(bySlot.get("shared#1")).as("workers in the shared slot, one per job").hasSize(4);
      for (List<Row> slot : bySlot.values()) {
        for (int i = 1; i < slot.size(); i++) {
          Row before = slot.get(i - 1);
          Row after = slot.get(i);
          assertThat(after.instant("launched_at"))
              .as(
                  "worker %s launched after worker %s exited",
                  after.longValue("id"), before.longValue("id"))
              .isAfterOrEqualTo(before.instant("exited_at"));
          // The process itself, not only its row: the next one started after the last one's exit
          // was seen (start times are recorded to the kernel's 10 ms tick, and read early by the
          // skew below).
          long nextStart = LocalTaskId.parse(after.string("task_id")).orElseThrow().startMillis();
          assertThat(nextStart + skew + 20)
              .as(
                  "process of worker %s started after worker %s exited",
                  after.longValue("id"), before.longValue("id"))
              .isGreaterThanOrEqualTo(before.instant("exited_at").toEpochMilli());
        }
      }
    }
  }

  @Test
  void a_worker_killed_with_sigkill_mid_job_has_its_job_requeued_at_the_head_and_finished(
      TestDatabase db) {
    try (TestServer server = TestServer.start(db, dataDir)) {
      long first = server.submitDemo("bob", 30, 100);
      long second = server.submitDemo("cy", 2, 10);
      server.awaitProgress(first, 3);
      Row worker = server.workerOf(first);
      ProcessHandle process = TestServer.process(worker.string("task_id")).orElseThrow();

      assertThat(process.destroyForcibly()).isTrue(); // SIGKILL
      server.awaitStatus(first, "succeeded");
      server.awaitStatus(second, "succeeded");

      Row job = server.jobRow(first);
      assertThat(job.longValue("attempts")).isEqualTo(2);
      assertThat(job.longValue("recoveries")).isZero();
      assertThat(job.longValue("progress")).isEqualTo(30);
      assertThat(server.eventTypes(first))
          .containsSubsequence("started", "interrupted", "dispatched", "started", "succeeded");
      // The evidence comes from the child's exit (signal 9) or, if the tick's liveness check got
      // there first, from the check that found the process gone: either is termination evidence.
      assertThat(server.events(first).stream().map(r -> r.string("message")))
          .anyMatch(
              m -> m.contains("interrupted") && (m.contains("signal 9") || m.contains("is gone")));
      // Back at the head of its lane: it finished before the job queued behind it started.
      assertThat(server.jobRow(second).instant("started_at"))
          .isAfterOrEqualTo(job.instant("finished_at"));
      assertThat(server.workerRows())
          .filteredOn(w -> w.longValue("id").equals(worker.longValue("id")))
          .singleElement()
          .satisfies(w -> assertThat(w.string("exit_reason")).containsAnyOf("signal 9", "is gone"));
    }
  }

  @Test
  void restarting_the_server_while_a_worker_runs_loses_nothing(TestDatabase db) {
    TestServer first = TestServer.start(db, dataDir);
    long job = first.submitDemo("bob", 25, 100);
    first.awaitProgress(job, 2);
    String taskId = first.workerOf(job).string("task_id");
    first.runtime.shutdown();
    assertThat(TestServer.process(taskId)).as("the worker outlives its server").isPresent();

    try (TestServer second = TestServer.start(db, dataDir)) {
      long next = second.submitDemo("cy", 2, 10);
      second.awaitStatus(job, "succeeded");
      second.awaitStatus(next, "succeeded");
      second.awaitWorkersExited();

      Row finished = second.jobRow(job);
      assertThat(finished.longValue("attempts")).as("never interrupted").isEqualTo(1);
      assertThat(finished.longValue("progress")).isEqualTo(25);
      assertThat(second.eventTypes(job)).doesNotContain("interrupted");
      assertThat(second.workerRows())
          .filteredOn(w -> taskId.equals(w.string("task_id")))
          .singleElement()
          .satisfies(w -> assertThat(w.string("status")).isEqualTo("exited"));
    }
  }

  @Test
  void an_idempotent_submit_returns_the_same_job(TestDatabase db) {
    try (TestServer server = TestServer.start(db, dataDir)) {
      ApiClient bob = server.client("bob", false);
      ObjectNode body =
          TestServer.JSON.createObjectNode().put("kind", "demo").put("idempotencyKey", "build-77");
      body.putObject("payload").put("steps", 2).put("stepMillis", 10);

      ApiClient.Reply created = bob.post("jobs", body);
      ApiClient.Reply again = bob.post("jobs", body);
      ApiClient.Reply otherUser = server.client("cy", false).post("jobs", body);

      assertThat(created.status()).isEqualTo(201);
      assertThat(again.status()).isEqualTo(200);
      assertThat(again.json().path("id").asLong()).isEqualTo(created.json().path("id").asLong());
      assertThat(otherUser.status()).as("keys are per user").isEqualTo(201);
      assertThat(db.jdbc().query("select id from build_job where user_id = 'bob'")).hasSize(1);
      server.awaitStatus(created.json().path("id").asLong(), "succeeded");
      server.awaitStatus(otherUser.json().path("id").asLong(), "succeeded");
    }
  }

  @Test
  void a_missing_expired_or_foreign_token_gets_the_apis_401_problem(TestDatabase db) {
    try (TestServer server = TestServer.start(db, dataDir)) {
      String foreign =
          LocalTokens.withSecret(new byte[32], java.time.Clock.systemUTC())
              .mint("bob", true, Duration.ofMinutes(5));
      String expired = server.runtime.tokens().mint("bob", false, Duration.ofSeconds(-60));
      for (String token : List.of("", "not-a-jwt", foreign, expired)) {
        ApiClient.Reply reply = new ApiClient(server.runtime.baseUri(), token).get("jobs");
        assertThat(reply.status()).as("token %s", token).isEqualTo(401);
        JsonNode problem = reply.json();
        assertThat(problem.path("status").asInt()).isEqualTo(401);
        assertThat(problem.path("detail").asText()).isNotBlank();
      }
      assertThat(new ApiClient(server.runtime.baseUri(), "x").get("health").status())
          .isEqualTo(200);
      assertThat(server.client("bob", false).get("jobs").status()).isEqualTo(200);
    }
  }

  @Test
  void the_demo_mix_ends_as_designed(TestDatabase db) throws InterruptedException {
    // As serve --demo runs: its script in the data directory, run as nobody when the tests run as
    // root.
    LocalSettings settings =
        TestServer.settings(db, dataDir).withJobUser(LocalSettings.DEFAULT_JOB_USER);
    settings =
        settings.withKindsFile(
            DemoKinds.prepare(dataDir, java.util.Optional.empty(), settings.queue()));
    try (TestServer server = TestServer.start(db, settings)) {
      Demo demo =
          new Demo(
              server.runtime.api(),
              new java.io.PrintStream(java.io.OutputStream.nullOutputStream()),
              false);
      Map<Long, String> jobs = demo.submit(Demo.mix(20), "test");
      List<JsonNode> done = demo.watch(jobs, Duration.ofMillis(100));

      Map<String, String> outcome = new java.util.LinkedHashMap<>();
      done.forEach(j -> outcome.put(jobs.get(j.path("id").asLong()), j.path("status").asText()));
      assertThat(outcome)
          .containsEntry("crashes at step 4 once, resumes from 3", "succeeded")
          .containsEntry("crashes before any progress, every time", "failed")
          .containsEntry("fails on purpose at step 5", "failed")
          .containsEntry("dedicated worker", "succeeded")
          .containsEntry("shared lane", "succeeded")
          .containsEntry("a real build: a shell script's log (bq logs ID)", "succeeded")
          .containsEntry("a script that fails with its own message", "failed");
      JsonNode script =
          done.stream()
              .filter(j -> j.path("userId").asText().equals("gus"))
              .findFirst()
              .orElseThrow();
      assertThat(script.path("error").asText())
          .isEqualTo("page 3 has no title; add one and submit again");
      JsonNode build =
          done.stream()
              .filter(j -> j.path("userId").asText().equals("fay"))
              .findFirst()
              .orElseThrow();
      assertThat(build.path("progress").asInt()).isEqualTo(6);
      assertThat(
              server.client("fay", false).get("jobs/" + build.path("id").asLong() + "/log").text())
          .contains("rendering page 6 of 6")
          .contains("done: 6 pages");
      JsonNode crashLoop =
          done.stream()
              .filter(j -> j.path("userId").asText().equals("dee"))
              .findFirst()
              .orElseThrow();
      assertThat(crashLoop.path("error").asText())
          .isEqualTo(
              "Build worker repeatedly exited without progress. Check worker logs and retry.");
      assertThat(crashLoop.path("attempts").asInt()).isEqualTo(4);
      JsonNode resumed =
          done.stream()
              .filter(j -> j.path("userId").asText().equals("cy"))
              .findFirst()
              .orElseThrow();
      assertThat(resumed.path("attempts").asInt()).isEqualTo(2);
      assertThat(done.stream().filter(j -> j.path("userId").asText().equals("ada")))
          .allSatisfy(j -> assertThat(j.path("lane").asText()).isEqualTo("user:ada"));
      server.awaitWorkersExited();
    }
  }

  /**
   * How early the JDK's process start times read: it adds a process's start ticks to the boot time,
   * which {@code /proc/stat} gives in whole seconds ({@code btime}), so every start time is early
   * by the boot time's fraction of a second. The same for every process, so it is measured once,
   * from the precise uptime.
   */
  private static long processStartSkewMillis() {
    try {
      long now = System.currentTimeMillis();
      double uptimeSeconds =
          Double.parseDouble(Files.readString(Path.of("/proc/uptime")).split(" ")[0]);
      long btime =
          Files.readAllLines(Path.of("/proc/stat")).stream()
              .filter(l -> l.startsWith("btime "))
              .mapToLong(l -> Long.parseLong(l.substring("btime ".length()).trim()))
              .findFirst()
              .orElseThrow();
      return Math.max(0, Math.round(now - uptimeSeconds * 1000) - btime * 1000);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
