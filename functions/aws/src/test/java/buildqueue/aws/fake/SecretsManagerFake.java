package buildqueue.aws.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;

/**
 * AWS Secrets Manager at the wire (JSON 1.1, {@code X-Amz-Target: secretsmanager.<Operation>}), as
 * far as our code reaches it: {@code GetSecretValue} of a secret by ARN. A secret it does not hold
 * is {@code ResourceNotFoundException} (HTTP 400, "Secrets Manager can't find the specified
 * secret."); any other operation is refused, so a new call in the code fails here first.
 */
public final class SecretsManagerFake implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpServer server;
  private final Map<String, String> secrets = new ConcurrentHashMap<>();

  private SecretsManagerFake(HttpServer server) {
    this.server = server;
  }

  public static SecretsManagerFake start() {
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      SecretsManagerFake fake = new SecretsManagerFake(server);
      server.createContext("/", fake::handle);
      server.start();
      return fake;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Holds {@code secretString} under {@code arn}. */
  public SecretsManagerFake put(String arn, String secretString) {
    secrets.put(arn, secretString);
    return this;
  }

  public URI endpoint() {
    return URI.create("http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort());
  }

  /** A real SDK client pointed at this fake. Close it. */
  public SecretsManagerClient newClient() {
    return SecretsManagerClient.builder()
        .region(Region.of(DataApiFake.REGION))
        .endpointOverride(endpoint())
        .httpClientBuilder(UrlConnectionHttpClient.builder())
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDFAKE", "fake-secret")))
        .build();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String target = exchange.getRequestHeaders().getFirst("X-Amz-Target");
      JsonNode request = JSON.readTree(exchange.getRequestBody().readAllBytes());
      if (!"POST".equals(exchange.getRequestMethod()) || !"secretsmanager.GetSecretValue".equals(target)) {
        send(exchange, 400, error("UnknownOperationException", "the fake answers GetSecretValue only, not " + target));
        return;
      }
      String id = request.path("SecretId").asText("");
      String value = secrets.get(id);
      if (value == null) {
        send(exchange, 400, error("ResourceNotFoundException", "Secrets Manager can't find the specified secret."));
        return;
      }
      ObjectNode answer = JSON.createObjectNode()
          .put("ARN", id)
          .put("Name", id.substring(id.lastIndexOf(':') + 1))
          .put("SecretString", value)
          .put("VersionId", "00000000-0000-0000-0000-000000000001")
          .put("CreatedDate", 1.7e9);
      answer.putArray("VersionStages").add("AWSCURRENT");
      send(exchange, 200, answer);
    }
  }

  private static ObjectNode error(String type, String message) {
    return JSON.createObjectNode().put("__type", type).put("Message", message);
  }

  private static void send(HttpExchange exchange, int status, JsonNode body) throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(body);
    exchange.getResponseHeaders().set("Content-Type", "application/x-amz-json-1.1");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
