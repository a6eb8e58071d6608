package buildqueue.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's retry of API Gateway's "function not invoked" answer (a SnapStart version idle
 * for 14 days answers {@code SnapStartNotReadyException} once, then is ready): the page's own
 * block of script, cut out between its markers, run under Node.js (its fetch) against a local
 * server that plays API Gateway. Skipped where {@code node} is not on the PATH.
 */
class DashboardNotReadyRetryTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String NOT_INVOKED = "{\"message\":\"Internal Server Error\"}";

  @TempDir Path dir;
  private HttpServer server;
  private final AtomicInteger notReadyLeft = new AtomicInteger();
  private final List<String> requests = Collections.synchronizedList(new ArrayList<>());
  private volatile String okBody = "{\"jobs\": []}";
  private volatile int okStatus = 200;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      try (exchange) {
        requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI() + " "
            + exchange.getRequestHeaders().getFirst("Authorization"));
        boolean notReady = notReadyLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
        byte[] body = (notReady ? NOT_INVOKED : okBody).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(notReady ? 500 : okStatus, body.length);
        exchange.getResponseBody().write(body);
      }
    });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
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
    String script = """
        const notices = [], waits = [];
        function token() { return "tok"; }
        function showNotice(text) { notices.push(text); }
        function sleep(ms) { waits.push(ms); return Promise.resolve(); }
        """ + html.substring(begin, end) + """
        request(process.argv[2]).then(r => r.text().then(body =>
          console.log(JSON.stringify({status: r.status, body, waits, notices}))));
        """;
    Path file = dir.resolve("retry.js");
    Files.writeString(file, script);
    Process p = new ProcessBuilder("node", file.toString(), "http://127.0.0.1:" + server.getAddress().getPort() + "/jobs")
        .redirectErrorStream(true).start();
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
  void a_read_answered_not_ready_once_is_asked_again_after_a_second_and_shows_the_answer() throws Exception {
    notReadyLeft.set(1);

    JsonNode result = run();

    assertThat(result.get("status").asInt()).isEqualTo(200);
    assertThat(result.get("body").asText()).isEqualTo("{\"jobs\": []}");
    assertThat(requests).containsExactly("GET /jobs Bearer tok", "GET /jobs Bearer tok");
    assertThat(result.get("waits").toString()).isEqualTo("[1000]");
    assertThat(result.get("notices").get(0).asText()).contains("starting up").contains("1 s");
  }

  @Test
  void the_asking_again_is_bounded_with_doubling_waits() throws Exception {
    notReadyLeft.set(100);

    JsonNode result = run();

    assertThat(result.get("status").asInt()).isEqualTo(500);
    assertThat(requests).hasSize(6);
    assertThat(result.get("waits").toString()).isEqualTo("[1000,2000,4000,8000,8000]");
  }

  @Test
  void the_apis_own_server_error_is_shown_at_once() throws Exception {
    okStatus = 500;
    okBody = "{\"title\": \"Internal Server Error\", \"status\": 500, \"detail\": \"database down\"}";

    JsonNode result = run();

    assertThat(result.get("status").asInt()).isEqualTo(500);
    assertThat(requests).hasSize(1);
    assertThat(result.get("waits").toString()).isEqualTo("[]");
  }
}
