package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

/** {@code usage}: what a user's jobs (or every user's) were billed (docs/architecture.md §4.8). */
record UsageCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        usage [<user>] [--from 2026-11-01] [--to 2026-12-01]
            What a user's jobs were billed in the range (default: this month, UTC): worker seconds,
            vCPU-seconds, GB-seconds and dollars at the server's prices; without a user, every user.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse(
            "usage", args, Cli.union(ApiConnection.FLAGS, "from", "to"), Set.of("json"));
    cl.atMostPositionals(1, "usage [<user>] [--from DATE] [--to DATE]");
    String user = cl.positionals().isEmpty() ? null : cl.positional(0, "a user id");
    StringBuilder query = new StringBuilder();
    for (String name : List.of("from", "to")) {
      if (cl.has(name)) {
        query
            .append(query.length() == 0 ? "?" : "&")
            .append(name)
            .append('=')
            .append(URLEncoder.encode(cl.get(name, ""), StandardCharsets.UTF_8));
      }
    }
    String path = (user == null ? "usage" : Cli.userPath(user) + "/usage") + query;
    ApiClient.Reply reply = Cli.accepted(ApiConnection.open(cli, cl, "cli", true).get(path));
    JsonNode r = reply.json();
    StringBuilder text = new StringBuilder();
    if (user == null) {
      text.append("from ")
          .append(r.path("from").asText())
          .append(" to ")
          .append(r.path("to").asText());
      for (JsonNode u : r.path("users")) {
        text.append('\n').append(line(u));
      }
      if (r.path("users").isEmpty()) {
        text.append("\nno jobs billed");
      }
    } else {
      text.append(line(r))
          .append(" (from ")
          .append(r.path("from").asText())
          .append(" to ")
          .append(r.path("to").asText())
          .append(')');
    }
    return cli.answer(cl, reply.text(), text.toString());
  }

  private static String line(JsonNode u) {
    JsonNode c = u.path("cost");
    if (c.isNull() || c.isMissingNode()) {
      return u.path("userId").asText() + ": nothing billed";
    }
    return u.path("userId").asText()
        + ": "
        + u.path("jobs").asLong()
        + " jobs, "
        + c.path("billedSeconds").asText()
        + " worker seconds, "
        + c.path("vcpuSeconds").asText()
        + " vCPU-s, "
        + c.path("gbSeconds").asText()
        + " GB-s, $"
        + c.path("usd").asText()
        + " ("
        + c.path("capacity").asText()
        + ")";
  }
}
