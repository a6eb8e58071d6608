package buildqueue.api;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobStatus;
import buildqueue.core.OperatorTransitions;
import buildqueue.core.OperatorTransitions.RetryLink;
import buildqueue.core.PayloadTooLargeException;
import buildqueue.core.QueueFullException;
import buildqueue.kinds.KindRegistry;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What operators do to many jobs or to a finished one: {@code POST /jobs/cancel} (admins: cancel
 * the jobs a filter matches, a bounded batch per call) and {@code POST /jobs/{id}/retry} (owner or
 * admin: a new job with a failed or cancelled job's kind and payload, linked both ways).
 */
record OperatorRoutes(BuildQueue queue, KindRegistry kinds, JobAnswers answers)
    implements Route.Resource {
  private static final String FILTER_EXAMPLE =
      "{\"userId\": \"alice\", \"kind\": \"render\", \"status\": [\"queued\"]}";

  @Override
  public List<Route> routes() {
    return List.of(
        new Route("POST", "/jobs/cancel", Route.Access.ADMIN, Set.of(), this::cancelMatching),
        new Route("POST", "/jobs/{id}/retry", Route.Access.USER, Set.of(), this::retry));
  }

  private ApiResponse cancelMatching(Call call) {
    OperatorTransitions.CancelFilter filter = filter(call.request());
    OperatorTransitions.BulkCancelled done = queue.cancelMatching(filter);
    ObjectNode out = ApiJson.object();
    out.put("cancelledCount", done.cancelled().size());
    ArrayNode cancelled = out.putArray("cancelled");
    done.cancelled().forEach(cancelled::add);
    out.put("cancelRequestedCount", done.cancelRequested().size());
    ArrayNode requested = out.putArray("cancelRequested");
    done.cancelRequested().forEach(requested::add);
    out.put("remaining", done.remaining());
    out.put("more", done.remaining() > 0);
    return ApiJson.response(200, out);
  }

  /** The body of {@code POST /jobs/cancel}: at least one of its filters, each checked. */
  private static OperatorTransitions.CancelFilter filter(ApiRequest request) {
    ObjectNode body = JsonBodies.object(request, FILTER_EXAMPLE);
    JsonBodies.onlyFields(
        body, new LinkedHashSet<>(List.of("userId", "kind", "status")), "POST /jobs/cancel");
    String userId = text(body.get("userId"), "userId");
    String kind = text(body.get("kind"), "kind");
    JsonNode status = body.get("status");
    if (userId == null && kind == null && (status == null || status.isNull())) {
      throw ApiProblem.invalid(
          "Say which jobs to cancel: give at least one of \"userId\", \"kind\" and \"status\", e.g. "
              + FILTER_EXAMPLE
              + ". Nothing was cancelled.");
    }
    boolean queued = true;
    boolean running = true;
    if (status != null && !status.isNull()) {
      if (!status.isArray() || status.isEmpty()) {
        throw ApiProblem.invalid(
            "The field \"status\" must be a non-empty array of \"queued\" and \"running\" (jobs on a"
                + " worker), not "
                + JsonBodies.printable(status.toString(), 100)
                + ".");
      }
      queued = false;
      running = false;
      for (JsonNode s : status) {
        if (!s.isTextual()
            || !(s.textValue().equals("queued") || s.textValue().equals("running"))) {
          throw ApiProblem.invalid(
              "Unknown status "
                  + JsonBodies.printable(s.toString(), 100)
                  + " in \"status\": a bulk cancel takes \"queued\" (cancelled at once) and"
                  + " \"running\" (jobs on a worker, stopped as by POST /jobs/{id}/cancel).");
        }
        queued |= s.textValue().equals("queued");
        running |= s.textValue().equals("running");
      }
    }
    return new OperatorTransitions.CancelFilter(userId, kind, queued, running);
  }

  private static String text(JsonNode node, String field) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isTextual() || !Ids.usable(node.textValue())) {
      throw ApiProblem.invalid(
          "The field \""
              + field
              + "\" must be a string of 1 to "
              + HttpApi.MAX_KEY_CHARS
              + " characters without control characters, not "
              + (node.isTextual()
                  ? "\"" + JsonBodies.printable(node.textValue(), 100) + "\""
                  : JsonBodies.kindOf(node))
              + ".");
    }
    return node.textValue();
  }

  private ApiResponse retry(Call call) {
    if (call.request().body().length > 0) {
      JsonBodies.onlyFields(
          JsonBodies.object(call.request(), "{}"), new LinkedHashSet<>(), "POST /jobs/{id}/retry");
    }
    JobView old = answers.visibleJob(call);
    if (old.status() != JobStatus.FAILED && old.status() != JobStatus.CANCELLED) {
      throw new ApiProblem(
          ApiProblem.Type.CONFLICT,
          "Job "
              + old.id()
              + " is "
              + old.status().sql()
              + "; only a failed or cancelled job can be retried"
              + (old.status().finished()
                  ? ". Submit a new job (POST /jobs) to run it again."
                  : ": wait for it to finish, or cancel it (POST /jobs/" + old.id() + "/cancel)."));
    }
    if (old.retriedBy() != null) {
      throw retriedBefore(old.id(), old.retriedBy());
    }
    try {
      JobSubmission.checkKind(kinds, old.kind());
      JobSubmission.checkPayload(kinds, old.kind(), ApiJson.parse(old.payload()));
    } catch (ApiProblem p) {
      throw new ApiProblem(
          ApiProblem.Type.CONFLICT,
          "Job "
              + old.id()
              + " cannot be retried as it was submitted, because the kinds have changed since: "
              + p.detail()
              + " Nothing was written; submit a new job (POST /jobs) instead.");
    }
    BuildQueue.Retried retried;
    try {
      retried = queue.retry(old.id(), old.userId(), old.kind(), old.payload());
    } catch (PayloadTooLargeException e) {
      throw JobSubmission.payloadTooLarge(e.storedBytes());
    } catch (QueueFullException e) {
      throw JobSubmission.queueFull(e);
    }
    JobView job = retried.submitted().job();
    if (retried.link() instanceof RetryLink.RetriedBefore before) {
      throw retriedBefore(old.id(), before.retriedBy());
    }
    ObjectNode out = answers.json(job, call.caller());
    if (retried.link() instanceof RetryLink.Linked) {
      // Read back before the link was written (the submission's last statement): as it now is.
      out.put("retryOf", old.id());
    }
    return ApiJson.response(retried.submitted().enqueued().created() ? 201 : 200, out)
        .withHeader("Location", "/jobs/" + job.id());
  }

  private static ApiProblem retriedBefore(long id, long retriedBy) {
    return new ApiProblem(
        ApiProblem.Type.CONFLICT,
        "Job "
            + id
            + " was already retried by job "
            + retriedBy
            + "; a job is retried once. Retry job "
            + retriedBy
            + " if it failed too.",
        Map.of("Location", "/jobs/" + retriedBy));
  }
}
