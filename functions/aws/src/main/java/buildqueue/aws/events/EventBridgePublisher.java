package buildqueue.aws.events;

import buildqueue.core.OutboxTransitions;
import buildqueue.core.OutboxTransitions.PendingEvent;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.eventbridge.EventBridgeClient;
import software.amazon.awssdk.services.eventbridge.model.PutEventsRequest;
import software.amazon.awssdk.services.eventbridge.model.PutEventsRequestEntry;
import software.amazon.awssdk.services.eventbridge.model.PutEventsResponse;
import software.amazon.awssdk.services.eventbridge.model.PutEventsResultEntry;

/**
 * Publishes the job history ({@code build_job_event}, the outbox) to EventBridge as {@value
 * #DETAIL_TYPE} events from source {@value #SOURCE}, at least once each: rows are claimed, sent
 * with PutEvents, and marked published only for the entries EventBridge accepted. Entries it
 * refused (a partial failure) and batches whose call failed are claimed again on a later run; rows
 * claimed by a publisher that died are claimed again once its claim runs out. Subscribers dedupe on
 * {@code detail.eventId}.
 */
public final class EventBridgePublisher {
  public static final String SOURCE = "buildqueue";
  public static final String DETAIL_TYPE = "Build Job State Change";

  /** PutEvents takes at most 10 entries per call. */
  static final int ENTRIES_PER_CALL = 10;

  /** Rows claimed at once; bounded, so one run holds few claims if it dies. */
  static final int CLAIM_BATCH = 50;

  /** Claim rounds per run: bounds the time one invocation spends publishing a backlog. */
  static final int MAX_ROUNDS = 10;

  /**
   * A message longer than this is cut: the detail stays far below EventBridge's 256 KB entry limit.
   */
  static final int MAX_MESSAGE_CHARS = 2000;

  private static final System.Logger LOG = System.getLogger(EventBridgePublisher.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  private final EventBridgeClient client;
  private final String eventBus;
  private final OutboxTransitions outbox;

  public EventBridgePublisher(EventBridgeClient client, String eventBus, OutboxTransitions outbox) {
    this.client = client;
    this.eventBus = eventBus;
    this.outbox = outbox;
  }

  /** What one run did. {@code refused} counts entries left for a later run. */
  public record Published(int published, int refused) {
    public boolean anything() {
      return published + refused > 0;
    }
  }

  /**
   * Sends what is pending now, oldest first. A failed PutEvents call ends the run (the rows wait
   * for the next one); a database failure propagates.
   */
  public Published publishPending() {
    int published = 0;
    int refused = 0;
    for (int round = 0; round < MAX_ROUNDS; round++) {
      List<PendingEvent> claimed = outbox.claimPending(CLAIM_BATCH);
      for (int from = 0; from < claimed.size(); from += ENTRIES_PER_CALL) {
        List<PendingEvent> batch =
            claimed.subList(from, Math.min(from + ENTRIES_PER_CALL, claimed.size()));
        Sent sent = send(batch);
        outbox.settle(sent.accepted(), sent.refused());
        published += sent.accepted().size();
        refused += sent.refused().size();
        if (sent.callFailed()) {
          // EventBridge is unwell: leave the rest to their claims running out, and try next run.
          return new Published(published, refused);
        }
      }
      if (claimed.size() < CLAIM_BATCH) {
        break;
      }
    }
    return new Published(published, refused);
  }

  /**
   * Sends events a request claimed in its own statements ({@code BuildQueue}'s sender), ten per
   * PutEvents call; the caller settles them. After a failed call the rest are refused without a
   * call: EventBridge is unwell, and they are claimed again after the retry wait.
   */
  public OutboxTransitions.Sent sendClaimed(List<PendingEvent> events) {
    List<Long> accepted = new ArrayList<>();
    List<Long> refused = new ArrayList<>();
    boolean callFailed = false;
    for (int from = 0; from < events.size(); from += ENTRIES_PER_CALL) {
      List<PendingEvent> batch =
          events.subList(from, Math.min(from + ENTRIES_PER_CALL, events.size()));
      if (callFailed) {
        refused.addAll(ids(batch));
        continue;
      }
      Sent sent = send(batch);
      accepted.addAll(sent.accepted());
      refused.addAll(sent.refused());
      callFailed = sent.callFailed();
    }
    return new OutboxTransitions.Sent(accepted, refused);
  }

  private record Sent(List<Long> accepted, List<Long> refused, boolean callFailed) {}

  private Sent send(List<PendingEvent> batch) {
    List<PutEventsRequestEntry> entries = new ArrayList<>(batch.size());
    for (PendingEvent e : batch) {
      entries.add(
          PutEventsRequestEntry.builder()
              .eventBusName(eventBus)
              .source(SOURCE)
              .detailType(DETAIL_TYPE)
              .time(e.at())
              .detail(detail(e))
              .build());
    }
    PutEventsResponse response;
    try {
      response = client.putEvents(PutEventsRequest.builder().entries(entries).build());
    } catch (SdkException e) {
      LOG.log(
          Level.WARNING,
          "PutEvents of {0} job events failed ({1}); they are retried on a later run",
          batch.size(),
          e.getMessage());
      return new Sent(List.of(), ids(batch), true);
    }
    List<Long> accepted = new ArrayList<>();
    List<Long> refused = new ArrayList<>();
    List<PutEventsResultEntry> results = response.entries();
    for (int i = 0; i < batch.size(); i++) {
      // Result i answers request entry i; an entry with an error code (or none at all) was not
      // taken.
      PutEventsResultEntry r = i < results.size() ? results.get(i) : null;
      if (r != null && r.errorCode() == null && r.eventId() != null) {
        accepted.add(batch.get(i).id());
      } else {
        refused.add(batch.get(i).id());
        LOG.log(
            Level.WARNING,
            "EventBridge refused job event {0} of job {1}: {2} {3}; retried on a later run",
            batch.get(i).id(),
            batch.get(i).jobId(),
            r == null ? "no result" : r.errorCode(),
            r == null ? "" : r.errorMessage());
      }
    }
    return new Sent(accepted, refused, false);
  }

  /** The event's {@code detail}: what a subscriber needs to act without calling back. */
  static String detail(PendingEvent e) {
    ObjectNode d = JSON.createObjectNode();
    d.put("eventId", e.id());
    d.put("jobId", e.jobId());
    d.put("userId", e.userId());
    d.put("kind", e.kind());
    d.put("type", e.type());
    String message = e.message() == null ? "" : e.message();
    d.put(
        "message",
        message.length() > MAX_MESSAGE_CHARS
            ? message.substring(0, MAX_MESSAGE_CHARS) + "…"
            : message);
    d.put("at", e.at().toString());
    if (e.traceparent() != null) {
      d.put("traceparent", e.traceparent());
    }
    return d.toString();
  }

  private static List<Long> ids(List<PendingEvent> batch) {
    return batch.stream().map(PendingEvent::id).toList();
  }
}
