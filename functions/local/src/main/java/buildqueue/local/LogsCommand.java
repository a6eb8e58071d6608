package buildqueue.local;

import buildqueue.api.HttpApi;
import buildqueue.core.JobStatus;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * {@code logs}: prints the output the queue keeps of a job, and with {@code --follow} what comes.
 */
record LogsCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        logs <job-id> [--follow]
            Prints the output the queue keeps of a job (its last 60 KB); --follow prints new
            output as it comes until the job ends.
      """;

  /** How often {@code logs --follow} asks for new output. */
  static final Duration FOLLOW_INTERVAL = Duration.ofSeconds(1);

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("logs", args, ApiConnection.FLAGS, Set.of("follow"));
    String id = Cli.jobId(cl.positional(0, "a job id: logs <job-id> [--follow]"));
    cl.atMostPositionals(1, "logs <job-id> [--follow]");
    ApiClient api = ApiConnection.open(cli, cl, "cli", true);
    long since = 0;
    while (true) {
      ApiClient.Reply reply =
          Cli.accepted(api.get("jobs/" + id + "/log" + (since > 0 ? "?since=" + since : "")));
      long total = reply.header(HttpApi.LOG_TOTAL_BYTES).map(Long::parseLong).orElse(0L);
      long skipped = reply.header(HttpApi.LOG_SKIPPED_BYTES).map(Long::parseLong).orElse(0L);
      if (since > total) {
        cli.out.println("[buildqueue] the job started a new attempt; its output starts over");
      }
      if (skipped > 0) {
        cli.out.println(
            "[buildqueue] "
                + skipped
                + " earlier bytes are not kept here; see the job's log location ("
                + "buildqueue status "
                + id
                + ")");
      }
      cli.out.print(reply.text());
      cli.out.flush();
      since = total;
      String status = reply.header(HttpApi.JOB_STATUS).orElse("");
      if (!cl.has("follow") || JobStatus.of(status).finished()) {
        return Main.OK;
      }
      try {
        Thread.sleep(FOLLOW_INTERVAL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Main.OK;
      }
    }
  }
}
