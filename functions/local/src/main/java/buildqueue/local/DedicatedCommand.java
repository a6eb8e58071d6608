package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;

/** {@code dedicated}: gives a user a dedicated worker (their own lane) or takes it away. */
record DedicatedCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        dedicated <user> on|off
            Gives a user a dedicated worker (their own lane) or takes it away.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("dedicated", args, ApiConnection.FLAGS, Set.of("json"));
    cl.atMostPositionals(2, "dedicated <user> on|off");
    String user = cl.positional(0, "a user id: dedicated <user> on|off");
    String onOff = cl.positional(1, "on or off: dedicated <user> on|off");
    if (!onOff.equals("on") && !onOff.equals("off")) {
      throw new CommandLine.UsageException(
          "say on or off, not \"" + onOff + "\": dedicated <user> on|off");
    }
    ObjectNode body = Cli.JSON.createObjectNode().put("dedicatedWorker", onOff.equals("on"));
    ApiClient.Reply reply =
        Cli.accepted(ApiConnection.open(cli, cl, "cli", true).put(Cli.userPath(user), body));
    JsonNode r = reply.json();
    long moved = r.path("movedCount").asLong();
    return cli.answer(
        cl,
        reply.text(),
        user
            + (r.path("dedicatedWorker").asBoolean()
                ? " now has a dedicated worker"
                : " now shares workers")
            + ": new jobs wait in lane "
            + r.path("lane").asText()
            + (moved == 0
                ? ""
                : "; " + moved + " queued job" + (moved == 1 ? "" : "s") + " moved there"));
  }
}
