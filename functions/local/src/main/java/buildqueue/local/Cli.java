package buildqueue.local;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the CLI's commands share: where they print, the environment they read, and how an API's
 * reply becomes a command's output or its exit code.
 */
final class Cli {
  static final ObjectMapper JSON = new ObjectMapper();

  final PrintStream out;
  final PrintStream err;
  final Map<String, String> env;

  Cli(PrintStream out, PrintStream err, Map<String, String> env) {
    this.out = out;
    this.err = err;
    this.env = env;
  }

  /** The API refused a request: the command ends with the problem it answered. */
  static final class RefusedException extends RuntimeException {
    final ApiClient.Reply reply;

    RefusedException(ApiClient.Reply reply) {
      super("HTTP " + reply.status(), null, false, false);
      this.reply = reply;
    }
  }

  /**
   * {@code POST /jobs/{id}/<action>} with an empty JSON body, as the CLI's admin: the accepted
   * reply (a refusal ends the command with its problem).
   */
  static ApiClient.Reply postToJob(Cli cli, CommandLine cl, String id, String action) {
    return postAsAdmin(cli, cl, "jobs/" + id + "/" + action);
  }

  /**
   * {@code POST <path>} with an empty JSON body, as the CLI's admin: the accepted reply (a refusal
   * ends the command with its problem).
   */
  static ApiClient.Reply postAsAdmin(Cli cli, CommandLine cl, String path) {
    return accepted(ApiConnection.open(cli, cl, "cli", true).post(path, JSON.createObjectNode()));
  }

  /** The reply if the API accepted the request; a refusal ends the command with its problem. */
  static ApiClient.Reply accepted(ApiClient.Reply reply) {
    if (!reply.ok()) {
      throw new RefusedException(reply);
    }
    return reply;
  }

  /**
   * Prints a command's result: the API's JSON with {@code --json}, otherwise the text for people.
   */
  int answer(CommandLine cl, String json, String text) {
    out.println(cl.has("json") ? json : text);
    return Main.OK;
  }

  /** Prints the problem the API answered a refused request with. */
  int problem(ApiClient.Reply reply) {
    JsonNode p = reply.json();
    String detail = p.path("detail").asText(reply.text());
    String title = p.path("title").asText("");
    err.println(
        "buildqueue: "
            + (title.isEmpty() ? "" : title + " ")
            + "(HTTP "
            + reply.status()
            + "): "
            + detail);
    return Main.API_ERROR;
  }

  /** The user a command acts for when none is named: the login's. */
  String defaultUser() {
    return env.getOrDefault("USER", System.getProperty("user.name", "local"));
  }

  /** A payload given on the command line; not JSON is a usage error. */
  static JsonNode payload(String text) {
    try {
      return JSON.readTree(text);
    } catch (JsonProcessingException e) {
      String why = e.getOriginalMessage();
      int detail = why.indexOf(" (");
      throw new CommandLine.UsageException(
          "the payload is not valid JSON ("
              + (detail < 0 ? why : why.substring(0, detail))
              + "); quote it, e.g. '{\"steps\": 5}'");
    }
  }

  static String jobId(String text) {
    return id(text, "job");
  }

  /** A job's or a worker's id ({@code what}) given on the command line: a whole number. */
  static String id(String text, String what) {
    if (!text.matches("[0-9]{1,18}")) {
      throw new CommandLine.UsageException(
          "a " + what + " id is a whole number, not \"" + text + "\"");
    }
    return text;
  }

  /** {@code users/{id}}, the id encoded as a path segment. */
  static String userPath(String user) {
    return "users/" + URLEncoder.encode(user, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static Set<String> union(Set<String> base, String... more) {
    Set<String> all = new HashSet<>(base);
    all.addAll(List.of(more));
    return all;
  }
}
