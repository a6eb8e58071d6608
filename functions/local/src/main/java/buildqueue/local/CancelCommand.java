package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;

/**
 * {@code cancel}: cancels a job, at once if queued; a running one is stopped by its worker. With a
 * filter instead of an id, cancels every unfinished job it matches ({@code POST /jobs/cancel}, an
 * admin's), a batch per call until none remain.
 */
record CancelCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        cancel <job-id>
            Cancels a job: at once if queued; a running one is stopped within seconds.
        cancel [--user U] [--kind K] [--status queued|running|queued,running]
            Cancels every unfinished job matching all the filters given (at least one).
      """;

  private static final Set<String> FILTERS = Set.of("user", "kind", "status");

  @Override
  public int run(List<String> args) {
    Set<String> options = new java.util.HashSet<>(ApiConnection.FLAGS);
    options.addAll(FILTERS);
    CommandLine cl = CommandLine.parse("cancel", args, options, Set.of("json"));
    boolean filtered = FILTERS.stream().anyMatch(cl::has);
    if (filtered) {
      cl.atMostPositionals(
          0, "cancel [--user U] [--kind K] [--status S] (no job id with a filter)");
      return cancelMatching(cl);
    }
    String id =
        Cli.jobId(cl.positional(0, "a job id, or a filter: cancel <job-id> | cancel --user U ..."));
    cl.atMostPositionals(1, "cancel <job-id>");
    ApiClient.Reply reply = Cli.postToJob(cli, cl, id, "cancel");
    JsonNode job = reply.json();
    return cli.answer(
        cl,
        reply.text(),
        "job "
            + id
            + ": "
            + job.path("status").asText()
            + (job.path("cancelRequested").asBoolean()
                    && !"cancelled".equals(job.path("status").asText())
                ? " (cancel requested; its worker stops it within seconds)"
                : ""));
  }

  /**
   * Calls {@code POST /jobs/cancel} until no job matches (or a call finds only jobs another
   * transition holds): each call changes a bounded batch and says how many remain.
   */
  private int cancelMatching(CommandLine cl) {
    ObjectNode filter = Cli.JSON.createObjectNode();
    if (cl.has("user")) {
      filter.put("userId", cl.get("user", null));
    }
    if (cl.has("kind")) {
      filter.put("kind", cl.get("kind", null));
    }
    if (cl.has("status")) {
      ArrayNode statuses = filter.putArray("status");
      for (String s : cl.get("status", "").split(",", -1)) {
        statuses.add(s.trim());
      }
    }
    ApiClient api = ApiConnection.open(cli, cl, "cli", true);
    long cancelled = 0;
    long requested = 0;
    JsonNode last;
    do {
      last = Cli.accepted(api.post("jobs/cancel", filter)).json();
      cancelled += last.path("cancelledCount").asLong();
      requested += last.path("cancelRequestedCount").asLong();
    } while (last.path("more").asBoolean()
        && last.path("cancelledCount").asLong() + last.path("cancelRequestedCount").asLong() > 0);
    ObjectNode total = Cli.JSON.createObjectNode();
    total.put("cancelledCount", cancelled);
    total.put("cancelRequestedCount", requested);
    total.put("remaining", last.path("remaining").asLong());
    return cli.answer(
        cl,
        total.toString(),
        cancelled
            + " queued "
            + (cancelled == 1 ? "job" : "jobs")
            + " cancelled, "
            + requested
            + " running "
            + (requested == 1 ? "job" : "jobs")
            + " asked to stop"
            + (last.path("remaining").asLong() > 0
                ? "; " + last.path("remaining").asLong() + " still match (busy): run it again"
                : ""));
  }
}
