package buildqueue.aws.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.eventbridge.EventBridgeClient;

/**
 * EventBridge's PutEvents on localhost, speaking the wire protocol the SDK client uses (AWS JSON
 * 1.1, {@code X-Amz-Target: AWSEvents.PutEvents}). Records every entry it receives; a test makes
 * chosen entries fail (a partial failure, answered per entry with an ErrorCode) or the next calls
 * fail whole (HTTP 500).
 */
public final class EventBridgeFake implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One entry as received, and whether it was accepted. */
  public record Received(
      String eventBusName,
      String source,
      String detailType,
      JsonNode detail,
      String time,
      boolean accepted) {}

  private final HttpServer server;
  private final List<Received> received = Collections.synchronizedList(new ArrayList<>());
  private final List<Integer> callSizes = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger failWholeCalls = new AtomicInteger();
  private volatile Predicate<JsonNode> refuse = detail -> false;

  /** Rules on the default bus by name, and whether each is enabled. */
  private final java.util.Map<String, Boolean> rules =
      new java.util.concurrent.ConcurrentHashMap<>();

  private final List<String> ruleCalls = Collections.synchronizedList(new ArrayList<>());

  public EventBridgeFake() {
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    server.createContext("/", this::handle);
    server.start();
  }

  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  /** A real SDK client pointed at this fake, without SDK retries so tests see each call. */
  public EventBridgeClient client() {
    return EventBridgeClient.builder()
        .endpointOverride(endpoint())
        .region(Region.EU_WEST_1)
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDTEST", "secret")))
        .httpClient(UrlConnectionHttpClient.create())
        .overrideConfiguration(c -> c.retryStrategy(AwsRetryStrategy.doNotRetry()))
        .build();
  }

  /** A rule on the default bus, enabled, as the stack's template creates the tick's. */
  public void rule(String name) {
    rules.put(name, true);
  }

  /** Whether the rule is enabled; null when there is no such rule. */
  public Boolean enabled(String name) {
    return rules.get(name);
  }

  /** Every EnableRule and DisableRule call in order, as "EnableRule name". */
  public List<String> ruleCalls() {
    synchronized (ruleCalls) {
      return List.copyOf(ruleCalls);
    }
  }

  /**
   * EnableRule and DisableRule as EventBridge answers them: an empty 200 (each is idempotent), or,
   * for a rule that does not exist on the bus, a 400 ResourceNotFoundException "Rule NAME does not
   * exist on EventBus default." (the only one of their documented errors the queue can reach:
   * ConcurrentModificationException, InternalException, ManagedRuleException are not).
   */
  private void ruleState(HttpExchange exchange, String target, JsonNode request)
      throws IOException {
    String name = request.path("Name").asText(null);
    String bus = request.path("EventBusName").asText("default");
    if (name == null || name.isEmpty() || name.length() > 64) {
      respond(
          exchange,
          400,
          error(
              "ValidationException",
              "1 validation error detected: Value at 'name' failed to satisfy constraint"));
      return;
    }
    if (!bus.equals("default") || !rules.containsKey(name)) {
      respond(
          exchange,
          400,
          error(
              "ResourceNotFoundException",
              "Rule " + name + " does not exist on EventBus " + bus + "."));
      return;
    }
    boolean enable = target.equals("AWSEvents.EnableRule");
    rules.put(name, enable);
    ruleCalls.add((enable ? "EnableRule " : "DisableRule ") + name);
    respond(exchange, 200, "{}");
  }

  /** Entries whose detail matches are refused with an InternalFailure (until changed). */
  public void refuse(Predicate<JsonNode> which) {
    this.refuse = which;
  }

  /** The next {@code n} calls fail with HTTP 500. */
  public void failNextCalls(int n) {
    failWholeCalls.set(n);
  }

  public List<Received> received() {
    synchronized (received) {
      return List.copyOf(received);
    }
  }

  public List<Received> accepted() {
    return received().stream().filter(Received::accepted).toList();
  }

  /** How many entries each PutEvents call carried. */
  public List<Integer> callSizes() {
    synchronized (callSizes) {
      return List.copyOf(callSizes);
    }
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] body = exchange.getRequestBody().readAllBytes();
      String target = exchange.getRequestHeaders().getFirst("X-Amz-Target");
      if ("AWSEvents.EnableRule".equals(target) || "AWSEvents.DisableRule".equals(target)) {
        if (failWholeCalls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
          respond(exchange, 500, error("InternalException", "injected failure"));
          return;
        }
        ruleState(exchange, target, JSON.readTree(body));
        return;
      }
      if (!"AWSEvents.PutEvents".equals(target)) {
        respond(exchange, 400, error("UnknownOperationException", "unsupported target " + target));
        return;
      }
      if (failWholeCalls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        respond(exchange, 500, error("InternalException", "injected failure"));
        return;
      }
      JsonNode request = JSON.readTree(body);
      ArrayNode entries = (ArrayNode) request.get("Entries");
      callSizes.add(entries.size());
      ObjectNode response = JSON.createObjectNode();
      ArrayNode results = response.putArray("Entries");
      int failed = 0;
      for (JsonNode e : entries) {
        JsonNode detail = JSON.readTree(e.path("Detail").asText("{}"));
        boolean accept = !refuse.test(detail);
        String time = e.hasNonNull("Time") ? e.get("Time").asText() : null;
        received.add(
            new Received(
                e.path("EventBusName").asText(null),
                e.path("Source").asText(null),
                e.path("DetailType").asText(null),
                detail,
                time,
                accept));
        if (accept) {
          results.addObject().put("EventId", UUID.randomUUID().toString());
        } else {
          failed++;
          results
              .addObject()
              .put("ErrorCode", "InternalFailure")
              .put("ErrorMessage", "injected entry failure");
        }
      }
      response.put("FailedEntryCount", failed);
      respond(exchange, 200, response.toString());
    }
  }

  private static String error(String type, String message) {
    return JSON.createObjectNode().put("__type", type).put("message", message).toString();
  }

  private static void respond(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/x-amz-json-1.1");
    exchange.getResponseHeaders().set("x-amzn-RequestId", UUID.randomUUID().toString());
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
