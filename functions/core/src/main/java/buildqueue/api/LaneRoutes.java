package buildqueue.api;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.core.JobQueries.LaneView;
import buildqueue.core.LaneHistory;
import buildqueue.core.Lanes;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code GET /lanes} (admins): every lane that matters now with its slots, first queued jobs and
 * whether it is paused, a page at a time; {@code PUT /lanes/{lane}} (admins) pauses or resumes one;
 * {@code GET /lanes/history} (admins): each lane's queue depth and waits over the last hours.
 */
record LaneRoutes(BuildQueue queue, JobQueries queries) implements Route.Resource {
  private static final String PAUSE_EXAMPLE = "{\"paused\": true}";

  @Override
  public List<Route> routes() {
    return List.of(
        new Route("GET", "/lanes", Route.Access.ADMIN, Set.of("queuedLimit", "after"), this::lanes),
        new Route("GET", "/lanes/history", Route.Access.ADMIN, Set.of("hours"), this::history),
        new Route("PUT", "/lanes/{lane}", Route.Access.ADMIN, Set.of(), this::putLane));
  }

  /**
   * Pauses a lane (running jobs finish; nothing is dispatched or chained; enqueue still queues) or
   * resumes it, which dispatches it in the same request, as an enqueue does. Answers the lane as
   * {@code GET /lanes} shows it.
   */
  private ApiResponse putLane(Call call) {
    String lane = lane(call.params().get("lane"), "The lane in the path");
    ObjectNode body = JsonBodies.object(call.request(), PAUSE_EXAMPLE);
    JsonBodies.onlyFields(body, Set.of("paused"), "PUT /lanes/{lane}");
    JsonNode paused = body.get("paused");
    if (paused == null || !paused.isBoolean()) {
      throw ApiProblem.invalid(
          "The field \"paused\" must be true (pause the lane: running jobs finish, nothing new"
              + " starts) or false (resume it), not "
              + (paused == null ? "missing" : JsonBodies.kindOf(paused))
              + "; send e.g. "
              + PAUSE_EXAMPLE
              + ".");
    }
    if (paused.booleanValue()) {
      queue.pauseLane(lane, call.caller().userId());
    } else {
      queue.resumeLane(lane);
    }
    LaneView view =
        queries
            .lane(lane, HttpApi.DEFAULT_QUEUED_LIMIT)
            .orElseGet(
                () ->
                    new LaneView(
                        lane,
                        Lanes.capacity(lane, queue.config()),
                        0,
                        List.of(),
                        List.of(),
                        Optional.empty()));
    return ApiJson.response(200, ApiJson.lane(view));
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
    return lane(raw, "Query parameter \"after\"");
  }

  /** A lane's name: "shared" or "user:" and a user id. */
  private static String lane(String raw, String what) {
    String user = raw.startsWith("user:") ? raw.substring("user:".length()) : raw;
    if (!raw.equals("shared") && !(raw.startsWith("user:") && Ids.usable(user))) {
      throw ApiProblem.invalid(
          what
              + " must be a lane (\"shared\" or \"user:\" and a user id), "
              + "as GET /lanes names it, not \""
              + JsonBodies.printable(raw)
              + "\".");
    }
    return raw;
  }
}
