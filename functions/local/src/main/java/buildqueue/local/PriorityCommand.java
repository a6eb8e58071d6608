package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;

/** {@code priority}: changes a queued job's priority among its owner's queued jobs. */
record PriorityCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        priority <job-id> low|normal|high [--user <you>]
            Changes a queued job's priority: it orders your own queued jobs, never other users' turns.
      """;

  private static final Set<String> VALUES = Set.of("low", "normal", "high");

  /** A priority the user may choose; anything else is a usage error. */
  static String priority(String value) {
    if (!VALUES.contains(value)) {
      throw new CommandLine.UsageException(
          "a priority is low, normal or high, not \"" + value + "\"");
    }
    return value;
  }

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse("priority", args, Cli.union(ApiConnection.FLAGS, "user"), Set.of("json"));
    String id = Cli.jobId(cl.positional(0, "a job id: priority <job-id> low|normal|high"));
    String value = priority(cl.positional(1, "a priority: priority <job-id> low|normal|high"));
    cl.atMostPositionals(2, "priority <job-id> low|normal|high");
    if (cl.has("api-url") && cl.has("user")) {
      throw new CommandLine.UsageException(
          "with --api-url the token's subject is the user; drop --user");
    }
    ApiClient.Reply reply =
        Cli.accepted(
            ApiConnection.open(cli, cl, cl.get("user", cli.defaultUser()), false)
                .patch("jobs/" + id, Cli.JSON.createObjectNode().put("priority", value)));
    JsonNode job = reply.json();
    return cli.answer(
        cl,
        reply.text(),
        "job "
            + id
            + ": priority "
            + job.path("priority").asText()
            + (job.path("position").isNull()
                ? ""
                : ", " + job.path("position").asInt() + " in its lane"));
  }
}
