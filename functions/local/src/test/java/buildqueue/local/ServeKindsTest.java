package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code serve --kinds FILE}: a bad catalogue starts nothing; a good one is what the API accepts
 * and the workers load.
 */
@ExtendWith(PostgresExtension.class)
class ServeKindsTest {
  private static final String RENDER =
      """
      {"kinds": {"render-article": {"command": ["node", "/opt/render/index.js"], "timeout": "15m",
        "payloadSchema": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"},
          "pages": {"type": "array", "items": {"type": "object", "properties": {"title": {"type": "string"}}}}}}}}}
      """;

  @TempDir Path dir;
  private String out;
  private String err;

  private int serve(String... args) {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    Main main =
        new Main(
            new PrintStream(o, true, StandardCharsets.UTF_8),
            new PrintStream(e, true, StandardCharsets.UTF_8),
            Map.of("USER", "tester"));
    // A serve that started would block until the JVM stops: the timeout turns that into a failure.
    int code = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> main.run(args));
    out = o.toString(StandardCharsets.UTF_8);
    err = e.toString(StandardCharsets.UTF_8);
    return code;
  }

  private Path write(String name, String json) throws Exception {
    Path file = dir.resolve(name);
    Files.writeString(file, json);
    return file;
  }

  @Test
  void
      serve_with_a_bad_catalogue_exits_non_zero_naming_the_file_the_kind_and_the_key_and_starts_nothing()
          throws Exception {
    Path bad =
        write(
            "bad.json",
            "{\"kinds\": {\"render\": {\"command\": [\"node\", \"r.js\"], \"timeout\": \"15 minutes\"}}}");
    Path dataDir = dir.resolve("data");

    int code =
        serve("serve", "--kinds", bad.toString(), "--data-dir", dataDir.toString(), "--port", "0");

    assertThat(code).isEqualTo(Main.API_ERROR);
    assertThat(err)
        .contains("the server did not start")
        .contains(bad.toString())
        .contains("kind \"render\"")
        .contains("\"timeout\"")
        .contains("a duration such as \"90s\", \"15m\" or \"1h30m\"");
    assertThat(out).doesNotContain("buildqueue is running");
    assertThat(dataDir).as("nothing started: no data directory, no database").doesNotExist();
  }

  @Test
  void serve_with_a_missing_catalogue_exits_non_zero_naming_it() {
    Path missing = dir.resolve("nope.json");

    int code =
        serve(
            "serve",
            "--kinds",
            missing.toString(),
            "--data-dir",
            dir.resolve("data").toString(),
            "--port",
            "0");

    assertThat(code).isEqualTo(Main.API_ERROR);
    assertThat(err).contains(missing.toString()).contains("no such file");
  }

  @Test
  void a_timeout_past_the_worker_lifetime_is_refused_until_the_lifetime_is_raised()
      throws Exception {
    Path file =
        write(
            "long.json",
            "{\"kinds\": {\"render\": {\"command\": [\"node\", \"r.js\"], \"timeout\": \"90m\"}}}");

    int code =
        serve(
            "serve",
            "--kinds",
            file.toString(),
            "--data-dir",
            dir.resolve("data").toString(),
            "--port",
            "0");

    assertThat(code).isEqualTo(Main.API_ERROR);
    assertThat(err)
        .contains("kind \"render\"")
        .contains("\"timeout\" is 1h30m")
        .contains("serve --worker-lifetime");
  }

  @Test
  void with_a_good_catalogue_the_api_accepts_its_kinds_and_a_worker_process_loads_them(
      TestDatabase db) throws Exception {
    Path file = write("kinds.json", RENDER);
    try (TestServer server =
        TestServer.start(db, TestServer.settings(db, dir.resolve("data")).withKindsFile(file))) {
      assertThat(server.runtime.kinds().kinds())
          .extracting(k -> k.name())
          .containsExactly("render-article");
      // Workers load the server's copy of what it checked: an edit now takes effect at the next
      // start.
      Files.writeString(file, "{\"kinds\": \"broken by an edit while the server runs\"}");
      assertThat(dir.resolve("data").resolve(LocalRuntime.WORKER_KINDS_FILE)).hasContent(RENDER);

      ObjectNode bad = TestServer.JSON.createObjectNode().put("kind", "render-article");
      bad.putObject("payload").putArray("pages").addObject().put("title", 3);
      ApiClient.Reply refused = server.client("ada", false).post("jobs", bad);
      assertThat(refused.status()).isEqualTo(400);
      assertThat(refused.json().path("detail").asText())
          .contains("$.title: is required but missing")
          .contains("$.pages[0].title: integer found, string expected");
      assertThat(server.db.jdbc().query("select id from build_job")).isEmpty();

      ObjectNode good = TestServer.JSON.createObjectNode().put("kind", "render-article");
      good.putObject("payload").put("title", "Hello");
      ApiClient.Reply accepted = server.client("ada", false).post("jobs", good);
      assertThat(accepted.status()).as(accepted.text()).isEqualTo(201);
      long id = accepted.json().path("id").asLong();

      // The worker process ran the kind from the catalogue it was given (a worker without it would
      // say it has no handler for the kind): its program is not on this machine, and says so.
      server.awaitStatus(id, "failed");
      assertThat(server.jobRow(id).string("error"))
          .doesNotContain("no handler")
          .containsAnyOf("node", "/opt/render");
    }
  }
}
