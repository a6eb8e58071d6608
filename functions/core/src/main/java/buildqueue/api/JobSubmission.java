package buildqueue.api;

import buildqueue.core.BudgetExceededException;
import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobTransitions;
import buildqueue.core.PayloadTooLargeException;
import buildqueue.core.Priority;
import buildqueue.core.QueueFullException;
import buildqueue.core.RowLimits;
import buildqueue.core.TraceContext;
import buildqueue.db.Json;
import buildqueue.kinds.KindRegistry;
import buildqueue.kinds.PayloadSchema;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * {@code POST /jobs}: a job's kind and payload checked against the known kinds, then enqueued once
 * per idempotency key (a repeat answers the first job; the same key with another request is a
 * conflict), superseding the user's queued jobs with the same supersede key.
 */
record JobSubmission(BuildQueue queue, KindRegistry kinds, JobAnswers answers)
    implements Route.Resource {
  private static final String SUBMIT_EXAMPLE =
      "{\"kind\": \"demo\", \"payload\": {\"steps\": 5}, \"idempotencyKey\": \"build-1234\"}";

  @Override
  public List<Route> routes() {
    return List.of(new Route("POST", "/jobs", Route.Access.USER, Set.of(), this::submit));
  }

  private ApiResponse submit(Call call) {
    ObjectNode body = JsonBodies.object(call.request(), SUBMIT_EXAMPLE);
    JsonBodies.onlyFields(
        body,
        new LinkedHashSet<>(
            List.of("kind", "payload", "idempotencyKey", "supersedeKey", "priority")),
        "POST /jobs");
    JsonNode kindNode = body.get("kind");
    if (kindNode == null || kindNode.isNull()) {
      throw ApiProblem.invalid(
          "The field \"kind\" is missing; send one of the known kinds ("
              + knownKinds()
              + "), e.g. "
              + SUBMIT_EXAMPLE
              + ".");
    }
    if (!kindNode.isTextual()) {
      throw ApiProblem.invalid(
          "The field \"kind\" must be a string naming a job kind ("
              + knownKinds()
              + "), not "
              + JsonBodies.kindOf(kindNode)
              + ".");
    }
    String kind = kindNode.textValue();
    checkKind(kinds, kind);
    JsonNode payload = body.get("payload");
    if (payload == null || payload.isNull()) {
      payload = ApiJson.object();
    } else if (!payload.isObject()) {
      throw ApiProblem.invalid(
          "The field \"payload\" must be a JSON object (or left out), not "
              + JsonBodies.kindOf(payload)
              + ".");
    }
    JsonBodies.requireStorable(payload, "payload");
    checkPayload(kinds, kind, payload);

    String key = key(body.get("idempotencyKey"), "idempotencyKey");
    String supersedeKey = key(body.get("supersedeKey"), "supersedeKey");
    Priority priority =
        Optional.ofNullable(priority(body.get("priority"), SUBMIT_EXAMPLE)).orElse(Priority.NORMAL);
    String payloadText;
    try {
      payloadText = ApiJson.MAPPER.writeValueAsString(payload);
    } catch (JsonProcessingException e) {
      throw ApiProblem.invalid(
          "The payload could not be stored as JSON: " + e.getOriginalMessage());
    }

    TraceContext traceparent = traceparent(call.request());

    BuildQueue.Submitted submitted;
    try {
      submitted =
          queue.submit(
              call.caller().userId(),
              kind,
              new Json(payloadText),
              key,
              supersedeKey,
              priority,
              traceparent);
    } catch (PayloadTooLargeException e) {
      throw payloadTooLarge(e.storedBytes());
    } catch (QueueFullException e) {
      throw queueFull(e);
    } catch (BudgetExceededException e) {
      throw budgetExceeded(e);
    }
    JobTransitions.Enqueued enqueued = submitted.enqueued();
    // Read back by the request's last statement, after its dispatch (BuildQueue#submit).
    JobView job = submitted.job();
    if (!enqueued.created() && !sameRequest(job, kind, payload)) {
      throw new ApiProblem(
          ApiProblem.Type.CONFLICT,
          "The idempotency key \""
              + JsonBodies.printable(key)
              + "\" was already used for job "
              + job.id()
              + " with a different kind or payload; use a new key for a new job, or resend job "
              + job.id()
              + "'s exact request.",
          Map.of("Location", "/jobs/" + job.id()));
    }
    ObjectNode out = answers.json(job, call.caller());
    if (supersedeKey != null && enqueued.created()) {
      ObjectNode superseded = out.putObject("superseded");
      superseded.put("cancelledCount", enqueued.supersededCount());
      ArrayNode cancelled = superseded.putArray("cancelled");
      enqueued.superseded().forEach(cancelled::add);
      ArrayNode requested = superseded.putArray("cancelRequested");
      enqueued.cancelRequested().forEach(requested::add);
    }
    return ApiJson.response(enqueued.created() ? 201 : 200, out)
        .withHeader("Location", "/jobs/" + job.id());
  }

  /**
   * The W3C {@code traceparent} header (docs/architecture.md "Trace context"); null when absent. A
   * malformed one is refused rather than dropped: the caller asked for a trace and would lose it.
   */
  static TraceContext traceparent(ApiRequest request) {
    Optional<String> header = request.header(TraceContext.HEADER);
    if (header.isEmpty()) {
      return null;
    }
    return TraceContext.parse(header.get())
        .orElseThrow(
            () ->
                ApiProblem.invalid(
                    "The header \"traceparent\" must be a W3C trace context of version 00: "
                        + TraceContext.EXPECTED
                        + "; not \""
                        + JsonBodies.printable(header.get())
                        + "\"."));
  }

  /**
   * The {@code priority} field: {@code low}, {@code normal} or {@code high}; null when it is left
   * out or null. Anything else is a 400 that lists the values ({@code next} is an admin's, by
   * {@code POST /jobs/{id}/run-next}).
   */
  static Priority priority(JsonNode node, String example) {
    if (node == null || node.isNull()) {
      return null;
    }
    String names =
        Priority.CHOSEN.stream().map(Priority::apiName).collect(Collectors.joining(", "));
    return Optional.ofNullable(node.isTextual() ? node.textValue() : null)
        .flatMap(Priority::chosen)
        .orElseThrow(
            () ->
                ApiProblem.invalid(
                    "The field \"priority\" must be one of "
                        + names
                        + " (it orders your own queued jobs; normal when left out), not "
                        + JsonBodies.printable(node.toString())
                        + (node.isTextual() && node.textValue().equals(Priority.NEXT.apiName())
                            ? ": \"next\" is an admin's, set by POST /jobs/{id}/run-next"
                            : "")
                        + "; e.g. "
                        + example
                        + "."));
  }

  /** The enqueue statement counted the user's queued jobs against their quota and wrote nothing. */
  static ApiProblem queueFull(QueueFullException e) {
    return new ApiProblem(
        ApiProblem.Type.TOO_MANY_QUEUED_JOBS,
        "You have "
            + (e.moreThanCounted()
                ? "more than " + e.limit() + " queued jobs"
                : e.queued() + (e.queued() == 1 ? " queued job" : " queued jobs"))
            + "; the limit is "
            + e.limit()
            + " per user. Nothing was written. Submit again when some"
            + " of them have started, cancel some (POST /jobs/{id}/cancel), or submit with a supersedeKey to"
            + " replace queued jobs with the same key.",
        Map.of("Retry-After", Integer.toString(HttpApi.QUEUE_FULL_RETRY_AFTER_SECONDS)));
  }

  /**
   * The enqueue statement summed what the user's jobs were billed this period, found the budget
   * used, and wrote nothing: a budget of its own (not the quota's), so a client can tell waiting
   * minutes from waiting for the period's end.
   */
  private static ApiProblem budgetExceeded(BudgetExceededException e) {
    return new ApiProblem(
        ApiProblem.Type.BUDGET_EXCEEDED,
        "Your jobs used "
            + e.usedVcpuSeconds()
            + " of your "
            + e.budgetVcpuSeconds()
            + " vCPU-seconds this "
            + e.period()
            + " (UTC). Nothing was written. The budget renews at "
            + e.periodEnds()
            + "; an admin can raise it (PUT /users/{id} with budgetVcpuSeconds). Jobs already"
            + " running go on.",
        Map.of("Retry-After", Long.toString(e.retryAfterSeconds())));
  }

  /** The enqueue statement measured the payload as stored and wrote nothing. */
  static ApiProblem payloadTooLarge(long storedBytes) {
    return new ApiProblem(
        ApiProblem.Type.PAYLOAD_TOO_LARGE,
        "The payload takes "
            + storedBytes
            + " bytes as stored (JSON as the database writes it: a space after each"
            + " ':' and ',', numbers in full); the limit is "
            + RowLimits.MAX_PAYLOAD_BYTES
            + " bytes, so that a"
            + " worker can read its job back in one row of the RDS Data API (64 KB). Nothing was written. Keep large"
            + " inputs in object storage (e.g. S3) and pass a reference in the payload.");
  }

  /** Refuses (400) a kind the catalogue does not hold. */
  static void checkKind(KindRegistry kinds, String kind) {
    if (kinds.payloadSchema(kind).isEmpty()) {
      throw ApiProblem.invalid(
          "Unknown kind \""
              + JsonBodies.printable(kind)
              + "\"; the known kinds are: "
              + knownKinds(kinds)
              + ".");
    }
  }

  /** Refuses (400) a payload the kind's schema does not accept; the kind is known. */
  static void checkPayload(KindRegistry kinds, String kind, JsonNode payload) {
    PayloadSchema schema = kinds.payloadSchema(kind).orElseThrow();
    try {
      schema.check(payload.deepCopy());
    } catch (IllegalArgumentException e) {
      throw ApiProblem.invalid(
          "The payload is not valid for kind \""
              + kind
              + "\": "
              + (e.getMessage() == null
                  ? "the kind's validation refused it without saying why"
                  : e.getMessage()));
    }
  }

  private static String key(JsonNode node, String field) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isTextual()) {
      throw ApiProblem.invalid(
          "The field \""
              + field
              + "\" must be a string of 1 to "
              + HttpApi.MAX_KEY_CHARS
              + " characters, not "
              + JsonBodies.kindOf(node)
              + ".");
    }
    String key = node.textValue();
    if (!Ids.usable(key)) {
      throw ApiProblem.invalid(
          "The field \""
              + field
              + "\" must be 1 to "
              + HttpApi.MAX_KEY_CHARS
              + " characters without control characters; it has "
              + key.codePointCount(0, key.length())
              + " characters"
              + (Ids.hasControl(key) ? ", some of them control characters" : "")
              + ".");
    }
    return key;
  }

  private static boolean sameRequest(JobView job, String kind, JsonNode payload) {
    return job.kind().equals(kind)
        && ApiJson.parse(job.payload()).equals(NUMBERS_BY_VALUE, payload);
  }

  /** Compares numbers by value, as {@code jsonb} does: 1.0, 1.00 and 1E+0 are one number. */
  private static final java.util.Comparator<JsonNode> NUMBERS_BY_VALUE =
      (a, b) -> {
        if (a.isNumber() && b.isNumber()) {
          return a.decimalValue().compareTo(b.decimalValue());
        }
        return a.equals(b) ? 0 : 1;
      };

  private String knownKinds() {
    return knownKinds(kinds);
  }

  private static String knownKinds(KindRegistry kinds) {
    return String.join(", ", kinds.kinds());
  }
}
