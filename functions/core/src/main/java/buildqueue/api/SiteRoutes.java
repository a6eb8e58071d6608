package buildqueue.api;

import buildqueue.core.JobQueries;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What needs no token: {@code GET /} (the dashboard page, which reads everything else through the
 * API with the user's token), {@code GET /health} (the database answers) and {@code GET
 * /openapi.json} (this API's contract).
 */
record SiteRoutes(JobQueries queries) implements Route.Resource {
  private static final System.Logger LOG = System.getLogger(HttpApi.class.getName());

  @Override
  public List<Route> routes() {
    return List.of(
        new Route("GET", "/", Route.Access.ANYONE, null, c -> Dashboard.page()),
        new Route("GET", "/health", Route.Access.ANYONE, Set.of(), c -> health()),
        new Route(
            "GET",
            "/openapi.json",
            Route.Access.ANYONE,
            Set.of(),
            c -> OpenApiDocument.response()));
  }

  private ApiResponse health() {
    try {
      queries.ping();
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING, "health check: the database did not answer: " + e.getClass().getName());
      throw new ApiProblem(
          ApiProblem.Type.UNAVAILABLE,
          "The database did not answer \"select 1\"; check that it is running and reachable.",
          Map.of("Retry-After", "5"));
    }
    ObjectNode up = ApiJson.object();
    up.put("status", "up");
    return ApiJson.response(200, up);
  }
}
