package buildqueue.aws.logging;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/**
 * Where this container's output goes in CloudWatch Logs, read from the ECS task metadata endpoint
 * v4: {@code GET ${ECS_CONTAINER_METADATA_URI_V4}} answers with this container's metadata, whose
 * {@code LogDriver} is {@code awslogs} and whose {@code LogOptions} hold {@code awslogs-group},
 * {@code awslogs-stream} and {@code awslogs-region} (AWS's "task metadata endpoint v4 examples").
 *
 * @param group the log group
 * @param stream the log stream, {@code <prefix>/<container>/<task id>}
 * @param region where the group is, or null if the options do not say
 */
public record TaskLogLocation(String group, String stream, String region) {
  private static final System.Logger LOG = System.getLogger(TaskLogLocation.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The variable ECS sets in every container of a task on Fargate platform 1.4 and later. */
  public static final String METADATA_URI = "ECS_CONTAINER_METADATA_URI_V4";

  static final Duration TIMEOUT = Duration.ofSeconds(2);

  /**
   * Asks the endpoint named by {@code metadataUri}; empty when there is none (not on ECS), it does
   * not answer in time, or the container does not log through {@code awslogs}.
   */
  public static Optional<TaskLogLocation> lookUp(String metadataUri) {
    if (metadataUri == null || metadataUri.isBlank()) {
      return Optional.empty();
    }
    try {
      HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
      HttpResponse<String> response =
          client.send(
              HttpRequest.newBuilder(URI.create(metadataUri.strip()))
                  .timeout(TIMEOUT)
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        LOG.log(
            Level.WARNING,
            "task metadata answered {0}; jobs will not say where their log is",
            response.statusCode());
        return Optional.empty();
      }
      return fromContainerMetadata(JSON.readTree(response.body()));
    } catch (IOException | IllegalArgumentException e) {
      LOG.log(
          Level.WARNING,
          "task metadata could not be read ({0}); jobs will not say where their log is",
          e.getMessage());
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  static Optional<TaskLogLocation> fromContainerMetadata(JsonNode container) {
    JsonNode options = container.path("LogOptions");
    String group = options.path("awslogs-group").asText(null);
    String stream = options.path("awslogs-stream").asText(null);
    if (!"awslogs".equals(container.path("LogDriver").asText(null))
        || group == null
        || stream == null) {
      return Optional.empty();
    }
    return Optional.of(
        new TaskLogLocation(group, stream, options.path("awslogs-region").asText(null)));
  }

  /** For a job's record: where its lines are and how to pick them out. */
  public String describe(long jobId) {
    return "CloudWatch Logs group "
        + group
        + ", stream "
        + stream
        + (region == null ? "" : " (" + region + ")")
        + ": the lines with jobId "
        + jobId;
  }
}
