package buildqueue.api;

import buildqueue.core.JobQueries;
import buildqueue.core.LaneHistory;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;

/**
 * {@code GET /lanes} (admins): every lane that matters now with its slots and first queued jobs, a
 * page at a time; {@code GET /lanes/history} (admins): each lane's queue depth and waits over the
 * last hours.
 */
record LaneRoutes(JobQueries queries) implements Route.Resource {
  @Override
  public List<Route> routes() {
    return List.of(
        new Route("GET", "/lanes", Route.Access.ADMIN, Set.of("queuedLimit", "after"), this::lanes),
        new Route("GET", "/lanes/history", Route.Access.ADMIN, Set.of("hours"), this::history));
  }

  /**
   * Each lane's queue depth and waits over the last hours, in buckets, for the dashboard's plots.
   */
  private ApiResponse history(Call call) {
    int hours = call.wholeNumber("hours", LaneHistory.DEFAULT_HOURS, 1, LaneHistory.MAX_HOURS);
    LaneHistory.History h = queries.history(hours);
    ObjectNode out = ApiJson.object();
    out.put("to", ApiJson.time(h.to()));
    out.put("bucketSeconds", h.bucket().toSeconds());
    ArrayNode lanes = out.putArray("lanes");
    for (LaneHistory.LaneSeries series : h.lanes()) {
      ObjectNode lane = lanes.addObject();
      lane.put("lane", series.lane());
      ArrayNode buckets = lane.putArray("buckets");
      for (LaneHistory.Bucket b : series.buckets()) {
        ObjectNode o = buckets.addObject();
        o.put("end", ApiJson.time(b.end()));
        o.put("queued", b.queued());
        o.put("started", b.started());
        o.put("waitP50Seconds", b.waitP50());
        o.put("waitP90Seconds", b.waitP90());
      }
    }
    return ApiJson.response(200, out);
  }

  private ApiResponse lanes(Call call) {
    int limit =
        call.wholeNumber("queuedLimit", HttpApi.DEFAULT_QUEUED_LIMIT, 0, HttpApi.MAX_LIST_LIMIT);
    String after = call.single("after").map(LaneRoutes::laneCursor).orElse(null);
    JobQueries.LanePage page = queries.lanes(after, limit);
    ObjectNode out = ApiJson.object();
    ArrayNode list = out.putArray("lanes");
    page.lanes().forEach(l -> list.add(ApiJson.lane(l)));
    out.put(
        "next",
        page.nextAfter()
            .map(next -> "/lanes?queuedLimit=" + limit + "&after=" + QueryString.encode(next))
            .orElse(null));
    return ApiJson.response(200, out);
  }

  /** A lanes page cursor: a lane name, as a previous page's {@code next} link names it. */
  private static String laneCursor(String raw) {
    String user = raw.startsWith("user:") ? raw.substring("user:".length()) : raw;
    if (!raw.equals("shared") && !(raw.startsWith("user:") && Ids.usable(user))) {
      throw ApiProblem.invalid(
          "Query parameter \"after\" must be a lane (\"shared\" or \"user:\" and a user id), "
              + "as in the \"next\" link of the previous page, not \""
              + JsonBodies.printable(raw)
              + "\".");
    }
    return raw;
  }
}
