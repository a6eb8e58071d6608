package buildqueue.aws.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class MetricsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void a_line_is_an_embedded_metric_format_document() throws Exception {
    Metrics m =
        new Metrics("buildqueue", "tick")
            .count(Metrics.LAUNCHES, 2)
            .count(Metrics.LAUNCHES, 1)
            .observe(Metrics.SLOT_HELD_SECONDS, Duration.ofMillis(1500))
            .observe(Metrics.SLOT_HELD_SECONDS, Duration.ofSeconds(30))
            .property("requestId", "r-1");

    JsonNode doc = JSON.readTree(m.toEmf(Instant.ofEpochMilli(1796058245000L)));

    JsonNode aws = doc.get("_aws");
    assertThat(aws.get("Timestamp").asLong()).isEqualTo(1796058245000L);
    JsonNode directive = aws.get("CloudWatchMetrics").get(0);
    assertThat(directive.get("Namespace").asText()).isEqualTo("buildqueue");
    // An array of dimension sets: per function, and the total with no dimension.
    assertThat(directive.get("Dimensions").toString()).isEqualTo("[[\"Function\"],[]]");
    assertThat(directive.get("Metrics").toString())
        .isEqualTo(
            "[{\"Name\":\"Launches\",\"Unit\":\"Count\"},{\"Name\":\"SlotHeldSeconds\",\"Unit\":\"Seconds\"}]");
    // Every target member is on the root node: the dimension as a string, the metrics as numbers.
    assertThat(doc.get("Function").asText()).isEqualTo("tick");
    assertThat(doc.get("Launches").asLong()).isEqualTo(3);
    assertThat(doc.get("SlotHeldSeconds").toString()).isEqualTo("[1.5,30]");
    assertThat(doc.get("requestId").asText()).isEqualTo("r-1");
  }

  @Test
  void nothing_measured_writes_nothing() {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();

    new Metrics("buildqueue", "tick")
        .property("requestId", "r-1")
        .flush(new java.io.PrintStream(out));

    assertThat(out.size()).isZero();
  }
}
