package buildqueue.api;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobTransitions;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;

/**
 * {@code PUT /users/{userId}} (admins): a user's dedicated worker and own quota of queued jobs;
 * moving a user between lanes moves their queued jobs with them.
 */
record UserRoutes(BuildQueue queue) implements Route.Resource {
  private static final String USER_EXAMPLE =
      "{\"dedicatedWorker\": true, \"maxQueuedJobs\": 5000, \"budgetVcpuSeconds\": 360000}";

  /** A budget's upper bound: a century of a 16-vCPU worker, far past any real one. */
  static final long MAX_BUDGET_VCPU_SECONDS = 100L * 366 * 24 * 3600 * 16;

  @Override
  public List<Route> routes() {
    return List.of(
        new Route("PUT", "/users/{userId}", Route.Access.ADMIN, Set.of(), this::putUser));
  }

  private ApiResponse putUser(Call call) {
    String userId = call.params().get("userId");
    if (!Ids.usable(userId)) {
      throw ApiProblem.invalid(
          "The user id in the path must be 1 to "
              + HttpApi.MAX_KEY_CHARS
              + " characters without control characters.");
    }
    ObjectNode body = JsonBodies.object(call.request(), USER_EXAMPLE);
    JsonBodies.onlyFields(
        body,
        new LinkedHashSet<>(List.of("dedicatedWorker", "maxQueuedJobs", "budgetVcpuSeconds")),
        "PUT /users/{userId}");
    if (!body.has("dedicatedWorker")
        && !body.has("maxQueuedJobs")
        && !body.has("budgetVcpuSeconds")) {
      throw ApiProblem.invalid(
          "Send \"dedicatedWorker\", \"maxQueuedJobs\", \"budgetVcpuSeconds\" or some of them, e.g. "
              + USER_EXAMPLE
              + ".");
    }
    JsonNode dedicated = body.get("dedicatedWorker");
    if (dedicated != null && !dedicated.isBoolean()) {
      throw ApiProblem.invalid(
          "The field \"dedicatedWorker\" must be true or false, not "
              + JsonBodies.kindOf(dedicated)
              + "; send e.g. "
              + USER_EXAMPLE
              + ".");
    }
    Optional<OptionalInt> quota = Optional.empty();
    if (body.has("maxQueuedJobs")) {
      JsonNode max = body.get("maxQueuedJobs");
      if (max.isNull()) {
        quota = Optional.of(OptionalInt.empty());
      } else if (max.canConvertToInt()
          && max.isIntegralNumber()
          && max.intValue() >= 1
          && max.intValue() <= HttpApi.MAX_QUOTA) {
        quota = Optional.of(OptionalInt.of(max.intValue()));
      } else {
        throw ApiProblem.invalid(
            "The field \"maxQueuedJobs\" must be a whole number from 1 to "
                + HttpApi.MAX_QUOTA
                + " (the user's own limit on queued jobs), or null for the queue's default ("
                + queue.config().maxQueuedJobs()
                + "), not "
                + JsonBodies.printable(max.toString())
                + ".");
      }
    }
    Optional<OptionalLong> budget = Optional.empty();
    if (body.has("budgetVcpuSeconds")) {
      JsonNode b = body.get("budgetVcpuSeconds");
      if (b.isNull()) {
        budget = Optional.of(OptionalLong.empty());
      } else if (b.isIntegralNumber()
          && b.canConvertToLong()
          && b.longValue() >= 0
          && b.longValue() <= MAX_BUDGET_VCPU_SECONDS) {
        budget = Optional.of(OptionalLong.of(b.longValue()));
      } else {
        throw ApiProblem.invalid(
            "The field \"budgetVcpuSeconds\" must be a whole number from 0 to "
                + MAX_BUDGET_VCPU_SECONDS
                + " (vCPU-seconds the user's jobs may be billed per "
                + queue.config().ledger().budgetPeriod()
                + ", UTC), or null for the queue's default, not "
                + JsonBodies.printable(b.toString())
                + ".");
      }
    }
    JobTransitions.LaneChange change =
        queue.updateUser(
            userId,
            new JobTransitions.UserChange(
                Optional.ofNullable(dedicated).map(JsonNode::booleanValue), quota, budget));
    ObjectNode out = ApiJson.object();
    out.put("userId", change.userId());
    out.put("dedicatedWorker", change.dedicatedWorker());
    out.put("lane", change.lane());
    out.put("maxQueuedJobs", change.maxQueuedJobs());
    out.put("maxQueuedJobsIsDefault", !change.ownMaxQueuedJobs());
    out.put("budgetVcpuSeconds", change.budgetVcpuSeconds());
    out.put("budgetIsDefault", !change.ownBudget());
    out.put("movedCount", change.movedCount());
    ArrayNode moved = out.putArray("movedJobs");
    change.movedJobs().forEach(moved::add);
    return ApiJson.response(200, out);
  }
}
