package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The API Gateway answer for a function Lambda would not invoke (a SnapStart version idle for 14
 * days answers {@code SnapStartNotReadyException} once, then is ready): idempotent requests are
 * sent again with doubling waits, others never twice. A local server plays API Gateway.
 */
class ApiClientNotReadyTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** What API Gateway's HTTP API sends when the Lambda invoke is refused. */
  private static final String NOT_INVOKED = "{\"message\":\"Internal Server Error\"}";

  private HttpServer server;
  private final AtomicInteger notReadyLeft = new AtomicInteger();
  private final List<String> requests = Collections.synchronizedList(new ArrayList<>());
  private final List<Duration> pauses = new ArrayList<>();
  private final List<String> notices = new ArrayList<>();
  private volatile int okStatus = 200;
  private volatile String okBody = "{\"id\": 5, \"status\": \"queued\"}";

  @BeforeEach
  void start() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      try (exchange) {
        exchange.getRequestBody().readAllBytes();
        requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath());
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

  private URI base() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
  }

  private ApiClient client() {
    return new ApiClient(base(), "t", ApiClient.NotReadyRetry.STANDARD, pauses::add, notices::add);
  }

  @Test
  void a_read_answered_not_ready_once_is_sent_again_after_a_second_and_succeeds() {
    notReadyLeft.set(1);

    ApiClient.Reply reply = client().get("jobs/5");

    assertThat(reply.status()).isEqualTo(200);
    assertThat(reply.json().path("id").asLong()).isEqualTo(5);
    assertThat(requests).containsExactly("GET /jobs/5", "GET /jobs/5");
    assertThat(pauses).containsExactly(Duration.ofSeconds(1));
    assertThat(notices).singleElement().asString().contains("SnapStart").contains("again in 1000 ms");
  }

  @Test
  void a_submission_with_an_idempotency_key_and_a_put_are_sent_again() {
    notReadyLeft.set(2);
    assertThat(client().postIdempotent("jobs", JSON.createObjectNode().put("idempotencyKey", "k")).status())
        .isEqualTo(200);
    notReadyLeft.set(1);
    assertThat(client().put("users/bob", JSON.createObjectNode()).status()).isEqualTo(200);

    assertThat(requests).containsExactly("POST /jobs", "POST /jobs", "POST /jobs", "PUT /users/bob", "PUT /users/bob");
    assertThat(pauses).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(1));
  }

  @Test
  void a_post_the_api_does_not_make_idempotent_is_never_sent_twice_and_says_why() {
    notReadyLeft.set(1);

    assertThatThrownBy(() -> client().post("jobs", JSON.createObjectNode().put("kind", "demo")))
        .isInstanceOf(ApiClient.NotReadyException.class)
        .hasMessageContaining("could not invoke the API's function")
        .hasMessageContaining("Not sent again")
        .hasMessageContaining("--key");
    assertThat(requests).containsExactly("POST /jobs");
    assertThat(pauses).isEmpty();
  }

  @Test
  void the_retries_are_bounded_and_their_waits_double_up_to_a_cap() {
    notReadyLeft.set(100);

    assertThatThrownBy(() -> client().get("jobs"))
        .isInstanceOf(ApiClient.NotReadyException.class).hasMessageContaining("after 6 attempts over 23 s");
    assertThat(requests).hasSize(6);
    assertThat(pauses).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4),
        Duration.ofSeconds(8), Duration.ofSeconds(8));
  }

  @Test
  void the_apis_own_server_error_is_not_taken_for_it() {
    okStatus = 500;
    okBody = "{\"type\": \"about:blank\", \"title\": \"Internal Server Error\", \"status\": 500, \"detail\": \"database down\"}";

    ApiClient.Reply reply = client().get("jobs");

    assertThat(reply.status()).isEqualTo(500);
    assertThat(requests).hasSize(1);
  }

  @Test
  void the_cli_reaches_a_deployed_api_with_its_token_and_tells_what_it_waits_for() {
    notReadyLeft.set(1);
    okBody = "{\"jobs\": [], \"lanes\": []}";
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Main main = new Main(new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
        Map.of("USER", "tester", ApiConnection.API_TOKEN_ENV, "jwt"));

    int code = main.run(new String[] {"submit", "demo", "--api-url", base().toString()});

    assertThat(code).isEqualTo(Main.UNREACHABLE);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("Not sent again").contains("--key");
    assertThat(requests).containsExactly("POST /jobs");
  }
}
