package buildqueue.aws.logging;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.worker.JobLog;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CloudWatchJobLogSinkTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The container metadata response of AWS's "task metadata endpoint v4 examples", trimmed. */
  private static final String CONTAINER_METADATA =
      """
      {
          "DockerId": "ea32192c8553fbff06c9340478a2ff089b2bb5646fb718b4ee206641c9086d66",
          "Name": "curl",
          "DockerName": "ecs-curltest-24-curl-cca48e8dcadd97805600",
          "Image": "111122223333.dkr.ecr.us-west-2.amazonaws.com/curltest:latest",
          "Labels": {
              "com.amazonaws.ecs.cluster": "default",
              "com.amazonaws.ecs.container-name": "curl",
              "com.amazonaws.ecs.task-arn": "arn:aws:ecs:us-west-2:111122223333:task/default/8f03e41243824aea923aca126495f665"
          },
          "DesiredStatus": "RUNNING",
          "KnownStatus": "RUNNING",
          "Type": "NORMAL",
          "LogDriver": "awslogs",
          "LogOptions": {
              "awslogs-create-group": "true",
              "awslogs-group": "/ecs/metadata",
              "awslogs-region": "us-west-2",
              "awslogs-stream": "ecs/curl/8f03e41243824aea923aca126495f665"
          }
      }
      """;

  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
  private HttpServer metadata;
  private final AtomicInteger requests = new AtomicInteger();

  @AfterEach
  void stop() {
    if (metadata != null) {
      metadata.stop(0);
    }
  }

  private String serve(int status, String body) throws Exception {
    metadata = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    metadata.createContext(
        "/v4/abc",
        exchange -> {
          requests.incrementAndGet();
          byte[] b = body.getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(status, b.length);
          exchange.getResponseBody().write(b);
          exchange.close();
        });
    metadata.start();
    return "http://127.0.0.1:" + metadata.getAddress().getPort() + "/v4/abc";
  }

  private List<JsonNode> lines() throws Exception {
    List<JsonNode> lines = new ArrayList<>();
    for (String line : bytes.toString(StandardCharsets.UTF_8).split("\n")) {
      lines.add(JSON.readTree(line));
    }
    return lines;
  }

  @Test
  void each_line_is_one_json_line_with_the_job_id_and_stream() throws Exception {
    CloudWatchJobLogSink sink =
        CloudWatchJobLogSink.forThisTask(Map.<String, String>of()::get, out, 7);

    sink.line(42, JobLog.Stream.STDOUT, "rendering page 1 of \"Intro\"");
    sink.line(42, JobLog.Stream.STDERR, "warning: \u00e9t\u00e9 \t tab");
    sink.line(43, JobLog.Stream.WORKER, "started: node render.js (attempt 2)");

    List<JsonNode> lines = lines();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0).get("jobId").asLong()).isEqualTo(42);
    assertThat(lines.get(0).get("stream").asText()).isEqualTo("stdout");
    assertThat(lines.get(0).get("message").asText()).isEqualTo("rendering page 1 of \"Intro\"");
    assertThat(lines.get(0).get("workerId").asText()).isEqualTo("7");
    assertThat(lines.get(0).get("component").asText()).isEqualTo("job");
    assertThat(lines.get(0).get("time").asText()).endsWith("Z");
    assertThat(lines.get(1).get("stream").asText()).isEqualTo("stderr");
    assertThat(lines.get(1).get("message").asText()).isEqualTo("warning: \u00e9t\u00e9 \t tab");
    assertThat(lines.get(2).get("jobId").asLong()).isEqualTo(43);
    assertThat(lines.get(2).get("stream").asText()).isEqualTo("worker");
  }

  @Test
  void a_jobs_location_names_the_log_group_and_stream_from_the_task_metadata() throws Exception {
    String uri = serve(200, CONTAINER_METADATA);
    CloudWatchJobLogSink sink =
        CloudWatchJobLogSink.forThisTask(Map.of(TaskLogLocation.METADATA_URI, uri)::get, out, 7);

    String location = sink.location(42);

    assertThat(location)
        .isEqualTo(
            "CloudWatch Logs group /ecs/metadata, stream ecs/curl/8f03e41243824aea923aca126495f665"
                + " (us-west-2): the lines with jobId 42");
    assertThat(sink.location(43)).endsWith("jobId 43");
    assertThat(requests.get()).as("the metadata is asked once per worker").isEqualTo(1);
  }

  @Test
  void without_task_metadata_a_job_has_no_location() throws Exception {
    assertThat(CloudWatchJobLogSink.forThisTask(Map.<String, String>of()::get, out, 7).location(42))
        .isNull();

    String failing = serve(500, "{}");
    assertThat(
            CloudWatchJobLogSink.forThisTask(
                    Map.of(TaskLogLocation.METADATA_URI, failing)::get, out, 7)
                .location(42))
        .isNull();
    assertThat(
            TaskLogLocation.fromContainerMetadata(JSON.readTree("{\"LogDriver\": \"json-file\"}")))
        .isEmpty();
  }
}
