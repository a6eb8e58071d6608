package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

/** {@code status}: one job with its history, or the lanes and the most recent jobs. */
record StatusCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        status [job-id] [--user <user>]
            One job with its history, or the lanes and the most recent jobs.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse("status", args, Cli.union(ApiConnection.FLAGS, "user"), Set.of("json"));
    cl.atMostPositionals(1, "status [job-id] [--user U]");
    ApiClient api = ApiConnection.open(cli, cl, "cli", true);
    if (!cl.positionals().isEmpty()) {
      String id = Cli.jobId(cl.positionals().get(0));
      JsonNode job = Cli.accepted(api.get("jobs/" + id)).json();
      JsonNode events = Cli.accepted(api.get("jobs/" + id + "/events")).json().path("events");
      ObjectNode both = Cli.JSON.createObjectNode();
      both.set("job", job);
      both.set("events", events);
      return cli.answer(cl, both.toString(), Render.jobDetail(job, events).stripTrailing());
    }
    JsonNode lanes = Cli.accepted(api.get("lanes")).json().path("lanes");
    String jobsPath =
        "jobs?limit=20"
            + (cl.has("user")
                ? "&userId=" + URLEncoder.encode(cl.get("user", ""), StandardCharsets.UTF_8)
                : "");
    JsonNode list = Cli.accepted(api.get(jobsPath)).json().path("jobs");
    ObjectNode both = Cli.JSON.createObjectNode();
    both.set("lanes", lanes);
    both.set("jobs", list);
    StringBuilder text = new StringBuilder(Render.lanes(lanes)).append(System.lineSeparator());
    text.append(
        list.isEmpty()
            ? "no jobs yet"
            : "recent jobs"
                + (cl.has("user") ? " of " + cl.get("user", "") : "")
                + ", newest first:");
    list.forEach(j -> text.append(System.lineSeparator()).append("  ").append(Render.jobLine(j)));
    return cli.answer(cl, both.toString(), text.toString());
  }
}
