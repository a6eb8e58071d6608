package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;

/** {@code submit}: submits a job and says where it stands, and what it superseded. */
record SubmitCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        submit <kind> [payload-json] [--user <you>] [--key <idempotency-key>] [--supersede-key <key>]
               [--priority low|normal|high]
            Submits a job, e.g.: submit demo '{"steps": 5, "stepMillis": 500}'
            --supersede-key cancels your queued jobs with the same key and stops the running one.
            --priority orders your own queued jobs (normal by default); never other users' turns.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse(
            "submit",
            args,
            Cli.union(ApiConnection.FLAGS, "user", "key", "supersede-key", "priority"),
            Set.of("json"));
    String kind = cl.positional(0, "a job kind: submit <kind> [payload-json]");
    cl.atMostPositionals(
        2, "submit <kind> [payload-json] [--user U] [--key K] [--supersede-key S]");
    ObjectNode body = Cli.JSON.createObjectNode().put("kind", kind);
    if (cl.positionals().size() > 1) {
      body.set("payload", Cli.payload(cl.positionals().get(1)));
    }
    if (cl.has("key")) {
      body.put("idempotencyKey", cl.get("key", null));
    }
    if (cl.has("supersede-key")) {
      body.put("supersedeKey", cl.get("supersede-key", null));
    }
    if (cl.has("priority")) {
      body.put("priority", PriorityCommand.priority(cl.get("priority", null)));
    }
    if (cl.has("api-url") && cl.has("user")) {
      throw new CommandLine.UsageException(
          "with --api-url the token's subject is the user; drop --user");
    }
    String user = cl.get("user", cli.defaultUser());
    ApiClient api = ApiConnection.open(cli, cl, user, false);
    // With a key the API answers a repeat with the job it made, so a submission refused before the
    // function ran may be sent again.
    ApiClient.Reply reply =
        Cli.accepted(cl.has("key") ? api.postIdempotent("jobs", body) : api.post("jobs", body));
    JsonNode job = reply.json();
    JsonNode superseded = job.path("superseded");
    String supersededLine = "";
    if (superseded.isObject()) {
      long cancelled = superseded.path("cancelledCount").asLong();
      JsonNode stopping = superseded.path("cancelRequested");
      supersededLine =
          System.lineSeparator()
              + "  superseded: "
              + (cancelled == 0
                  ? "no queued jobs"
                  : cancelled
                      + " queued job"
                      + (cancelled == 1 ? "" : "s")
                      + " cancelled ("
                      + ids(superseded.path("cancelled"))
                      + (superseded.path("cancelled").size() < cancelled ? ", ..." : "")
                      + ")")
              + (stopping.isEmpty() ? "" : "; asked running job " + ids(stopping) + " to stop");
    }
    return cli.answer(
        cl,
        reply.text(),
        (reply.status() == 201 ? "submitted job " : "already submitted with this key: job ")
            + job.path("id").asLong()
            + " ("
            + job.path("kind").asText()
            + ") for "
            + job.path("userId").asText()
            + " in lane "
            + job.path("lane").asText()
            + ": "
            + job.path("status").asText()
            + (job.path("position").isNull() ? "" : ", position " + job.path("position").asInt())
            + supersededLine);
  }

  private static String ids(JsonNode array) {
    StringBuilder s = new StringBuilder();
    array.forEach(id -> s.append(s.length() == 0 ? "" : ", ").append(id.asLong()));
    return s.toString();
  }
}
