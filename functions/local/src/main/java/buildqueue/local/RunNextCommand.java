package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;

/** {@code run-next} (admin): puts a queued job at the head of its lane. */
record RunNextCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        run-next <job-id>
            Puts a queued job at the head of its lane, before retries and every user's turn (admin).
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("run-next", args, ApiConnection.FLAGS, Set.of("json"));
    String id = Cli.jobId(cl.positional(0, "a job id: run-next <job-id>"));
    cl.atMostPositionals(1, "run-next <job-id>");
    ApiClient.Reply reply =
        Cli.accepted(
            ApiConnection.open(cli, cl, "cli", true)
                .post("jobs/" + id + "/run-next", Cli.JSON.createObjectNode()));
    JsonNode job = reply.json();
    return cli.answer(
        cl,
        reply.text(),
        "job "
            + id
            + ": "
            + (job.path("status").asText().equals("queued")
                ? "next in lane " + job.path("lane").asText()
                : job.path("status").asText() + " (a slot was free)"));
  }
}
