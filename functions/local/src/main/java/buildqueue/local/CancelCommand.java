package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;

/** {@code cancel}: cancels a job, at once if queued; a running one is stopped by its worker. */
record CancelCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        cancel <job-id>
            Cancels a job: at once if queued; a running one is stopped within seconds.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("cancel", args, ApiConnection.FLAGS, Set.of("json"));
    String id = Cli.jobId(cl.positional(0, "a job id: cancel <job-id>"));
    cl.atMostPositionals(1, "cancel <job-id>");
    ApiClient.Reply reply =
        Cli.accepted(
            ApiConnection.open(cli, cl, "cli", true)
                .post("jobs/" + id + "/cancel", Cli.JSON.createObjectNode()));
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
}
