package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.Capacity;
import buildqueue.platform.SpotReclaims;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Procs;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Fargate Spot reclaim, simulated on real worker processes ({@code bq reclaim}, {@link
 * LocalRuntime#reclaim}): a kind on {@code spot} runs on a worker recorded as {@code spot}; a
 * reclaim sends it SIGTERM (which reaches the job's program), then SIGKILL after the server's
 * reclaim grace, and its exit is evidence with the stop code {@code SpotInterruption}. A reclaim
 * never counts as a recovery; after 3 the job runs on on-demand.
 */
@ExtendWith(PostgresExtension.class)
class SpotReclaimEndToEndTest {
  /** Waits, without progress, for the test to let it finish. */
  private static final String WAITS =
      """
      echo "attempt $BUILDQUEUE_ATTEMPT from ${BUILDQUEUE_PROGRESS:-0}"
      while [ ! -f "$GO" ]; do sleep 0.05; done
      echo "done"
      """;

  /** Saves progress 42 on SIGTERM and resumes from it: an attempt that starts at 42 succeeds. */
  private static final String TRAPS =
      """
      echo "attempt $BUILDQUEUE_ATTEMPT from ${BUILDQUEUE_PROGRESS:-0}"
      if [ "${BUILDQUEUE_PROGRESS:-0}" = 42 ]; then echo "resumed from 42"; exit 0; fi
      trap 'echo "SIGTERM: saving progress 42"; echo "{\\"progress\\": 42}" >> "$BUILDQUEUE_CONTROL"; exit 143' TERM
      echo '{"progress": 10}' >> "$BUILDQUEUE_CONTROL"
      while :; do sleep 0.05; done
      """;

  /** Deaf to SIGTERM on its first attempt (only SIGKILL ends it); the next one succeeds. */
  private static final String DEAF =
      """
      echo "attempt $BUILDQUEUE_ATTEMPT from ${BUILDQUEUE_PROGRESS:-0}"
      if [ "$BUILDQUEUE_ATTEMPT" -gt 1 ]; then echo "done"; exit 0; fi
      echo "deaf (pid $$)"
      trap '' TERM
      echo '{"progress": 7}' >> "$BUILDQUEUE_CONTROL"
      while :; do sleep 0.05; done
      """;

  @TempDir Path dataDir;
  @TempDir Path programs;
  private TestServer server;
  private String out;
  private String err;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private void start(TestDatabase db, Duration reclaimGrace) throws Exception {
    start(db, TestServer.settings(db, dataDir).withReclaimGrace(reclaimGrace));
  }

  private void start(TestDatabase db, LocalSettings settings) throws Exception {
    ObjectNode kinds = TestServer.JSON.createObjectNode().putObject("kinds");
    kind(kinds, "waits", WAITS, "2s", "spot");
    kind(kinds, "traps", TRAPS, "10s", "spot-then-on-demand");
    kind(kinds, "deaf", DEAF, "30s", "spot");
    kind(kinds, "plain", WAITS, "2s", null);
    Path file = programs.resolve("kinds.json");
    Files.writeString(
        file, TestServer.JSON.writeValueAsString(Map.of("kinds", kinds)), StandardCharsets.UTF_8);
    server = TestServer.start(db, settings.withKindsFile(file));
  }

  private void kind(ObjectNode kinds, String name, String script, String grace, String capacity) {
    ObjectNode k = kinds.putObject(name);
    k.putArray("command").add("sh").add("-c").add(script);
    k.put("timeout", "2m");
    k.put("cancelGracePeriod", grace);
    k.putObject("env").put("GO", programs.resolve("go").toString());
    if (capacity != null) {
      k.put("capacity", capacity);
    }
  }

  private long submit(String kind) {
    ObjectNode body = TestServer.JSON.createObjectNode().put("kind", kind);
    body.putObject("payload");
    ApiClient.Reply reply = server.client("ada", false).post("jobs", body);
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }

  private String log(long job) {
    return server.client("ada", false).get("jobs/" + job + "/log").text();
  }

  /** The job's worker, once the job's attempt {@code attempt} runs its program. */
  private Row runningAttempt(long job, int attempt) {
    Await.until(
        "attempt " + attempt + " of job " + job + " to run its program",
        TestServer.JOB_TIMEOUT,
        () ->
            server.jobRow(job).string("status").equals("running")
                && server.jobRow(job).intValue("attempts") == attempt
                && log(job).contains("attempt " + attempt + " from"));
    return server.workerOf(job);
  }

  private Row worker(long id) {
    return server
        .db
        .jdbc()
        .queryOptional("select * from build_worker where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  private void awaitExited(long workerId) {
    Await.until(
        "worker " + workerId + "'s exit to be recorded",
        TestServer.JOB_TIMEOUT,
        () -> worker(workerId).string("status").equals("exited"));
  }

  /** {@code bq reclaim <worker-id>} against this server; keeps what it printed. */
  private int bq(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(
        List.of(
            "--port", Integer.toString(server.runtime.port()), "--data-dir", dataDir.toString()));
    CliRun run = CliRun.of(all.toArray(String[]::new));
    out = run.out();
    err = run.err();
    return run.code();
  }

  @Test
  void a_spot_job_reclaimed_three_times_without_progress_succeeds_on_its_fourth_attempt_on_demand(
      TestDatabase db) throws Exception {
    start(db, Duration.ofSeconds(10));
    long job = submit("waits");

    List<Long> reclaimed = new ArrayList<>();
    for (int attempt = 1; attempt <= 3; attempt++) {
      Row w = runningAttempt(job, attempt);
      assertThat(w.string("capacity")).as("attempt %d's worker", attempt).isEqualTo("spot");

      assertThat(bq("reclaim", Long.toString(w.longValue("id")))).as(err).isZero();

      assertThat(out).contains("worker " + w.longValue("id")).contains("SIGTERM sent");
      awaitExited(w.longValue("id"));
      reclaimed.add(w.longValue("id"));
    }
    Row fourth = runningAttempt(job, 4);
    assertThat(fourth.string("capacity"))
        .as("after 3 reclaims its worker runs on on-demand")
        .isEqualTo("on-demand");
    assertThat(bq("reclaim", Long.toString(fourth.longValue("id"))))
        .as("an on-demand worker is not reclaimed")
        .isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 409").contains("runs on on-demand");
    Files.writeString(programs.resolve("go"), "");

    server.awaitStatus(job, "succeeded");
    Row done = server.jobRow(job);
    assertThat(done.intValue("attempts")).isEqualTo(4);
    assertThat(done.intValue("reclaims")).isEqualTo(3);
    assertThat(done.intValue("recoveries"))
        .as("three interruptions without progress, none of them counted")
        .isZero();
    for (long id : reclaimed) {
      assertThat(worker(id).string("exit_reason"))
          .as("worker %d's exit evidence", id)
          .startsWith("SpotInterruption: Your Spot Task was interrupted.; worker process");
    }
    assertThat(worker(fourth.longValue("id")).string("capacity")).isEqualTo("on-demand");
    assertThat(server.events(job).stream().filter(e -> e.string("type").equals("interrupted")))
        .hasSize(3);
  }

  @Test
  void a_program_that_writes_progress_on_sigterm_resumes_from_it_after_a_reclaim(TestDatabase db)
      throws Exception {
    start(db, Duration.ofSeconds(10));
    long job = submit("traps");
    Row first = runningAttempt(job, 1);
    server.awaitProgress(job, 10);
    assertThat(first.string("capacity"))
        .as("spot-then-on-demand: Spot, which never lacks capacity here")
        .isEqualTo("spot");

    SpotReclaims.Outcome outcome = server.runtime.reclaim(first.longValue("id")); // the test hook

    assertThat(outcome).isInstanceOf(SpotReclaims.Outcome.Reclaimed.class);
    server.awaitStatus(job, "succeeded");
    Row done = server.jobRow(job);
    assertThat(done.intValue("attempts")).isEqualTo(2);
    assertThat(done.intValue("reclaims")).isEqualTo(1);
    assertThat(done.intValue("recoveries")).isZero();
    assertThat(log(job))
        .contains("SIGTERM: saving progress 42")
        .contains("attempt 2 from 42")
        .contains("resumed from 42");
    assertThat(worker(first.longValue("id")).string("exit_reason")).startsWith("SpotInterruption");
  }

  @Test
  void a_worker_that_outlives_the_reclaim_grace_is_killed_and_its_exit_evidence_counts_a_reclaim(
      TestDatabase db) throws Exception {
    // Shorter than the worker's own stop timeout (10 s): it is killed before it can record the
    // interruption, so only the exit's evidence can say it was a reclaim.
    start(db, Duration.ofSeconds(1));
    long job = submit("deaf");
    Row first = runningAttempt(job, 1);
    server.awaitProgress(job, 7);
    long program = programPid(job);

    assertThat(bq("reclaim", Long.toString(first.longValue("id")))).as(err).isZero();

    awaitExited(first.longValue("id"));
    // The exit's delivery or the tick's liveness check, whichever comes first: a reclaim's either
    // way.
    assertThat(worker(first.longValue("id")).string("exit_reason"))
        .startsWith("SpotInterruption: Your Spot Task was interrupted.; worker process");
    assertThat(
            server.events(job).stream()
                .filter(e -> e.string("type").equals("interrupted"))
                .map(e -> e.string("message")))
        .as("recovered by the exit's evidence, not by the worker, which was killed first")
        .singleElement()
        .asString()
        .contains("SpotInterruption");
    assertThat(Procs.alive(program))
        .as("the deaf program, killed with its worker's leftovers before its exit was recorded")
        .isFalse();
    server.awaitStatus(job, "succeeded");
    Row done = server.jobRow(job);
    assertThat(done.intValue("reclaims")).isEqualTo(1);
    assertThat(done.intValue("recoveries")).isZero();
    assertThat(done.intValue("attempts")).isEqualTo(2);
    assertThat(log(job)).contains("attempt 2 from 7");
  }

  @Test
  void a_kind_that_names_no_capacity_runs_on_the_servers_default_and_can_be_reclaimed(
      TestDatabase db) throws Exception {
    start(
        db,
        TestServer.settings(db, dataDir)
            .withDefaultCapacity(Capacity.SPOT_THEN_ON_DEMAND)
            .withReclaimGrace(Duration.ofSeconds(10)));
    long job = submit("plain");
    Row w = runningAttempt(job, 1);
    assertThat(w.string("capacity")).isEqualTo("spot");

    assertThat(bq("reclaim", Long.toString(w.longValue("id")), "--json")).as(err).isZero();

    assertThat(TestServer.JSON.readTree(out).path("graceSeconds").asDouble()).isEqualTo(10.0);
    runningAttempt(job, 2);
    Files.writeString(programs.resolve("go"), "");
    server.awaitStatus(job, "succeeded");
    assertThat(server.jobRow(job).intValue("reclaims")).isEqualTo(1);
  }

  @Test
  void reclaim_refuses_what_is_no_running_spot_worker_and_sends_nothing(TestDatabase db)
      throws Exception {
    start(db, Duration.ofSeconds(10));
    long job = submit("plain");
    Row w = runningAttempt(job, 1);
    assertThat(w.string("capacity")).isEqualTo("on-demand");

    assertThat(bq("reclaim", Long.toString(w.longValue("id")))).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 409").contains("only Spot workers are reclaimed");
    assertThat(bq("reclaim", "999999")).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 404").contains("no worker 999999");
    assertThat(bq("reclaim", "twelve")).isEqualTo(Main.USAGE);
    ApiClient.Reply asUser =
        server
            .client("ada", false)
            .post("workers/" + w.longValue("id") + "/reclaim", TestServer.JSON.createObjectNode());
    assertThat(asUser.status()).isEqualTo(403);

    assertThat(TestServer.process(w.string("task_id"))).as("the worker still runs").isPresent();
    Files.writeString(programs.resolve("go"), "");
    server.awaitStatus(job, "succeeded");
    assertThat(server.jobRow(job).intValue("attempts")).isEqualTo(1);
    assertThat(bq("reclaim", Long.toString(w.longValue("id")))).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 409");
  }

  @Test
  void serve_refuses_an_unknown_default_capacity_or_a_grace_past_two_minutes_before_it_starts() {
    CliRun capacity =
        CliRun.of("serve", "--default-capacity", "cheap", "--data-dir", dataDir.toString());
    CliRun grace = CliRun.of("serve", "--reclaim-grace", "3m", "--data-dir", dataDir.toString());

    assertThat(capacity.code()).isEqualTo(Main.USAGE);
    assertThat(capacity.err())
        .contains(
            "--default-capacity must be one of \"on-demand\", \"spot\","
                + " \"spot-then-on-demand\", not \"cheap\"");
    assertThat(grace.code()).isEqualTo(Main.USAGE);
    assertThat(grace.err()).contains("--reclaim-grace must be from 0s to 2m");
    assertThat(dataDir).as("nothing started").isEmptyDirectory();
  }

  /** The pid of the job's program, as it printed it. */
  private long programPid(long job) {
    Await.until("the program's pid", TestServer.JOB_TIMEOUT, () -> PID.matcher(log(job)).find());
    java.util.regex.Matcher m = PID.matcher(log(job));
    assertThat(m.find()).isTrue();
    return Long.parseLong(m.group(1));
  }

  private static final java.util.regex.Pattern PID =
      java.util.regex.Pattern.compile("deaf \\(pid (\\d+)\\)");
}
