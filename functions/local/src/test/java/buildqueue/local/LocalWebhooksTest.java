package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.WebhookReceiver;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Webhooks from the local server (docs/architecture.md "Webhooks"): the tick publishes a job's
 * events, its survey finds deliveries due, and the server's deliverer sends them to a receiver on
 * this machine, which the operator's setting allows; without the setting the loopback is refused.
 */
@ExtendWith(PostgresExtension.class)
class LocalWebhooksTest {
  @TempDir Path dataDir;

  private static JsonNode register(TestServer server, String url) {
    ApiClient.Reply reply =
        server
            .client("operator", true)
            .put("webhooks/ci", TestServer.JSON.createObjectNode().put("url", url));
    assertThat(reply.status()).as(reply.text()).isEqualTo(201);
    return reply.json();
  }

  @Test
  void a_jobs_events_reach_a_local_receiver_signed_when_the_operator_allows_private_targets(
      TestDatabase db) throws Exception {
    LocalSettings settings = TestServer.settings(db, dataDir).withWebhooksAllowPrivateTargets(true);
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging();
        TestServer server = TestServer.start(db, settings)) {
      String secret = register(server, receiver.url("/hook")).get("secret").asText();
      long job = server.submitDemo("alice", 2, 10);
      Await.until(
          "the job's succeeded event at the receiver",
          Duration.ofSeconds(60),
          () ->
              receiver.received().stream()
                  .anyMatch(
                      r ->
                          r.bodyText().contains("\"type\":\"job.succeeded\"")
                              && r.bodyText().contains("\"jobId\":" + job)));
      List<WebhookReceiver.Received> got = receiver.received();
      for (WebhookReceiver.Received r : got) {
        assertThat(StandardWebhooks.verifies(secret, r)).as(r.bodyText()).isTrue();
      }
    }
  }

  @Test
  void without_the_setting_a_loopback_endpoint_is_refused_and_its_log_says_so(TestDatabase db) {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging();
        TestServer server = TestServer.start(db, dataDir)) {
      register(server, receiver.url("/hook"));
      server.submitDemo("alice", 1, 10);
      Await.until(
          "a refused attempt in the delivery log",
          Duration.ofSeconds(60),
          () -> {
            JsonNode log = server.client("operator", true).get("webhooks/ci/deliveries").json();
            for (JsonNode d : log.get("deliveries")) {
              if (d.get("attempts").asInt() > 0) {
                return d.get("lastError").asText().startsWith("refused:");
              }
            }
            return false;
          });
      assertThat(receiver.received()).isEmpty();
    }
  }
}
