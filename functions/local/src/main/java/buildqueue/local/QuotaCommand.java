package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;

/** {@code quota}: how many queued jobs a user may have at once, or the server's default. */
record QuotaCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        quota <user> <max-queued-jobs>|default
            Sets how many queued jobs a user may have at once, or gives them the server's default.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("quota", args, ApiConnection.FLAGS, Set.of("json"));
    String user = cl.positional(0, "a user id: quota <user> <max-queued-jobs>|default");
    String value = cl.positional(1, "a number or default: quota <user> <max-queued-jobs>|default");
    cl.atMostPositionals(2, "quota <user> <max-queued-jobs>|default");
    ObjectNode body = Cli.JSON.createObjectNode();
    if (value.equals("default")) {
      body.putNull("maxQueuedJobs");
    } else if (value.matches("[0-9]{1,9}")) {
      body.put("maxQueuedJobs", Integer.parseInt(value));
    } else {
      throw new CommandLine.UsageException(
          "say a whole number or default, not \""
              + value
              + "\": quota <user> <max-queued-jobs>|default");
    }
    ApiClient.Reply reply =
        Cli.accepted(ApiConnection.open(cli, cl, "cli", true).put(Cli.userPath(user), body));
    JsonNode r = reply.json();
    return cli.answer(
        cl,
        reply.text(),
        user
            + " may have "
            + r.path("maxQueuedJobs").asLong()
            + " queued jobs at once"
            + (r.path("maxQueuedJobsIsDefault").asBoolean() ? " (the server's default)" : ""));
  }
}
