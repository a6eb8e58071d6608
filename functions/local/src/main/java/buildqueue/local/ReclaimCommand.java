package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;

/**
 * {@code reclaim}: a simulated Fargate Spot reclaim of a running Spot worker ({@code POST
 * /workers/{id}/reclaim}, the local server's only), so the reclaim path runs end to end here.
 */
record ReclaimCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        reclaim <worker-id>
            Local server only: reclaims a running Spot worker as Fargate Spot does (SIGTERM, then
            SIGKILL after serve --reclaim-grace); its job goes back to its lane with its progress,
            its recoveries unchanged. status shows worker ids (a job's, and the lanes').
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("reclaim", args, ApiConnection.FLAGS, Set.of("json"));
    String id = Cli.id(cl.positional(0, "a worker id: reclaim <worker-id>"), "worker");
    cl.atMostPositionals(1, "reclaim <worker-id>");
    ApiClient.Reply reply = Cli.postAsAdmin(cli, cl, "workers/" + id + "/reclaim");
    JsonNode r = reply.json();
    return cli.answer(
        cl,
        reply.text(),
        "worker "
            + id
            + " ("
            + r.path("taskId").asText()
            + "): reclaimed as Fargate Spot does; SIGTERM sent, SIGKILL after "
            + r.path("graceSeconds").asText()
            + " s if it still runs");
  }
}
