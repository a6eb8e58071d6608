package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.api.Caller;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The CLI's client commands against a running server, as a person or a script uses them. */
@ExtendWith(PostgresExtension.class)
class CliTest {
  @TempDir Path dataDir;
  private TestServer server;
  private String out;
  private String err;

  @BeforeEach
  void start(TestDatabase db) {
    server = TestServer.start(db, dataDir);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  /** Runs a command with this server's port and data directory; keeps what it printed. */
  private int cli(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(
        List.of(
            "--port", Integer.toString(server.runtime.port()), "--data-dir", dataDir.toString()));
    return raw(all.toArray(String[]::new));
  }

  private int raw(String... args) {
    CliRun run = CliRun.of(args);
    out = run.out();
    err = run.err();
    return run.code();
  }

  private static JsonNode json(String text) throws Exception {
    return TestServer.JSON.readTree(text);
  }

  @Test
  void token_prints_a_token_the_server_accepts_for_that_user() {
    assertThat(raw("token", "ada", "--admin", "--data-dir", dataDir.toString())).isZero();
    assertThat(server.runtime.tokens().verify(out.strip())).contains(Caller.admin("ada"));
    assertThat(raw("token", "bob", "--data-dir", dataDir.toString())).isZero();
    assertThat(server.runtime.tokens().verify(out.strip())).contains(Caller.user("bob"));
  }

  @Test
  void submit_says_what_happened_and_a_second_submit_with_the_key_names_the_same_job()
      throws Exception {
    assertThat(
            cli(
                "submit",
                "demo",
                "{\"steps\": 2, \"stepMillis\": 10}",
                "--user",
                "bob",
                "--key",
                "b-1"))
        .isZero();
    assertThat(out).startsWith("submitted job ").contains("for bob in lane shared");

    assertThat(
            cli(
                "submit",
                "demo",
                "{\"steps\": 2, \"stepMillis\": 10}",
                "--user",
                "bob",
                "--key",
                "b-1",
                "--json"))
        .isZero();
    JsonNode job = json(out);
    assertThat(job.path("userId").asText()).isEqualTo("bob");
    assertThat(server.db.jdbc().query("select id from build_job")).hasSize(1);
    server.awaitStatus(job.path("id").asLong(), "succeeded");
  }

  @Test
  void submit_without_a_user_acts_as_the_login_user() throws Exception {
    assertThat(cli("submit", "demo", "{\"steps\": 1, \"stepMillis\": 1}", "--json")).isZero();
    JsonNode job = json(out);
    assertThat(job.path("userId").asText()).isEqualTo("tester");
    server.awaitStatus(job.path("id").asLong(), "succeeded");
  }

  @Test
  void status_shows_a_job_with_its_history_and_without_an_id_the_lanes_and_recent_jobs()
      throws Exception {
    long id = server.submitDemo("bob", 2, 10);
    server.awaitStatus(id, "succeeded");

    assertThat(cli("status", Long.toString(id))).isZero();
    assertThat(out)
        .contains("job " + id + " (demo) of bob: succeeded in lane shared")
        .contains("[####################] 2/2")
        .contains("history")
        .contains("enqueued")
        .contains("succeeded");

    assertThat(cli("status")).isZero();
    assertThat(out).contains("lane shared: 1 slot").contains("recent jobs").contains("#" + id);

    assertThat(cli("status", Long.toString(id), "--json")).isZero();
    assertThat(json(out).path("job").path("status").asText()).isEqualTo("succeeded");
    assertThat(json(out).path("events").size()).isGreaterThanOrEqualTo(4);
  }

  @Test
  void dedicated_moves_a_user_to_their_own_lane_and_back() {
    assertThat(cli("dedicated", "ada", "on")).isZero();
    assertThat(out).contains("ada now has a dedicated worker").contains("lane user:ada");
    long id = server.submitDemo("ada", 1, 1);
    assertThat(server.jobRow(id).string("lane")).isEqualTo("user:ada");

    assertThat(cli("dedicated", "ada", "off")).isZero();
    assertThat(out).contains("ada now shares workers").contains("lane shared");
    long back = server.submitDemo("ada", 1, 1);
    assertThat(server.jobRow(back).string("lane")).isEqualTo("shared");
    server.awaitStatus(id, "succeeded");
    server.awaitStatus(back, "succeeded");
  }

  @Test
  void submit_with_a_supersede_key_says_what_it_replaced_and_status_shows_who_replaced_it()
      throws Exception {
    assertThat(
            cli(
                "submit",
                "demo",
                "{\"steps\": 20, \"stepMillis\": 100}",
                "--user",
                "bob",
                "--supersede-key",
                "doc",
                "--json"))
        .isZero();
    long first = json(out).path("id").asLong();
    // The first job's worker is frozen while the next two are submitted: otherwise it could see the
    // cancel, end the first job and take the second (one shared slot) before the third submission,
    // which would then find the second running instead of queued.
    server.awaitStatus(first, "running");
    ProcessHandle worker =
        TestServer.process(server.workerOf(first).string("task_id")).orElseThrow();
    signal("STOP", worker);
    assertThat(
            cli(
                "submit",
                "demo",
                "{\"steps\": 1, \"stepMillis\": 1}",
                "--user",
                "bob",
                "--supersede-key",
                "doc",
                "--json"))
        .isZero();
    long second = json(out).path("id").asLong();
    assertThat(json(out).path("superseded").path("cancelRequested").get(0).asLong())
        .isEqualTo(first);

    assertThat(
            cli(
                "submit",
                "demo",
                "{\"steps\": 1, \"stepMillis\": 1}",
                "--user",
                "bob",
                "--supersede-key",
                "doc"))
        .isZero();
    signal("CONT", worker);
    assertThat(out).contains("superseded: 1 queued job cancelled (" + second + ")");
    long third =
        server.db.jdbc().query("select max(id) as id from build_job").get(0).longValue("id");

    assertThat(cli("status", Long.toString(second))).isZero();
    assertThat(out).contains("bob: cancelled").contains("superseded by job " + third);
    assertThat(cli("status")).isZero();
    assertThat(out).contains("superseded by job " + third);
    server.awaitStatus(third, "succeeded");
  }

  @Test
  void quota_sets_a_users_limit_on_queued_jobs_and_gives_back_the_default() {
    assertThat(cli("quota", "ada", "2")).isZero();
    assertThat(out).contains("ada may have 2 queued jobs at once");
    assertThat(
            server
                .db
                .jdbc()
                .query("select max_queued_jobs from build_user where user_id = 'ada'")
                .get(0)
                .intValue("max_queued_jobs"))
        .isEqualTo(2);

    assertThat(cli("quota", "ada", "default")).isZero();
    assertThat(out).contains("ada may have 1000 queued jobs at once (the server's default)");
    assertThat(cli("quota", "ada", "lots")).isEqualTo(Main.USAGE);
    assertThat(cli("quota", "ada", "0")).isEqualTo(Main.API_ERROR);
  }

  @Test
  void usage_prints_what_a_users_jobs_were_billed_once_their_worker_stopped() throws Exception {
    long id = server.submitDemo("bob", 2, 1);
    server.awaitStatus(id, "succeeded");
    Await.until(
        "bob's worker is billed",
        Duration.ofSeconds(60),
        () ->
            server.db.jdbc().query("select 1 from build_job_cost where job_id = " + id).size()
                == 1);

    assertThat(cli("usage", "bob")).isZero();
    assertThat(out).startsWith("bob: 1 jobs, ").contains(" worker seconds, ").contains(" vCPU-s");
    assertThat(cli("usage")).isZero();
    assertThat(out).contains("\nbob: 1 jobs, ");
    assertThat(cli("usage", "bob", "--from", "someday")).isEqualTo(Main.API_ERROR);
  }

  @Test
  void logs_prints_a_jobs_output_and_status_says_where_it_is() {
    long id = server.submitDemo("bob", 2, 1);
    server.awaitStatus(id, "succeeded");

    assertThat(cli("logs", Long.toString(id))).isZero();
    assertThat(out).isEqualTo("step 1 of 2 done\nstep 2 of 2 done\n");

    assertThat(cli("status", Long.toString(id))).isZero();
    assertThat(out).contains("log         34 bytes: buildqueue logs " + id);
  }

  @Test
  void logs_follow_prints_output_as_it_comes_until_the_job_ends() {
    long id = server.submitDemo("bob", 4, 700);
    server.awaitProgress(id, 1);

    assertThat(cli("logs", Long.toString(id), "--follow")).isZero();

    assertThat(server.jobRow(id).string("status")).isEqualTo("succeeded");
    assertThat(out)
        .isEqualTo("step 1 of 4 done\nstep 2 of 4 done\nstep 3 of 4 done\nstep 4 of 4 done\n");
  }

  @Test
  void cancel_cancels_a_queued_job() {
    long running = server.submitDemo("bob", 50, 100);
    long queued = server.submitDemo("cy", 1, 1);
    server.awaitProgress(running, 1);

    assertThat(cli("cancel", Long.toString(queued))).isZero();
    assertThat(out).contains("job " + queued + ": cancelled");
    assertThat(server.jobRow(queued).string("status")).isEqualTo("cancelled");

    assertThat(cli("cancel", Long.toString(running))).isZero();
    server.awaitStatus(running, "cancelled");
  }

  @Test
  void a_paused_lane_holds_its_jobs_priority_and_run_next_reorder_them_and_resume_runs_them()
      throws Exception {
    assertThat(cli("lane", "pause", "shared")).isZero();
    assertThat(out).contains("lane shared: 1 slot, 0 queued, PAUSED by cli");
    String quick = "{\"steps\": 1, \"stepMillis\": 1}";
    assertThat(cli("submit", "demo", quick, "--user", "bob", "--json")).isZero();
    long first = json(out).path("id").asLong();
    assertThat(cli("submit", "demo", quick, "--user", "bob", "--priority", "high", "--json"))
        .isZero();
    long second = json(out).path("id").asLong();
    assertThat(json(out).path("priority").asText()).isEqualTo("high");

    assertThat(cli("status")).isZero();
    assertThat(out).contains("PAUSED by cli").contains("of bob, priority high");
    assertThat(cli("priority", Long.toString(first), "low", "--user", "bob")).isZero();
    assertThat(out.strip()).isEqualTo("job " + first + ": priority low, 2 in its lane");
    assertThat(cli("run-next", Long.toString(first))).isZero();
    assertThat(out.strip()).isEqualTo("job " + first + ": next in lane shared");
    assertThat(cli("priority", Long.toString(first), "urgent")).isEqualTo(Main.USAGE);
    assertThat(cli("lane", "stop", "shared")).isEqualTo(Main.USAGE);
    assertThat(server.db.jdbc().query("select id from build_job where status = 'queued'"))
        .hasSize(2);

    assertThat(cli("lane", "resume", "shared")).isZero();
    assertThat(out).doesNotContain("PAUSED");
    server.awaitStatus(first, "succeeded");
    server.awaitStatus(second, "succeeded");
  }

  @Test
  void token_read_only_prints_a_read_only_admins_token_and_not_with_admin() {
    assertThat(raw("token", "sam", "--read-only", "--data-dir", dataDir.toString())).isZero();
    assertThat(server.runtime.tokens().verify(out.strip())).contains(Caller.readOnlyAdmin("sam"));
    assertThat(raw("token", "sam", "--read-only", "--admin", "--data-dir", dataDir.toString()))
        .isEqualTo(Main.USAGE);
    assertThat(err).contains("not both");
  }

  @Test
  void cancel_with_a_filter_cancels_every_matching_job_and_says_how_many() throws Exception {
    long running = server.submitDemo("bob", 50, 100);
    server.awaitProgress(running, 1);
    long queued1 = server.submitDemo("bob", 1, 1);
    long queued2 = server.submitDemo("bob", 1, 1);
    long other = server.submitDemo("cy", 1, 1);

    assertThat(cli("cancel", "--user", "bob", "--status", "queued")).isZero();

    assertThat(out).contains("2 queued jobs cancelled, 0 running jobs asked to stop");
    assertThat(server.jobRow(queued1).string("status")).isEqualTo("cancelled");
    assertThat(server.jobRow(queued2).string("status")).isEqualTo("cancelled");
    assertThat(server.jobRow(running).bool("cancel_requested")).isFalse();
    assertThat(server.jobRow(other).string("status")).isEqualTo("queued");

    assertThat(cli("cancel", "--user", "bob", "--json")).isZero();
    assertThat(json(out).path("cancelRequestedCount").asInt()).isEqualTo(1);
    server.awaitStatus(running, "cancelled");

    assertThat(cli("cancel", "--status", "done")).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 400").contains("done");
    assertThat(cli("cancel")).isEqualTo(Main.USAGE);
    assertThat(cli("cancel", "7", "--user", "bob")).isEqualTo(Main.USAGE);
  }

  @Test
  void retry_submits_a_failed_job_again_as_a_new_job_linked_to_it() {
    long failed =
        buildqueue.testing.Rows.job()
            .user("bob")
            .kind("demo")
            .payload("{\"steps\": 1, \"stepMillis\": 1}")
            .status(buildqueue.core.JobStatus.FAILED)
            .insert(server.db.jdbc());

    assertThat(cli("retry", Long.toString(failed))).isZero();

    long retry = server.jobRow(failed).longValue("retried_by");
    assertThat(out).startsWith("job " + failed + " retried as job " + retry + " (demo) for bob");
    server.awaitStatus(retry, "succeeded");
    assertThat(cli("retry", Long.toString(failed))).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 409").contains("already retried by job " + retry);
  }

  @Test
  void mistakes_get_a_message_and_an_exit_code_scripts_can_tell_apart() {
    assertThat(cli("submit", "nosuchkind")).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 400").contains("nosuchkind");

    assertThat(cli("submit", "demo", "{not json")).isEqualTo(Main.USAGE);
    assertThat(err).contains("not valid JSON");

    assertThat(cli("status", "abc")).isEqualTo(Main.USAGE);
    assertThat(cli("dedicated", "ada", "maybe")).isEqualTo(Main.USAGE);
    assertThat(cli("frobnicate")).isEqualTo(Main.USAGE);
    assertThat(cli("status", "--colour", "red")).isEqualTo(Main.USAGE);
    assertThat(err).contains("unknown option --colour");

    assertThat(cli("status", "999999")).isEqualTo(Main.API_ERROR);
    assertThat(err).contains("HTTP 404");

    assertThat(raw("status", "--port", "1", "--data-dir", dataDir.toString()))
        .isEqualTo(Main.UNREACHABLE);
    assertThat(err).contains("no buildqueue server answers");
    assertThat(server.db.jdbc().query("select id from build_job")).isEmpty();
  }

  @Test
  void help_lists_every_command() {
    assertThat(raw("--help")).isZero();
    assertThat(out)
        .contains(
            "serve", "token", "submit", "status", "dedicated", "cancel", "retry", "--read-only");
  }

  private static void signal(String name, ProcessHandle process) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).start();
    assertThat(kill.waitFor()).as("kill -%s %s", name, process.pid()).isZero();
  }
}
