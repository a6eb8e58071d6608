package buildqueue.api;

import buildqueue.platform.SpotReclaims;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * {@code POST /workers/{id}/reclaim} (admins), the local server's only: a simulated Fargate Spot
 * reclaim of a running Spot worker ({@link SpotReclaims}). On AWS a reclaim is AWS's doing, so the
 * deployed API has no such route ({@link HttpApi#withSpotReclaims}); openapi.json marks it {@code
 * x-buildqueue-local-only}.
 */
record WorkerRoutes(SpotReclaims reclaims) implements Route.Resource {
  @Override
  public List<Route> routes() {
    return List.of(
        new Route("POST", "/workers/{id}/reclaim", Route.Access.ADMIN, Set.of(), this::reclaim));
  }

  private ApiResponse reclaim(Call call) {
    long id = call.workerId();
    if (call.request().body().length > 0) {
      JsonBodies.onlyFields(
          JsonBodies.object(call.request(), "{}"),
          new LinkedHashSet<>(),
          "POST /workers/{id}/reclaim");
    }
    SpotReclaims.Outcome outcome = reclaims.reclaim(id);
    if (outcome instanceof SpotReclaims.Outcome.NoSuchWorker) {
      throw ApiProblem.notFound(
          "There is no worker " + id + ": GET /lanes lists the running ones with their ids.");
    }
    if (outcome instanceof SpotReclaims.Outcome.Refused r) {
      throw new ApiProblem(ApiProblem.Type.CONFLICT, r.why() + " Nothing was sent to the worker.");
    }
    SpotReclaims.Outcome.Reclaimed done = (SpotReclaims.Outcome.Reclaimed) outcome;
    ObjectNode body = ApiJson.MAPPER.createObjectNode();
    body.put("workerId", done.workerId());
    body.put("taskId", done.taskId());
    body.put("graceSeconds", done.grace().toMillis() / 1000.0);
    return ApiJson.response(202, body);
  }
}
