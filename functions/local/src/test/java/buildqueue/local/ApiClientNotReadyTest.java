package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.testing.NotReadyGateway;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
  private NotReadyGateway gateway;
  private final List<Duration> pauses = new ArrayList<>();
  private final List<String> notices = new ArrayList<>();

  @BeforeEach
  void start() {
    gateway = NotReadyGateway.start(200, "{\"id\": 5, \"status\": \"queued\"}");
  }

  @AfterEach
  void stop() {
    gateway.close();
  }

  private URI base() {
    return gateway.base();
  }

  /** The requests the gateway saw: method and path. */
  private List<String> requests() {
    return gateway.requests().stream().map(r -> r.method() + " " + r.uri().getPath()).toList();
  }

  private ApiClient client() {
    return new ApiClient(base(), "t", ApiClient.NotReadyRetry.STANDARD, pauses::add, notices::add);
  }

  @Test
  void a_read_answered_not_ready_once_is_sent_again_after_a_second_and_succeeds() {
    gateway.notReadyFor(1);

    ApiClient.Reply reply = client().get("jobs/5");

    assertThat(reply.status()).isEqualTo(200);
    assertThat(reply.json().path("id").asLong()).isEqualTo(5);
    assertThat(requests()).containsExactly("GET /jobs/5", "GET /jobs/5");
    assertThat(pauses).containsExactly(Duration.ofSeconds(1));
    assertThat(notices)
        .singleElement()
        .asString()
        .contains("SnapStart")
        .contains("again in 1000 ms");
  }

  @Test
  void a_submission_with_an_idempotency_key_and_a_put_are_sent_again() {
    gateway.notReadyFor(2);
    assertThat(
            client()
                .postIdempotent("jobs", JSON.createObjectNode().put("idempotencyKey", "k"))
                .status())
        .isEqualTo(200);
    gateway.notReadyFor(1);
    assertThat(client().put("users/bob", JSON.createObjectNode()).status()).isEqualTo(200);

    assertThat(requests())
        .containsExactly(
            "POST /jobs", "POST /jobs", "POST /jobs", "PUT /users/bob", "PUT /users/bob");
    assertThat(pauses)
        .containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(1));
  }

  @Test
  void a_post_the_api_does_not_make_idempotent_is_never_sent_twice_and_says_why() {
    gateway.notReadyFor(1);

    assertThatThrownBy(() -> client().post("jobs", JSON.createObjectNode().put("kind", "demo")))
        .isInstanceOf(ApiClient.NotReadyException.class)
        .hasMessageContaining("could not invoke the API's function")
        .hasMessageContaining("Not sent again")
        .hasMessageContaining("--key");
    assertThat(requests()).containsExactly("POST /jobs");
    assertThat(pauses).isEmpty();
  }

  @Test
  void the_retries_are_bounded_and_their_waits_double_up_to_a_cap() {
    gateway.notReadyFor(100);

    assertThatThrownBy(() -> client().get("jobs"))
        .isInstanceOf(ApiClient.NotReadyException.class)
        .hasMessageContaining("after 6 attempts over 23 s");
    assertThat(requests()).hasSize(6);
    assertThat(pauses)
        .containsExactly(
            Duration.ofSeconds(1),
            Duration.ofSeconds(2),
            Duration.ofSeconds(4),
            Duration.ofSeconds(8),
            Duration.ofSeconds(8));
  }

  @Test
  void the_apis_own_server_error_is_not_taken_for_it() {
    gateway.answer(
        500,
        "{\"type\": \"about:blank\", \"title\": \"Internal Server Error\", \"status\": 500, \"detail\": \"database down\"}");

    ApiClient.Reply reply = client().get("jobs");

    assertThat(reply.status()).isEqualTo(500);
    assertThat(requests()).hasSize(1);
  }

  @Test
  void the_cli_reaches_a_deployed_api_with_its_token_and_tells_what_it_waits_for() {
    gateway.notReadyFor(1);
    gateway.answer(200, "{\"jobs\": [], \"lanes\": []}");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Main main =
        new Main(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8),
            Map.of("USER", "tester", ApiConnection.API_TOKEN_ENV, "jwt"));

    int code = main.run(new String[] {"submit", "demo", "--api-url", base().toString()});

    assertThat(code).isEqualTo(Main.UNREACHABLE);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("Not sent again").contains("--key");
    assertThat(requests()).containsExactly("POST /jobs");
  }
}
