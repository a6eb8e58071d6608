package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.worker.WorkerLoop;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code GET /jobs/{id}/log}: the output the queue keeps of a job, for its owner and admins. */
class JobLogRouteTest extends ApiTest {
  private long printed(String payload) {
    long id = f.submit(ALICE, "print", payload);
    f.h.awaitStatus(id, "succeeded");
    return id;
  }

  @Test
  void the_owner_reads_the_jobs_output_as_text_with_its_size_and_status() {
    long id = printed("{\"lines\": [\"compiling\", \"done ✓\"]}");

    ApiResponse r = f.get("/jobs/" + id + "/log", ALICE);

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("Content-Type")).hasValue("text/plain; charset=utf-8");
    assertThat(r.bodyText()).isEqualTo("compiling\ndone ✓\n");
    assertThat(r.header(HttpApi.LOG_TOTAL_BYTES))
        .hasValue(Integer.toString("compiling\ndone ✓\n".getBytes(StandardCharsets.UTF_8).length));
    assertThat(r.header(HttpApi.JOB_STATUS)).hasValue("succeeded");
    assertThat(r.header(HttpApi.LOG_SKIPPED_BYTES)).isEmpty();
  }

  @Test
  void another_user_gets_404_and_an_admin_reads_it() {
    long id = printed("{\"lines\": [\"secret\"]}");

    ApiResponse other = f.get("/jobs/" + id + "/log", BOB);
    assertThat(other.status()).isEqualTo(404);
    assertThat(other.bodyText()).doesNotContain("secret");
    assertThat(f.get("/jobs/" + id + "/log", ADMIN).bodyText()).isEqualTo("secret\n");
    assertThat(f.get("/jobs/999999/log", ADMIN).status()).isEqualTo(404);
  }

  @Test
  void since_gives_only_what_came_after_and_since_past_the_end_gives_the_whole_tail() {
    long id = printed("{\"lines\": [\"one\", \"two\", \"three\"]}");

    assertThat(f.get("/jobs/" + id + "/log?since=4", ALICE).bodyText()).isEqualTo("two\nthree\n");
    assertThat(f.get("/jobs/" + id + "/log?since=14", ALICE).bodyText()).isEmpty();
    // A new attempt starts its output over: a follower's old offset is past its end.
    assertThat(f.get("/jobs/" + id + "/log?since=900", ALICE).bodyText())
        .isEqualTo("one\ntwo\nthree\n");
  }

  @Test
  void a_long_log_keeps_its_last_part_and_says_how_much_came_before() {
    String line = "x".repeat(99);
    long id = printed("{\"lines\": [\"" + line + "\"], \"repeat\": 1000}");

    ApiResponse r = f.get("/jobs/" + id + "/log", ALICE);

    assertThat(r.body().length)
        .isLessThanOrEqualTo(WorkerLoop.LOG_TAIL_BYTES)
        .isGreaterThan(WorkerLoop.LOG_TAIL_BYTES - 100);
    assertThat(r.bodyText()).startsWith(line + "\n").endsWith(line + "\n");
    assertThat(r.header(HttpApi.LOG_TOTAL_BYTES)).hasValue("100000");
    assertThat(Long.parseLong(r.header(HttpApi.LOG_SKIPPED_BYTES).orElseThrow()))
        .isEqualTo(100_000 - r.body().length);
  }

  @Test
  void a_job_that_printed_nothing_has_an_empty_log_and_no_log_in_its_json() {
    long id = f.submit(ALICE, "noop", "{}");
    f.h.awaitStatus(id, "succeeded");

    ApiResponse r = f.get("/jobs/" + id + "/log", ALICE);

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.body()).isEmpty();
    assertThat(r.header(HttpApi.LOG_TOTAL_BYTES)).hasValue("0");
    assertThat(json(f.get("/jobs/" + id, ALICE)).get("log").isNull()).isTrue();
  }

  @Test
  void the_job_json_points_to_its_log() {
    long id = printed("{\"lines\": [\"hello\"]}");

    JsonNode log = json(f.get("/jobs/" + id, ALICE)).get("log");

    assertThat(log.get("tail").asText()).isEqualTo("/jobs/" + id + "/log");
    assertThat(log.get("totalBytes").asLong()).isEqualTo(6);
    assertThat(log.get("location").isNull()).isTrue(); // in-process workers keep no file
    assertThat(log.get("updatedAt").asText()).isNotEmpty();
  }

  @Test
  void a_since_that_is_not_a_byte_count_is_a_400_naming_the_header_to_use() {
    long id = printed("{\"lines\": [\"a\"]}");

    ApiResponse r = f.get("/jobs/" + id + "/log?since=-1", ALICE);

    assertThat(r.status()).isEqualTo(400);
    assertThat(json(r).get("detail").asText()).contains(HttpApi.LOG_TOTAL_BYTES);
  }
}
