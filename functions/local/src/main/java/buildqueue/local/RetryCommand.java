package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;

/** {@code retry}: a failed or cancelled job again, as a new job linked to it. */
record RetryCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        retry <job-id>
            Submits a failed or cancelled job's kind and payload again, for its user, as a new job.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("retry", args, ApiConnection.FLAGS, Set.of("json"));
    String id = Cli.jobId(cl.positional(0, "a job id: retry <job-id>"));
    cl.atMostPositionals(1, "retry <job-id>");
    ApiClient.Reply reply = Cli.postToJob(cli, cl, id, "retry");
    JsonNode job = reply.json();
    return cli.answer(
        cl,
        reply.text(),
        "job "
            + id
            + " retried as job "
            + job.path("id").asText()
            + " ("
            + job.path("kind").asText()
            + ") for "
            + job.path("userId").asText()
            + ": "
            + job.path("status").asText());
  }
}
