package buildqueue.aws.fake;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * AWS Lambda's Invoke at the wire, as far as the tick reaches it: the REST-JSON protocol the SDK v2
 * {@code LambdaClient} speaks, {@code POST /2015-03-31/functions/{FunctionName}/invocations} with
 * the payload as the body (Lambda API Reference, Invoke).
 *
 * <ul>
 *   <li>{@code FunctionName} as a name, a partial ARN ({@code 123456789012:function:name}) or an
 *       ARN, each with an optional {@code :qualifier} (a version or alias), or the {@code
 *       Qualifier} query parameter; a qualifier in both that differs is 400 {@code
 *       InvalidParameterValueException}.
 *   <li>{@code X-Amz-Invocation-Type: Event} (asynchronous): the event is queued and answered 202
 *       with an empty body; {@code DryRun} is 204; {@code RequestResponse} (the default) is 501
 *       here, since the fake runs no function and the queue never waits for one.
 *   <li>An asynchronous payload over {@link #MAX_ASYNC_PAYLOAD} bytes is 413 {@code
 *       RequestTooLargeException}, a synchronous one over {@link #MAX_SYNC_PAYLOAD}: the fake takes
 *       the stricter of the two asynchronous limits AWS has documented (256 KB; the Invoke
 *       reference now says 1 MB), so a payload it accepts AWS accepts too.
 *   <li>A function, or an alias of it, that the fake does not hold is 404 {@code
 *       ResourceNotFoundException} "Function not found: ARN".
 *   <li>A request without a SigV4 {@code Authorization} header with the fake's access key is 403.
 * </ul>
 *
 * Errors are REST-JSON: the status, {@code x-amzn-ErrorType} naming the exception, and a body
 * {@code {"Type": "User", "message": ...}} (the SDK maps the type to its exception classes: {@code
 * ResourceNotFoundException}, {@code RequestTooLargeException}, else {@code LambdaException}).
 */
public final class LambdaFake implements AutoCloseable {
  public static final String REGION = "eu-west-1";
  public static final String ACCOUNT = "111122223333";
  public static final String ACCESS_KEY = "AKIDLAMBDAFAKE";

  /** The asynchronous payload limit the fake enforces: 256 KB (262,144 bytes). */
  public static final int MAX_ASYNC_PAYLOAD = 256 * 1024;

  /** The synchronous payload limit: 6 MB (6,291,456 bytes). */
  public static final int MAX_SYNC_PAYLOAD = 6 * 1024 * 1024;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PATH_PREFIX = "/2015-03-31/functions/";
  private static final Pattern FUNCTION_NAME =
      Pattern.compile(
          "(?:arn:aws[a-zA-Z-]*:lambda:([a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\\d):)?"
              + "(?:(\\d{12}):)?(?:function:)?([a-zA-Z0-9_.-]{1,64})"
              + "(?::(\\$LATEST|[a-zA-Z0-9_-]+))?");

  /** One accepted invocation: the function, the qualifier it ran under, its type and payload. */
  public record Invocation(String function, String qualifier, String type, byte[] payload) {
    public String payloadText() {
      return new String(payload, StandardCharsets.UTF_8);
    }
  }

  private final HttpServer server;

  /** Functions by name, each with the qualifiers (versions, aliases) it has. */
  private final Map<String, Set<String>> functions = new ConcurrentHashMap<>();

  private final List<Invocation> invocations = new CopyOnWriteArrayList<>();
  private final AtomicInteger failNext = new AtomicInteger();

  private LambdaFake(HttpServer server) {
    this.server = server;
  }

  /** Starts the fake on a free loopback port. */
  public static LambdaFake start() {
    System.setProperty("sun.net.httpserver.nodelay", "true");
    try {
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      LambdaFake fake = new LambdaFake(server);
      server.createContext("/", fake::handle);
      server.start();
      return fake;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  /** The credentials the fake accepts: tests give them to the SDK. */
  public static StaticCredentialsProvider credentials() {
    return StaticCredentialsProvider.create(
        AwsBasicCredentials.create(ACCESS_KEY, "lambda-fake-secret"));
  }

  /** A function with {@code $LATEST} and the given aliases, as a stack's template creates one. */
  public LambdaFake function(String name, String... aliases) {
    Set<String> qualifiers = ConcurrentHashMap.newKeySet();
    qualifiers.add("$LATEST");
    qualifiers.addAll(List.of(aliases));
    functions.put(name, qualifiers);
    return this;
  }

  /** The ARN of {@code name}, qualified when {@code qualifier} is not null. */
  public static String arn(String name, String qualifier) {
    return "arn:aws:lambda:"
        + REGION
        + ":"
        + ACCOUNT
        + ":function:"
        + name
        + (qualifier == null ? "" : ":" + qualifier);
  }

  /** The next {@code n} requests fail with 500 {@code ServiceException} (retryable). */
  public void failNext(int n) {
    failNext.set(n);
  }

  /** Every invocation accepted, in order. */
  public List<Invocation> invocations() {
    return List.copyOf(invocations);
  }

  /** The accepted invocations of {@code name}. */
  public List<Invocation> invocations(String name) {
    return invocations().stream().filter(i -> i.function().equals(name)).toList();
  }

  private static final class LambdaError extends RuntimeException {
    final int status;
    final String type;

    LambdaError(int status, String type, String message) {
      super(message, null, false, false);
      this.status = status;
      this.type = type;
    }
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      try {
        Invocation invocation = invoke(exchange);
        exchange.getResponseHeaders().set("x-amzn-RequestId", UUID.randomUUID().toString());
        if (invocation == null) {
          exchange.sendResponseHeaders(204, -1); // DryRun
          return;
        }
        invocations.add(invocation);
        exchange.sendResponseHeaders(202, -1);
      } catch (LambdaError e) {
        byte[] body =
            JSON.createObjectNode()
                .put("Type", e.status >= 500 ? "Service" : "User")
                .put("message", e.getMessage())
                .toString()
                .getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.getResponseHeaders().set("x-amzn-ErrorType", e.type);
        exchange.getResponseHeaders().set("x-amzn-RequestId", UUID.randomUUID().toString());
        exchange.sendResponseHeaders(e.status, body.length);
        exchange.getResponseBody().write(body);
      }
    }
  }

  /** The accepted invocation, null for a dry run; throws the error Lambda would answer. */
  private Invocation invoke(HttpExchange exchange) throws IOException {
    String auth = exchange.getRequestHeaders().getFirst("Authorization");
    if (auth == null || !auth.startsWith("AWS4-HMAC-SHA256 Credential=" + ACCESS_KEY + "/")) {
      throw new LambdaError(
          403,
          "UnrecognizedClientException",
          "The security token included in the request is invalid.");
    }
    if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      throw new LambdaError(500, "ServiceException", "injected failure");
    }
    String rawPath = exchange.getRequestURI().getRawPath();
    if (!exchange.getRequestMethod().equals("POST")
        || !rawPath.startsWith(PATH_PREFIX)
        || !rawPath.endsWith("/invocations")) {
      throw new LambdaError(
          501,
          "NotImplemented",
          "the fake speaks only Invoke, not " + exchange.getRequestMethod() + " " + rawPath);
    }
    String name =
        URLDecoder.decode(
            rawPath.substring(PATH_PREFIX.length(), rawPath.length() - "/invocations".length()),
            StandardCharsets.UTF_8);
    Matcher m = FUNCTION_NAME.matcher(name);
    if (name.length() > 256 || !m.matches()) {
      throw new LambdaError(
          400,
          "ValidationException",
          "1 validation error detected: Value '"
              + name
              + "' at 'functionName' failed to satisfy constraint: Member must satisfy regular"
              + " expression pattern: "
              + FUNCTION_NAME.pattern());
    }
    String function = m.group(3);
    String qualifier = m.group(4);
    String queried = query(exchange.getRequestURI().getRawQuery(), "Qualifier");
    if (queried != null && qualifier != null && !queried.equals(qualifier)) {
      throw new LambdaError(
          400,
          "InvalidParameterValueException",
          "The derived qualifier from the function name does not match the specified qualifier.");
    }
    String runs = qualifier != null ? qualifier : queried != null ? queried : "$LATEST";
    boolean elsewhere =
        (m.group(1) != null && !m.group(1).equals(REGION))
            || (m.group(2) != null && !m.group(2).equals(ACCOUNT));
    Set<String> qualifiers = functions.get(function);
    if (elsewhere || qualifiers == null || !qualifiers.contains(runs)) {
      throw new LambdaError(
          404,
          "ResourceNotFoundException",
          "Function not found: " + arn(function, runs.equals("$LATEST") ? null : runs));
    }
    String type = exchange.getRequestHeaders().getFirst("X-Amz-Invocation-Type");
    type = type == null ? "RequestResponse" : type;
    byte[] payload = readAtMost(exchange.getRequestBody(), MAX_SYNC_PAYLOAD + 1);
    switch (type) {
      case "Event" -> {
        if (payload.length > MAX_ASYNC_PAYLOAD) {
          throw tooLarge(MAX_ASYNC_PAYLOAD);
        }
        return new Invocation(function, runs, type, payload);
      }
      case "DryRun" -> {
        return null;
      }
      case "RequestResponse" -> {
        if (payload.length > MAX_SYNC_PAYLOAD) {
          throw tooLarge(MAX_SYNC_PAYLOAD);
        }
        throw new LambdaError(
            501, "NotImplemented", "the fake runs no function: only Event and DryRun");
      }
      default ->
          throw new LambdaError(
              400,
              "ValidationException",
              "1 validation error detected: Value '"
                  + type
                  + "' at 'invocationType' failed to satisfy constraint: Member must satisfy enum"
                  + " value set: [Event, RequestResponse, DryRun]");
    }
  }

  private static LambdaError tooLarge(int limit) {
    return new LambdaError(
        413,
        "RequestTooLargeException",
        "Request must be smaller than " + limit + " bytes for the Invoke operation");
  }

  private static byte[] readAtMost(InputStream in, int max) throws IOException {
    byte[] bytes = in.readNBytes(max);
    in.transferTo(java.io.OutputStream.nullOutputStream());
    return bytes;
  }

  private static String query(String rawQuery, String name) {
    if (rawQuery == null) {
      return null;
    }
    for (String pair : rawQuery.split("&")) {
      String[] kv = pair.split("=", 2);
      if (URLDecoder.decode(kv[0], StandardCharsets.UTF_8).equals(name)) {
        return kv.length < 2 ? "" : URLDecoder.decode(kv[1], StandardCharsets.UTF_8);
      }
    }
    return null;
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
