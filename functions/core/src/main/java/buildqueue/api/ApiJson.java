package buildqueue.api;

import buildqueue.core.Cost;
import buildqueue.core.JobQueries;
import buildqueue.core.JobQueries.CurrentJob;
import buildqueue.core.JobQueries.EventView;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobQueries.LaneView;
import buildqueue.core.JobQueries.LogSummary;
import buildqueue.core.JobQueries.QueuedJob;
import buildqueue.core.JobQueries.SlotView;
import buildqueue.core.JobQueries.Waiting;
import buildqueue.core.JobQueries.WorkerView;
import buildqueue.core.Ledger;
import buildqueue.core.Priority;
import buildqueue.core.StartEstimate;
import buildqueue.db.Json;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The API's JSON shapes (docs/architecture.md §8). Field names here are the contract with clients,
 * described in openapi.json, which the route tests hold every response to.
 */
final class ApiJson {
  static final String MEDIA_TYPE = "application/json";
  static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
          .build();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private ApiJson() {}

  static ObjectNode object() {
    return NODES.objectNode();
  }

  static ArrayNode array() {
    return NODES.arrayNode();
  }

  static byte[] bytes(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("could not write JSON", e);
    }
  }

  /** A JSON answer: never cached, never sniffed. */
  static ApiResponse response(int status, JsonNode body) {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", MEDIA_TYPE);
    headers.put("Cache-Control", "no-store");
    headers.put("X-Content-Type-Options", "nosniff");
    return new ApiResponse(status, headers, bytes(body));
  }

  /** A stored JSON document (read from {@code jsonb}, so known to be valid). */
  static JsonNode parse(Json json) {
    if (json == null) {
      return NODES.nullNode();
    }
    try {
      return MAPPER.readTree(json.text());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("stored JSON could not be parsed", e);
    }
  }

  /** The job (openapi.json's {@code Job}) plus {@code waitingFor} while it is queued. */
  static ObjectNode job(JobView j, Optional<Waiting> waiting, Ledger ledger) {
    ObjectNode o = object();
    o.put("id", j.id());
    o.put("userId", j.userId());
    o.put("kind", j.kind());
    o.set("payload", parse(j.payload()));
    o.put("status", j.status().sql());
    o.put("lane", j.lane());
    o.put("position", j.position());
    o.put("progress", j.progress());
    o.put("attempts", j.attempts());
    o.put("recoveries", j.recoveries());
    o.put("cancelRequested", j.cancelRequested());
    o.put("error", j.error());
    o.put("workerId", j.workerId());
    o.put("createdAt", time(j.createdAt()));
    o.put("dispatchedAt", time(j.dispatchedAt()));
    o.put("startedAt", time(j.startedAt()));
    o.put("finishedAt", time(j.finishedAt()));
    o.set("log", j.log().map(l -> (JsonNode) log(j.id(), l)).orElse(NODES.nullNode()));
    o.put("supersedeKey", j.supersedeKey());
    o.put("supersededBy", j.supersededBy());
    o.put("priority", Priority.name(j.priority()));
    o.put("retryOf", j.retryOf());
    o.put("retriedBy", j.retriedBy());
    o.set("waitingFor", waiting.map(w -> (JsonNode) waiting(w)).orElse(NODES.nullNode()));
    Cost cost = Cost.of(j.cost(), ledger);
    o.set("cost", cost == null ? NODES.nullNode() : cost(cost));
    return o;
  }

  /** What was billed (docs/architecture.md §4.8), for a job or a user's usage. */
  static ObjectNode cost(Cost c) {
    ObjectNode o = object();
    o.put("billedSeconds", java.math.BigDecimal.valueOf(c.billedMs(), 3));
    o.put("vcpuSeconds", c.vcpuSeconds());
    o.put("gbSeconds", c.gbSeconds());
    o.put("capacity", c.capacity());
    o.put("usd", c.dollars());
    return o;
  }

  /** Where a job's output is: the tail the queue keeps, and the whole log where there is one. */
  static ObjectNode log(long jobId, LogSummary l) {
    ObjectNode o = object();
    o.put("tail", "/jobs/" + jobId + "/log");
    o.put("totalBytes", l.totalBytes());
    o.put("location", l.location());
    o.put("updatedAt", time(l.updatedAt()));
    return o;
  }

  static ObjectNode waiting(Waiting w) {
    ObjectNode o = object();
    o.put("summary", WaitingSummary.of(w));
    o.put("lane", w.lane());
    o.put("capacity", w.capacity());
    o.put("jobsAhead", w.jobsAhead());
    o.set("turns", w.turns().map(t -> (JsonNode) turns(t)).orElse(NODES.nullNode()));
    o.put("notBefore", time(w.notBefore()));
    o.set("slots", slots(w.slots()));
    o.set(
        "estimatedStart",
        w.estimatedStart().map(e -> (JsonNode) estimate(e)).orElse(NODES.nullNode()));
    o.put("lanePausedAt", w.pause().map(p -> time(p.pausedAt())).orElse(null));
    return o;
  }

  /** When a queued job will probably start: a range, and how many finished jobs it rests on. */
  static ObjectNode estimate(StartEstimate e) {
    ObjectNode o = object();
    o.put("from", time(e.from()));
    o.put("to", time(e.to()));
    o.put("samples", e.samples());
    return o;
  }

  /** A queued job's place in a lane that takes turns by user. */
  static ObjectNode turns(buildqueue.core.JobQueries.Turns t) {
    ObjectNode o = object();
    o.put("retry", t.retry());
    o.put("ownJobsAhead", t.ownJobsAhead());
    o.put("usersAhead", t.usersAhead());
    o.put("otherUsersWaiting", t.otherUsersWaiting());
    return o;
  }

  static ArrayNode slots(List<SlotView> slots) {
    ArrayNode a = array();
    for (SlotView s : slots) {
      ObjectNode o = a.addObject();
      o.put("slot", s.slot());
      o.set("worker", s.worker().map(w -> (JsonNode) worker(w)).orElse(NODES.nullNode()));
    }
    return a;
  }

  static ObjectNode worker(WorkerView w) {
    ObjectNode o = object();
    o.put("id", w.id());
    o.put("status", w.status().name().toLowerCase(java.util.Locale.ROOT));
    o.put("taskId", w.taskId());
    o.put("leaseLeftSeconds", w.leaseLeftSeconds());
    o.put("launchedAt", time(w.launchedAt()));
    o.put("startedAt", time(w.startedAt()));
    o.set("job", w.job().map(j -> (JsonNode) currentJob(j)).orElse(NODES.nullNode()));
    return o;
  }

  static ObjectNode currentJob(CurrentJob j) {
    ObjectNode o = object();
    o.put("id", j.id());
    o.put("userId", j.userId());
    o.put("kind", j.kind());
    o.put("status", j.status().sql());
    o.put("progress", j.progress());
    o.put("steps", steps(j.payloadSteps()));
    return o;
  }

  /** {@code payload.steps} when it is a whole number above zero: the end of a progress bar. */
  static Integer steps(Json payloadSteps) {
    if (payloadSteps == null) {
      return null;
    }
    JsonNode n = parse(payloadSteps);
    return n.isIntegralNumber() && n.canConvertToInt() && n.intValue() > 0 ? n.intValue() : null;
  }

  static ObjectNode event(EventView e) {
    ObjectNode o = object();
    o.put("id", e.id());
    o.put("type", e.type());
    o.put("message", e.message());
    o.set("detail", parse(e.detail()));
    o.put("at", time(e.at()));
    return o;
  }

  static ObjectNode lane(LaneView l) {
    ObjectNode o = object();
    o.put("lane", l.lane());
    o.put("capacity", l.capacity());
    o.put("queued", l.queued());
    o.set("slots", slots(l.slots()));
    ArrayNode head = o.putArray("queuedJobs");
    for (QueuedJob q : l.head()) {
      ObjectNode j = head.addObject();
      j.put("id", q.id());
      j.put("userId", q.userId());
      j.put("kind", q.kind());
      j.put("position", q.position());
      j.put("createdAt", time(q.createdAt()));
      j.put("notBefore", time(q.notBefore()));
      j.put("priority", Priority.name(q.priority()));
    }
    o.put("paused", l.pause().isPresent());
    o.put("pausedAt", l.pause().map(p -> time(p.pausedAt())).orElse(null));
    o.put("pausedBy", l.pause().map(JobQueries.Pause::pausedBy).orElse(null));
    return o;
  }

  /** ISO-8601 in UTC, e.g. {@code 2026-12-01T10:00:00Z}; null stays null. */
  static String time(Instant t) {
    return t == null ? null : t.toString();
  }
}
