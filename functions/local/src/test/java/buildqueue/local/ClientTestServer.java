package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Params;
import buildqueue.testing.Await;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The server the generated clients' programs run against ({@link TypeScriptClientTest}, {@link
 * JavaClientTest}): a {@link TestServer} with a catalogue kind whose program publishes artifacts,
 * and webhook deliveries allowed to a receiver on the loopback, which the server refuses unless the
 * operator allows private targets (README, {@code --webhooks-allow-private-targets}).
 */
final class ClientTestServer {
  /** The catalogue kind whose program writes {@link #ARTIFACTS}. */
  static final String ARTIFACTS_KIND = "three-artifacts";

  /** What its program publishes, by name as listed: a subdirectory's file and a binary one. */
  static final List<String> ARTIFACTS = List.of("dist/numbers.txt", "random.bin", "report.txt");

  static final String REPORT = "attempt 1\n";
  static final int RANDOM_BYTES = 70_000;

  private static final String PROGRAM =
      """
      #!/bin/sh
      set -eu
      echo "attempt $BUILDQUEUE_ATTEMPT" > "$BUILDQUEUE_ARTIFACTS/report.txt"
      mkdir -p "$BUILDQUEUE_ARTIFACTS/dist"
      seq 1 1000 > "$BUILDQUEUE_ARTIFACTS/dist/numbers.txt"
      head -c %d /dev/urandom > "$BUILDQUEUE_ARTIFACTS/random.bin"
      """
          .formatted(RANDOM_BYTES);

  private ClientTestServer() {}

  /**
   * A dead delivery for a program to replay: endpoint {@code name} gets {@code user}'s enqueued
   * events at {@code url}, whose receiver must refuse them; one job of the user is submitted, and
   * once the receiver refused its delivery, the delivery is made dead. Returns its id.
   */
  static long deadDelivery(TestServer server, String name, String url, String user) {
    ApiClient operator = server.client("operator", true);
    ObjectNode body = TestServer.JSON.createObjectNode().put("url", url).put("userId", user);
    body.putArray("eventTypes").add("enqueued");
    ApiClient.Reply made = operator.put("webhooks/" + name, body);
    assertThat(made.status()).as(made.text()).isEqualTo(201);
    server.submitDemo(user, 1, 10);
    long[] id = {0};
    Await.until(
        "an attempt of " + name + "'s delivery, refused",
        TestServer.JOB_TIMEOUT,
        () -> {
          JsonNode log = operator.get("webhooks/" + name + "/deliveries").json().get("deliveries");
          id[0] = log.path(0).path("id").asLong();
          return log.size() == 1 && log.get(0).get("attempts").asInt() >= 1;
        });
    // A delivery dies after 24 hours of refusals, which a test cannot wait for: it is left as the
    // deliverer leaves it then, between two attempts (neither due nor claimed, so no attempt in
    // flight records over it).
    Await.until(
        "delivery " + id[0] + " made dead between two attempts",
        TestServer.JOB_TIMEOUT,
        () ->
            server
                    .db
                    .jdbc()
                    .update(
                        "update build_webhook_delivery set status = 'dead', next_attempt_at = null"
                            + " where id = :id and status = 'pending' and claimed_until is null"
                            + " and next_attempt_at > now()",
                        Params.of("id", id[0]))
                == 1);
    return id[0];
  }

  /** Starts the server; its program and catalogue are written to {@code programs}. */
  static TestServer start(TestDatabase db, Path dataDir, Path programs) {
    try {
      Path sh = Files.writeString(programs.resolve("artifacts.sh"), PROGRAM);
      Path kinds =
          Files.writeString(
              programs.resolve("kinds.json"),
              """
              {"kinds": {"%s": {"command": ["sh", "%s"], "timeout": "1m"}}}
              """
                  .formatted(ARTIFACTS_KIND, sh));
      return TestServer.start(
          db,
          TestServer.settings(db, dataDir)
              .withKindsFile(kinds)
              .withWebhooksAllowPrivateTargets(true));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
