package buildqueue.api;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.NotReadyGateway;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's retry of API Gateway's "function not invoked" answer (a SnapStart version idle
 * for 14 days answers {@code SnapStartNotReadyException} once, then is ready): the page's own block
 * of script, cut out between its markers, run under Node.js (its fetch) against a local server that
 * plays API Gateway. Skipped where {@code node} is not on the PATH.
 */
class DashboardNotReadyRetryTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
  private NotReadyGateway gateway;

  @BeforeEach
  void start() {
    gateway = NotReadyGateway.start(200, "{\"jobs\": []}");
  }

  @AfterEach
  void stop() {
    gateway.close();
  }

  /** The requests the gateway saw: method, URI and Authorization header. */
  private List<String> requests() {
    return gateway.requests().stream()
        .map(r -> r.method() + " " + r.uri() + " " + r.authorization())
        .toList();
  }

  /** The page's retry block, with stand-ins for the page's token, notices and sleep. */
  private JsonNode run() throws Exception {
    Assumptions.assumeTrue(nodeAvailable(), "needs node (Node.js 18 or later) on the PATH");
    String html;
    try (InputStream in = Dashboard.class.getResourceAsStream(Dashboard.RESOURCE)) {
      html = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    int begin = html.indexOf("// ---- not-ready retry (begin)");
    int end = html.indexOf("// ---- not-ready retry (end)");
    assertThat(begin).as("the retry block's markers").isPositive().isLessThan(end);
    String script =
        """
        const notices = [], waits = [];
        function token() { return "tok"; }
        function showNotice(text) { notices.push(text); }
        function sleep(ms) { waits.push(ms); return Promise.resolve(); }
        """
            + html.substring(begin, end)
            + """
        request(process.argv[2]).then(r => r.text().then(body =>
          console.log(JSON.stringify({status: r.status, body, waits, notices}))));
        """;
    Path file = dir.resolve("retry.js");
    Files.writeString(file, script);
    Process p =
        new ProcessBuilder("node", file.toString(), gateway.base() + "jobs")
            .redirectErrorStream(true)
            .start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(output).isZero();
    return JSON.readTree(output);
  }

  private static boolean nodeAvailable() {
    try {
      Process p = new ProcessBuilder("node", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException | InterruptedException e) {
      return false;
    }
  }

  @Test
  void a_read_answered_not_ready_once_is_asked_again_after_a_second_and_shows_the_answer()
      throws Exception {
    gateway.notReadyFor(1);

    JsonNode result = run();

    assertThat(result.get("status").asInt()).isEqualTo(200);
    assertThat(result.get("body").asText()).isEqualTo("{\"jobs\": []}");
    assertThat(requests()).containsExactly("GET /jobs Bearer tok", "GET /jobs Bearer tok");
    assertThat(result.get("waits").toString()).isEqualTo("[1000]");
    assertThat(result.get("notices").get(0).asText()).contains("starting up").contains("1 s");
  }

  @Test
  void the_asking_again_is_bounded_with_doubling_waits() throws Exception {
    gateway.notReadyFor(100);

    JsonNode result = run();

    assertThat(result.get("status").asInt()).isEqualTo(500);
    assertThat(requests()).hasSize(6);
    assertThat(result.get("waits").toString()).isEqualTo("[1000,2000,4000,8000,8000]");
  }

  @Test
  void the_apis_own_server_error_is_shown_at_once() throws Exception {
    gateway.answer(
        500,
        "{\"title\": \"Internal Server Error\", \"status\": 500, \"detail\": \"database down\"}");

    JsonNode result = run();

    assertThat(result.get("status").asInt()).isEqualTo(500);
    assertThat(requests()).hasSize(1);
    assertThat(result.get("waits").toString()).isEqualTo("[]");
  }
}
