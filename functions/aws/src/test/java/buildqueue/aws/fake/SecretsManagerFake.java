package buildqueue.aws.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;

/**
 * AWS Secrets Manager at the wire (JSON 1.1, {@code X-Amz-Target: secretsmanager.<Operation>}), as
 * far as our code reaches it: the worker role's password read by the Migrate function, and the
 * rotation protocol the rotation function runs.
 *
 * <p>What it keeps: secrets by ARN, each with versions (a {@code VersionId}, a value, staging
 * labels). Each label is on one version at most; moving {@code AWSCURRENT} moves {@code
 * AWSPREVIOUS} to the version it left. What it answers:
 *
 * <ul>
 *   <li>{@code GetSecretValue} by {@code VersionId} and/or {@code VersionStage} (default {@code
 *       AWSCURRENT}); a secret, version or label it does not hold, a version without a value (the
 *       one a rotation starts with), or an id and a label that name different versions, is {@code
 *       ResourceNotFoundException}.
 *   <li>{@code DescribeSecret}: {@code RotationEnabled} and {@code VersionIdsToStages}.
 *   <li>{@code PutSecretValue}: a new version under the {@code ClientRequestToken}, with the labels
 *       asked ({@code AWSCURRENT} if none); the same token with the same value again succeeds and
 *       changes nothing, with another value is {@code ResourceExistsException}.
 *   <li>{@code UpdateSecretVersionStage}: moving a label that another version carries needs that
 *       version as {@code RemoveFromVersionId}, else {@code InvalidParameterException}; a {@code
 *       MoveToVersionId} the secret lacks is {@code ResourceNotFoundException}.
 * </ul>
 *
 * {@link #startRotation} does what {@code RotateSecret} does before it calls the function: a new
 * version id labelled {@code AWSPENDING}, without a value. Any other operation is refused, so a new
 * call in the code fails here first. Errors are HTTP 400 with {@code __type} and {@code Message}.
 */
public final class SecretsManagerFake implements AutoCloseable {
  public static final String CURRENT = "AWSCURRENT";
  public static final String PENDING = "AWSPENDING";
  public static final String PREVIOUS = "AWSPREVIOUS";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpServer server;
  private final Map<String, Secret> secrets = new ConcurrentHashMap<>();

  /** One secret: its versions in creation order. Guarded by itself. */
  private static final class Secret {
    final String arn;
    final Map<String, Version> versions = new LinkedHashMap<>();
    boolean rotationEnabled;

    Secret(String arn) {
      this.arn = arn;
    }

    String name() {
      return arn.substring(arn.lastIndexOf(':') + 1);
    }

    Version carrying(String stage) {
      return versions.values().stream()
          .filter(v -> v.stages.contains(stage))
          .findFirst()
          .orElse(null);
    }

    /** Puts {@code stage} on {@code to} alone; moving AWSCURRENT moves AWSPREVIOUS where it was. */
    void move(String stage, Version to) {
      Version from = carrying(stage);
      if (from == to) {
        return;
      }
      if (from != null) {
        from.stages.remove(stage);
      }
      to.stages.add(stage);
      if (stage.equals(CURRENT) && from != null) {
        move(PREVIOUS, from);
      }
    }
  }

  private static final class Version {
    final String id;
    String value;
    final Set<String> stages = new LinkedHashSet<>();

    Version(String id, String value) {
      this.id = id;
      this.value = value;
    }
  }

  /** An error answer as Secrets Manager gives it. */
  private static final class ApiError extends RuntimeException {
    final String type;

    ApiError(String type, String message) {
      super(message, null, false, false);
      this.type = type;
    }
  }

  private SecretsManagerFake(HttpServer server) {
    this.server = server;
  }

  public static SecretsManagerFake start() {
    try {
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      SecretsManagerFake fake = new SecretsManagerFake(server);
      server.createContext("/", fake::handle);
      server.start();
      return fake;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Holds {@code secretString} under {@code arn} as its {@code AWSCURRENT} version: the first
   * version of a new secret, or a new one (as {@code PutSecretValue} without labels) of a secret it
   * holds.
   */
  public SecretsManagerFake put(String arn, String secretString) {
    Secret s = secrets.computeIfAbsent(arn, Secret::new);
    synchronized (s) {
      Version v = new Version(UUID.randomUUID().toString(), secretString);
      s.versions.put(v.id, v);
      s.move(CURRENT, v);
    }
    return this;
  }

  /**
   * What {@code RotateSecret} does before it invokes the rotation function: turns rotation on and
   * labels a new version id {@code AWSPENDING}, without a value yet. Returns that id, the {@code
   * ClientRequestToken} of every step.
   */
  public String startRotation(String arn) {
    Secret s = secret(arn);
    synchronized (s) {
      s.rotationEnabled = true;
      Version v = new Version(UUID.randomUUID().toString(), null);
      s.versions.put(v.id, v);
      s.move(PENDING, v);
      return v.id;
    }
  }

  /** The secret's labels by version id (versions with no label left out). */
  public Map<String, Set<String>> stages(String arn) {
    Secret s = secret(arn);
    synchronized (s) {
      Map<String, Set<String>> out = new TreeMap<>();
      s.versions.values().stream()
          .filter(v -> !v.stages.isEmpty())
          .forEach(v -> out.put(v.id, new TreeSet<>(v.stages)));
      return out;
    }
  }

  /** The value of the version that carries {@code stage}, or null. */
  public String value(String arn, String stage) {
    Secret s = secret(arn);
    synchronized (s) {
      Version v = s.carrying(stage);
      return v == null ? null : v.value;
    }
  }

  /** How many versions the secret has, with or without labels. */
  public int versionCount(String arn) {
    Secret s = secret(arn);
    synchronized (s) {
      return s.versions.size();
    }
  }

  /** A database login: the {@code username} and {@code password} of a secret's JSON. */
  public record Login(String username, String password) {
    @Override
    public String toString() {
      return "Login[username=" + username + ", password=<redacted>]";
    }
  }

  /**
   * The login the secret's {@code AWSCURRENT} version holds, as the Data API reads it for a request
   * that names the secret.
   */
  public Login currentLogin(String arn) {
    String value = value(arn, CURRENT);
    try {
      JsonNode json = value == null ? null : JSON.readTree(value);
      if (json == null
          || !json.path("username").isTextual()
          || !json.path("password").isTextual()) {
        throw new IllegalStateException("secret " + arn + " holds no username and password");
      }
      return new Login(json.get("username").asText(), json.get("password").asText());
    } catch (IOException e) {
      throw new IllegalStateException("secret " + arn + " is not JSON", e);
    }
  }

  public URI endpoint() {
    return URI.create(
        "http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort());
  }

  /** A real SDK client pointed at this fake. Close it. */
  public SecretsManagerClient newClient() {
    return SecretsManagerClient.builder()
        .region(Region.of(DataApiFake.REGION))
        .endpointOverride(endpoint())
        .httpClientBuilder(UrlConnectionHttpClient.builder())
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDFAKE", "fake-secret")))
        .build();
  }

  private Secret secret(String arn) {
    Secret s = secrets.get(arn);
    if (s == null) {
      throw new ApiError(
          "ResourceNotFoundException", "Secrets Manager can't find the specified secret.");
    }
    return s;
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String target = exchange.getRequestHeaders().getFirst("X-Amz-Target");
      JsonNode request = JSON.readTree(exchange.getRequestBody().readAllBytes());
      try {
        if (!"POST".equals(exchange.getRequestMethod())
            || target == null
            || !target.startsWith("secretsmanager.")) {
          throw new ApiError("UnknownOperationException", "not a Secrets Manager call: " + target);
        }
        String operation = target.substring("secretsmanager.".length());
        JsonNode answer =
            switch (operation) {
              case "GetSecretValue" -> getSecretValue(request);
              case "DescribeSecret" -> describeSecret(request);
              case "PutSecretValue" -> putSecretValue(request);
              case "UpdateSecretVersionStage" -> updateSecretVersionStage(request);
              default ->
                  throw new ApiError(
                      "UnknownOperationException", "the fake does not answer " + operation);
            };
        send(exchange, 200, answer);
      } catch (ApiError e) {
        send(
            exchange,
            400,
            JSON.createObjectNode().put("__type", e.type).put("Message", e.getMessage()));
      }
    }
  }

  private JsonNode getSecretValue(JsonNode request) {
    Secret s = secret(request.path("SecretId").asText(""));
    String id = request.path("VersionId").asText(null);
    String stage = request.path("VersionStage").asText(id == null ? CURRENT : null);
    synchronized (s) {
      Version v = id != null ? s.versions.get(id) : s.carrying(stage);
      if (v == null || v.value == null || (stage != null && !v.stages.contains(stage))) {
        throw new ApiError(
            "ResourceNotFoundException",
            "Secrets Manager can't find the specified secret value for "
                + (id != null ? "VersionId: " + id : "staging label: " + stage));
      }
      ObjectNode answer =
          JSON.createObjectNode()
              .put("ARN", s.arn)
              .put("Name", s.name())
              .put("SecretString", v.value)
              .put("VersionId", v.id)
              .put("CreatedDate", 1.7e9);
      ArrayNode stages = answer.putArray("VersionStages");
      v.stages.forEach(stages::add);
      return answer;
    }
  }

  private JsonNode describeSecret(JsonNode request) {
    Secret s = secret(request.path("SecretId").asText(""));
    synchronized (s) {
      ObjectNode answer =
          JSON.createObjectNode()
              .put("ARN", s.arn)
              .put("Name", s.name())
              .put("RotationEnabled", s.rotationEnabled);
      ObjectNode stages = answer.putObject("VersionIdsToStages");
      for (Version v : s.versions.values()) {
        if (!v.stages.isEmpty()) {
          ArrayNode a = stages.putArray(v.id);
          v.stages.forEach(a::add);
        }
      }
      return answer;
    }
  }

  private JsonNode putSecretValue(JsonNode request) {
    Secret s = secret(request.path("SecretId").asText(""));
    String token = request.path("ClientRequestToken").asText("");
    String value = request.path("SecretString").asText(null);
    if (token.length() < 32 || value == null) {
      throw new ApiError(
          "InvalidParameterException",
          "ClientRequestToken (32 to 64 characters) and SecretString are required");
    }
    List<String> labels = new ArrayList<>();
    request.path("VersionStages").forEach(l -> labels.add(l.asText()));
    if (labels.isEmpty()) {
      labels.add(CURRENT);
    }
    synchronized (s) {
      Version v = s.versions.get(token);
      if (v != null && v.value != null && !v.value.equals(value)) {
        throw new ApiError(
            "ResourceExistsException",
            "You can't modify an existing version, you can only create a new version.");
      }
      if (v == null) {
        v = new Version(token, value);
        s.versions.put(token, v);
      }
      v.value = value;
      for (String label : labels) {
        s.move(label, v);
      }
      ObjectNode answer =
          JSON.createObjectNode().put("ARN", s.arn).put("Name", s.name()).put("VersionId", v.id);
      ArrayNode stages = answer.putArray("VersionStages");
      v.stages.forEach(stages::add);
      return answer;
    }
  }

  private JsonNode updateSecretVersionStage(JsonNode request) {
    Secret s = secret(request.path("SecretId").asText(""));
    String stage = request.path("VersionStage").asText("");
    String moveTo = request.path("MoveToVersionId").asText(null);
    String removeFrom = request.path("RemoveFromVersionId").asText(null);
    if (stage.isEmpty()) {
      throw new ApiError("InvalidParameterException", "VersionStage is required");
    }
    synchronized (s) {
      Version carrier = s.carrying(stage);
      if (removeFrom != null && (carrier == null || !carrier.id.equals(removeFrom))) {
        throw new ApiError(
            "InvalidParameterException",
            "The staging label " + stage + " is not attached to version " + removeFrom + ".");
      }
      if (moveTo == null) {
        if (removeFrom == null) {
          throw new ApiError(
              "InvalidParameterException", "Specify MoveToVersionId, RemoveFromVersionId or both.");
        }
        carrier.stages.remove(stage);
      } else {
        Version to = s.versions.get(moveTo);
        if (to == null) {
          throw new ApiError(
              "ResourceNotFoundException",
              "Secrets Manager can't find the specified secret value for VersionId: " + moveTo);
        }
        if (carrier != null && carrier != to && removeFrom == null) {
          throw new ApiError(
              "InvalidParameterException",
              "The staging label "
                  + stage
                  + " is attached to version "
                  + carrier.id
                  + "; name it in RemoveFromVersionId to move the label.");
        }
        s.move(stage, to);
      }
      return JSON.createObjectNode().put("ARN", s.arn).put("Name", s.name());
    }
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
