package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Real builds through the whole local runtime: the operator's kind catalogue, the HTTP API, worker
 * processes, and the job programs they start — a shell script and a Python script that do the same
 * things — reporting progress, writing logs, submitting a follow-up, failing with their own
 * message, asking to be retried, timing out, being cancelled without ever reporting progress, and
 * resuming in a new worker after their worker was SIGKILLed.
 */
@ExtendWith(PostgresExtension.class)
class ProgramJobsEndToEndTest {
  private static final Pattern PID = Pattern.compile("pid (\\d+)");

  /**
   * The shell build: payload keys are read with sed, the way a script without jq would. Steps are
   * numbered from where the last attempt got to.
   */
  private static final String SHELL =
      """
      #!/bin/sh
      set -eu
      get() { sed -n "s/.*\\"$1\\": *\\"\\{0,1\\}\\([^,\\"}]*\\).*/\\1/p" "$BUILDQUEUE_PAYLOAD"; }
      steps=$(get steps); ms=$(get stepMillis); fail=$(get fail); retry=$(get retryOnce); hang=$(get hang)
      follow=$(get followUp); trace=$(get traceTo)
      echo "attempt $BUILDQUEUE_ATTEMPT of job $BUILDQUEUE_JOB_ID (pid $$)"
      if [ -n "$trace" ]; then echo "${TRACEPARENT:-none}" > "$trace-$BUILDQUEUE_ATTEMPT"; fi
      if [ "${BUILDQUEUE_PROGRESS:-0}" -gt 0 ]; then echo "resuming after step $BUILDQUEUE_PROGRESS"; fi
      if [ -n "$hang" ]; then echo "hanging without progress"; sleep 1000 & wait; fi
      if [ -n "$retry" ] && [ "$BUILDQUEUE_ATTEMPT" -eq 1 ]; then echo "flaky: asking for a retry" >&2; exit 75; fi
      i=$(( ${BUILDQUEUE_PROGRESS:-0} + 1 ))
      while [ "$i" -le "${steps:-0}" ]; do
        echo "step $i of $steps"
        if [ -n "$ms" ]; then sleep "$(awk "BEGIN {print $ms / 1000}")"; fi
        echo "{\\"progress\\": $i}" >> "$BUILDQUEUE_CONTROL"
        i=$((i + 1))
      done
      if [ -n "$follow" ]; then
        echo "{\\"followUp\\": {\\"kind\\": \\"$BUILDQUEUE_JOB_KIND\\", \\"payload\\": {\\"steps\\": 1}}}" >> "$BUILDQUEUE_CONTROL"
      fi
      if [ -n "$fail" ]; then echo "{\\"error\\": \\"$fail\\"}" >> "$BUILDQUEUE_CONTROL"; exit 3; fi
      echo "done"
      """;

  private static final String PYTHON =
      """
      import json, os, sys, time
      payload = json.load(open(os.environ["BUILDQUEUE_PAYLOAD"]))
      control = open(os.environ["BUILDQUEUE_CONTROL"], "a", buffering=1)
      attempt = int(os.environ["BUILDQUEUE_ATTEMPT"])
      progress = int(os.environ.get("BUILDQUEUE_PROGRESS", "0"))
      print(f"attempt {attempt} of job {os.environ['BUILDQUEUE_JOB_ID']} (pid {os.getpid()})", flush=True)
      if progress > 0:
          print(f"resuming after step {progress}", flush=True)
      if payload.get("hang"):
          print("hanging without progress", flush=True)
          time.sleep(1000)
      if payload.get("retryOnce") and attempt == 1:
          print("flaky: asking for a retry", file=sys.stderr, flush=True)
          sys.exit(75)
      steps = payload.get("steps", 0)
      for i in range(progress + 1, steps + 1):
          print(f"step {i} of {steps}", flush=True)
          time.sleep(payload.get("stepMillis", 0) / 1000)
          control.write(json.dumps({"progress": i}) + "\\n")
      if payload.get("followUp"):
          control.write(json.dumps({"followUp": {"kind": os.environ["BUILDQUEUE_JOB_KIND"], "payload": {"steps": 1}}}) + "\\n")
      if payload.get("fail"):
          control.write(json.dumps({"error": payload["fail"]}) + "\\n")
          sys.exit(3)
      print("done", flush=True)
      """;

  @TempDir Path dataDir;
  @TempDir Path programs;
  private TestServer server;

  @BeforeEach
  void start(TestDatabase db) throws Exception {
    Path sh = Files.writeString(programs.resolve("build.sh"), SHELL);
    Path py = Files.writeString(programs.resolve("build.py"), PYTHON);
    String schema =
        "{\"type\": \"object\", \"properties\": {\"steps\": {\"type\": \"integer\", \"minimum\": 0}}}";
    String catalogue =
        """
        {"kinds": {
          "sh-build": {"command": ["sh", "%1$s"], "timeout": "2m", "retryExitCodes": [75],
                       "cancelGracePeriod": "2s", "payloadSchema": %3$s},
          "sh-quick": {"command": ["sh", "%1$s"], "timeout": "2s", "cancelGracePeriod": "1s"},
          "py-build": {"command": ["python3", "%2$s"], "timeout": "2m", "retryExitCodes": [75],
                       "cancelGracePeriod": "2s", "payloadSchema": %3$s},
          "py-quick": {"command": ["python3", "%2$s"], "timeout": "2s", "cancelGracePeriod": "1s"}
        }}
        """
            .formatted(sh, py, schema);
    Path kinds = Files.writeString(programs.resolve("kinds.json"), catalogue);
    server = TestServer.start(db, TestServer.settings(db, dataDir).withKindsFile(kinds));
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private long submit(String kind, String payload) {
    ObjectNode body = TestServer.JSON.createObjectNode().put("kind", kind);
    try {
      body.set("payload", TestServer.JSON.readTree(payload));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    ApiClient.Reply reply = server.client("ada", false).post("jobs", body);
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json().path("id").asLong();
  }

  private String log(long job) {
    ApiClient.Reply reply = server.client("ada", false).get("jobs/" + job + "/log");
    assertThat(reply.status()).as(reply.text()).isEqualTo(200);
    return reply.text();
  }

  private static String kind(String language, String which) {
    return language + "-" + which;
  }

  /** The program's own pid, from the line it prints first. */
  private long programPid(long job) {
    Await.until(
        "job " + job + " to print its pid",
        TestServer.JOB_TIMEOUT,
        () -> PID.matcher(log(job)).find());
    Matcher m = PID.matcher(log(job));
    assertThat(m.find()).isTrue();
    return Long.parseLong(m.group(1));
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sh", "py"})
  void a_build_reports_progress_writes_its_log_and_submits_a_follow_up(String language) {
    long job = submit(kind(language, "build"), "{\"steps\": 3, \"followUp\": true}");

    server.awaitStatus(job, "succeeded");

    assertThat(server.jobRow(job).intValue("progress")).isEqualTo(3);
    assertThat(log(job))
        .contains("step 1 of 3", "step 3 of 3", "done")
        .contains("[buildqueue] started: " + (language.equals("sh") ? "sh " : "python3 "));
    JsonNode followUp = server.client("ada", false).get("jobs?limit=5").json().path("jobs").get(0);
    assertThat(followUp.path("id").asLong()).isGreaterThan(job);
    assertThat(followUp.path("kind").asText()).isEqualTo(kind(language, "build"));
    server.awaitStatus(followUp.path("id").asLong(), "succeeded");
    assertThat(server.job(job).path("log").path("location").asText())
        .isEqualTo(
            dataDir.resolve("jobs").resolve("job-" + job + ".log").toAbsolutePath().toString());
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sh", "py"})
  void a_build_fails_with_its_own_message(String language) {
    long job =
        submit(kind(language, "build"), "{\"steps\": 1, \"fail\": \"the article has no title\"}");

    server.awaitStatus(job, "failed");

    assertThat(server.jobRow(job).string("error")).isEqualTo("the article has no title");
    assertThat(log(job)).contains("step 1 of 1").contains("exited with code 3");
  }

  @Test
  void the_program_gets_its_jobs_traceparent_with_a_new_span_id_at_each_attempt() throws Exception {
    String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    Path trace = programs.resolve("trace");
    String body =
        "{\"kind\": \"sh-build\", \"payload\": {\"steps\": 1, \"retryOnce\": true,"
            + " \"traceTo\": \""
            + trace
            + "\"}}";
    java.net.http.HttpResponse<String> reply =
        java.net.http.HttpClient.newHttpClient()
            .send(
                java.net.http.HttpRequest.newBuilder(server.runtime.baseUri().resolve("jobs"))
                    .header(
                        "Authorization",
                        "Bearer "
                            + server.runtime.tokens().mint("ada", false, Duration.ofMinutes(5)))
                    .header("Content-Type", "application/json")
                    .header("traceparent", traceparent)
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body))
                    .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(reply.statusCode()).as(reply.body()).isEqualTo(201);
    long job = TestServer.JSON.readTree(reply.body()).path("id").asLong();

    server.awaitStatus(job, "succeeded");

    String first = Files.readString(programs.resolve("trace-1")).strip();
    String second = Files.readString(programs.resolve("trace-2")).strip();
    assertThat(first).matches("00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01");
    assertThat(second).matches("00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01");
    assertThat(first).isNotEqualTo(traceparent);
    assertThat(second).isNotEqualTo(traceparent).isNotEqualTo(first);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sh", "py"})
  void a_retry_exit_code_retries_the_build_which_succeeds_on_its_next_attempt(String language) {
    long job = submit(kind(language, "build"), "{\"steps\": 2, \"retryOnce\": true}");

    server.awaitStatus(job, "succeeded");

    assertThat(server.jobRow(job).intValue("attempts")).isEqualTo(2);
    assertThat(server.eventTypes(job)).contains("interrupted");
    assertThat(log(job)).contains("attempt 2 of job " + job).contains("done");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sh", "py"})
  void a_build_past_its_timeout_is_stopped_and_fails_saying_so(String language) {
    long job = submit(kind(language, "quick"), "{\"hang\": true}");
    long pid = programPid(job);

    server.awaitStatus(job, "failed");

    assertThat(server.jobRow(job).string("error")).isEqualTo("timed out after 2s");
    assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sh", "py"})
  void a_build_that_never_reports_progress_is_cancelled_within_seconds(String language) {
    long job = submit(kind(language, "build"), "{\"hang\": true}");
    long pid = programPid(job);
    Await.until(
        "the program to be waiting", TestServer.JOB_TIMEOUT, () -> log(job).contains("hanging"));

    long asked = System.nanoTime();
    ApiClient.Reply cancel =
        server
            .client("ada", false)
            .post("jobs/" + job + "/cancel", TestServer.JSON.createObjectNode());
    assertThat(cancel.status()).as(cancel.text()).isEqualTo(200);
    server.awaitStatus(job, "cancelled");

    // Pushed, not polled: the server sends the worker process SIGTERM, and the worker sends its
    // program SIGTERM (which both programs obey at once) and ends the job cancelled.
    assertThat(Duration.ofNanos(System.nanoTime() - asked)).isLessThan(Duration.ofSeconds(10));
    assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
    assertThat(log(job)).contains("the worker is stopping: SIGTERM sent to the job's processes");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sh", "py"})
  void a_build_whose_worker_is_killed_resumes_from_its_progress_in_a_new_worker(String language) {
    long job = submit(kind(language, "build"), "{\"steps\": 12, \"stepMillis\": 400}");
    long firstPid = programPid(job);
    server.awaitProgress(job, 3);
    String task = server.workerOf(job).string("task_id");

    TestServer.process(task).orElseThrow().destroyForcibly(); // SIGKILL: no cleanup of its own

    server.awaitStatus(job, "succeeded");
    // The platform killed what the dead worker's job left before it freed the slot.
    assertThat(ProcessHandle.of(firstPid).filter(ProcessHandle::isAlive)).isEmpty();
    assertThat(server.jobRow(job).intValue("attempts")).isEqualTo(2);
    assertThat(server.jobRow(job).intValue("recoveries")).isZero();
    assertThat(log(job))
        .contains("attempt 2 of job " + job)
        .containsPattern("resuming after step (\\d+)")
        .contains("step 12 of 12");
    Matcher resumed = Pattern.compile("resuming after step (\\d+)").matcher(log(job));
    assertThat(resumed.find()).isTrue();
    assertThat(Integer.parseInt(resumed.group(1))).isGreaterThanOrEqualTo(3);
  }
}
