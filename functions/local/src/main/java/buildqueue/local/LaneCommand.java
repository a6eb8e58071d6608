package buildqueue.local;

import java.util.List;
import java.util.Set;

/** {@code lane pause|resume} (admin): stops a lane from starting jobs, or lets it go on. */
record LaneCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        lane pause|resume <lane>
            Pauses a lane (shared, or user:<id>): running jobs finish, nothing new starts, submissions
            still queue. resume starts its queued jobs at once (admin).
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("lane", args, ApiConnection.FLAGS, Set.of("json"));
    String action = cl.positional(0, "pause or resume: lane pause|resume <lane>");
    String lane = cl.positional(1, "a lane: lane pause|resume <lane>");
    cl.atMostPositionals(2, "lane pause|resume <lane>");
    if (!action.equals("pause") && !action.equals("resume")) {
      throw new CommandLine.UsageException(
          "say pause or resume, not \"" + action + "\": lane pause|resume <lane>");
    }
    ApiClient.Reply reply =
        Cli.accepted(
            ApiConnection.open(cli, cl, "cli", true)
                .put(
                    "lanes/"
                        + java.net.URLEncoder.encode(lane, java.nio.charset.StandardCharsets.UTF_8),
                    Cli.JSON.createObjectNode().put("paused", action.equals("pause"))));
    return cli.answer(cl, reply.text(), Render.lanes(Cli.JSON.createArrayNode().add(reply.json())));
  }
}
