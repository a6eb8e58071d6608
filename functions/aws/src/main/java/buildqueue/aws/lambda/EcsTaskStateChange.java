package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings;
import buildqueue.core.BilledTime;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An "ECS Task State Change" event as EventBridge delivers it, reduced to the fields the queue
 * uses. Unknown fields are ignored (ECS adds fields over time), and every field may be absent: a
 * {@code TaskFailedToStart} event may have no containers at all.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record EcsTaskStateChange(
    String id,
    @JsonProperty("detail-type") String detailType,
    String source,
    String time,
    Detail detail) {

  public static final String DETAIL_TYPE = "ECS Task State Change";
  public static final String STOPPED = "STOPPED";

  @JsonIgnoreProperties(ignoreUnknown = true)
  public record Detail(
      String taskArn,
      String clusterArn,
      String lastStatus,
      String desiredStatus,
      String startedBy,
      String stopCode,
      String stoppedReason,
      Long version,
      List<Container> containers,
      Overrides overrides,
      String createdAt,
      String pullStartedAt,
      String stoppedAt) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  public record Container(String name, Integer exitCode, String reason, String lastStatus) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  public record Overrides(List<ContainerOverride> containerOverrides) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  public record ContainerOverride(String name, List<EnvironmentVariable> environment) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  public record EnvironmentVariable(String name, String value) {}

  /** What a STOPPED event tells the queue: which task, which worker (if ours), and why. */
  public record StopEvidence(
      String taskArn, Optional<Long> workerId, Optional<UUID> token, String reason, Long version) {
    @Override
    public String toString() {
      return "StopEvidence[task="
          + taskArn
          + ", worker="
          + workerId.map(String::valueOf).orElse("?")
          + ", token "
          + (token.isPresent() ? "present" : "absent")
          + ", version="
          + version
          + ", reason="
          + reason
          + "]";
    }
  }

  /** The event could not be read as an ECS task state change; retrying it cannot help. */
  public static final class UnreadableEventException extends Exception {
    UnreadableEventException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
  private static final Pattern STARTED_BY = Pattern.compile("bq-(\\d{1,18})");

  public static EcsTaskStateChange parse(byte[] json) throws UnreadableEventException {
    EcsTaskStateChange event;
    try {
      event = JSON.readValue(json, EcsTaskStateChange.class);
    } catch (IOException | RuntimeException e) {
      throw new UnreadableEventException(
          "not JSON of an ECS task state change: " + e.getMessage(), e);
    }
    if (event == null
        || !DETAIL_TYPE.equals(event.detailType())
        || event.detail() == null
        || event.detail().taskArn() == null
        || event.detail().taskArn().isBlank()) {
      throw new UnreadableEventException(
          "not an ECS task state change with a task ARN (detail-type "
              + (event == null ? null : event.detailType())
              + ")",
          null);
    }
    return event;
  }

  /**
   * The stop evidence in this event, or empty when the task has not stopped yet ({@code lastStatus}
   * other than STOPPED: ECS sends several events per task, and only the last one is evidence). The
   * worker id comes from {@code startedBy = bq-<id>} and is trusted only together with the token
   * from the task's environment overrides; without a token only the task ARN identifies the worker,
   * so an event for a task we never launched matches nothing.
   */
  public Optional<StopEvidence> stopEvidence() {
    if (!STOPPED.equals(detail.lastStatus())) {
      return Optional.empty();
    }
    Optional<UUID> token = token();
    Optional<Long> workerId = token.isPresent() ? workerIdFromStartedBy() : Optional.empty();
    return Optional.of(
        new StopEvidence(detail.taskArn(), workerId, token, reason(), detail.version()));
  }

  private Optional<Long> workerIdFromStartedBy() {
    if (detail.startedBy() == null) {
      return Optional.empty();
    }
    Matcher m = STARTED_BY.matcher(detail.startedBy());
    return m.matches() ? Optional.of(Long.parseLong(m.group(1))) : Optional.empty();
  }

  private Optional<UUID> token() {
    if (detail.overrides() == null || detail.overrides().containerOverrides() == null) {
      return Optional.empty();
    }
    for (ContainerOverride o : detail.overrides().containerOverrides()) {
      if (o == null || o.environment() == null) {
        continue;
      }
      for (EnvironmentVariable v : o.environment()) {
        if (v != null && AwsSettings.WORKER_TOKEN.equals(v.name()) && v.value() != null) {
          try {
            return Optional.of(UUID.fromString(v.value()));
          } catch (IllegalArgumentException notOurs) {
            return Optional.empty();
          }
        }
      }
    }
    return Optional.empty();
  }

  /**
   * When Fargate billed the task: from its image pull's start (else its creation, for a task that
   * never pulled) to its stop. A time that is absent or unreadable is null, and the queue then uses
   * its own record (the worker's launch, its exit).
   */
  public BilledTime billedTime() {
    Instant from = instant(detail.pullStartedAt());
    return new BilledTime(
        from != null ? from : instant(detail.createdAt()), instant(detail.stoppedAt()));
  }

  private static Instant instant(String text) {
    if (text == null) {
      return null;
    }
    try {
      return Instant.parse(text);
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /** A reason a person can read: the stop code and reason, and each container's exit. */
  String reason() {
    StringBuilder b = new StringBuilder();
    if (detail.stopCode() != null) {
      b.append(detail.stopCode());
    }
    if (detail.stoppedReason() != null && !detail.stoppedReason().equals(detail.stopCode())) {
      b.append(b.length() > 0 ? ": " : "").append(detail.stoppedReason());
    }
    if (detail.containers() != null) {
      for (Container c : detail.containers()) {
        if (c == null) {
          continue;
        }
        if (c.exitCode() != null || c.reason() != null) {
          b.append(b.length() > 0 ? "; " : "").append("container ").append(c.name());
          if (c.exitCode() != null) {
            b.append(" exit code ").append(c.exitCode());
          }
          if (c.reason() != null) {
            b.append(" (").append(c.reason()).append(')');
          }
        }
      }
    }
    String reason = b.length() == 0 ? "ECS task stopped" : b.toString();
    return reason.length() > 1000 ? reason.substring(0, 1000) : reason;
  }
}
