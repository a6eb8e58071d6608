package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** What {@code bq status} prints for a finished program job and for a queued job's estimate. */
class RenderTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");

  private static JsonNode json(String text) throws Exception {
    return JSON.readTree(text);
  }

  @Test
  void a_program_job_that_counted_steps_without_a_total_ends_with_a_full_bar() throws Exception {
    JsonNode job = programJob("succeeded");

    assertThat(Render.jobLine(job)).contains("[" + "#".repeat(20) + "]").contains("100%");
    assertThat(Render.jobDetail(job, json("[]"))).contains("[" + "#".repeat(20) + "]");
  }

  @Test
  void a_running_job_without_a_total_has_an_empty_bar_until_it_succeeds() throws Exception {
    JsonNode job = programJob("running");

    assertThat(Render.jobLine(job)).contains("[" + " ".repeat(20) + "]").doesNotContain("100%");
  }

  @Test
  void an_estimate_reads_as_minutes_rounded_outwards_then_hours() throws Exception {
    assertThat(Render.startsIn(estimate("10:04:10", "10:06:30"), NOW))
        .isEqualTo("starts in about 4\u20137 min");
    assertThat(Render.startsIn(estimate("09:59:00", "10:00:40"), NOW))
        .isEqualTo("starts within a minute");
    assertThat(Render.startsIn(estimate("11:10:00", "12:20:00"), NOW))
        .isEqualTo("starts in about 1\u20133 h");
    assertThat(Render.startsIn(json("null"), NOW)).isEmpty();
  }

  /** A program job at step 3 that never said how many steps it has. */
  private static JsonNode programJob(String status) throws Exception {
    return json(
        "{\"id\": 7, \"userId\": \"ada\", \"kind\": \"program\", \"payload\": {}, \"status\": \""
            + status
            + "\", \"lane\": \"shared\", \"progress\": 3, \"position\": null, \"attempts\": 1}");
  }

  private static JsonNode estimate(String from, String to) throws Exception {
    return json(
        "{\"from\": \"2026-12-01T"
            + from
            + "Z\", \"to\": \"2026-12-01T"
            + to
            + "Z\", \"samples\": 12}");
  }
}
