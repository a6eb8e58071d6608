package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * {@code artifacts}: lists what a job published, or with {@code --get} downloads one file (the
 * server's bytes locally, a presigned S3 URL's on AWS).
 */
record ArtifactsCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        artifacts <job-id> [--get <name>] [--out <file>]
            Lists the files a job published (name, bytes, sha256); --get downloads one, into
            --out (default: the name's last part, in the current directory).
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse(
            "artifacts", args, Cli.union(ApiConnection.FLAGS, "get", "out"), Set.of("json"));
    String id = Cli.jobId(cl.positional(0, "a job id: artifacts <job-id> [--get NAME]"));
    cl.atMostPositionals(1, "artifacts <job-id> [--get NAME] [--out FILE]");
    ApiClient api = ApiConnection.open(cli, cl, "cli", true);
    if (!cl.has("get")) {
      JsonNode list = Cli.accepted(api.get("jobs/" + id + "/artifacts")).json();
      StringBuilder text = new StringBuilder();
      JsonNode files = list.path("artifacts");
      if (files.isEmpty()) {
        text.append("job ")
            .append(id)
            .append(" (")
            .append(list.path("status").asText())
            .append(") has no artifacts");
      }
      for (JsonNode a : files) {
        text.append(
            String.format(
                "%-40s %12d  %s%n",
                a.path("name").asText(), a.path("bytes").asLong(), a.path("sha256").asText()));
      }
      return cli.answer(cl, list.toString(), text.toString().stripTrailing());
    }
    String name = cl.get("get", "");
    Path out = Path.of(cl.get("out", name.substring(name.lastIndexOf('/') + 1)));
    ApiClient.Reply refused =
        api.download(
            "jobs/"
                + id
                + "/artifacts/"
                + URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20"),
            out);
    if (refused != null) {
      throw new Cli.RefusedException(refused);
    }
    return cli.answer(
        cl,
        "{\"file\":" + Cli.JSON.valueToTree(out.toString()) + "}",
        "saved " + name + " to " + out);
  }
}
