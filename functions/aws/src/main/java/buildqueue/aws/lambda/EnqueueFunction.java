package buildqueue.aws.lambda;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.Caller;
import buildqueue.api.TokenLifetime;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.metrics.Metrics;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPEvent;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPResponse;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The HTTP API behind API Gateway (HTTP API, payload format 2.0): turns the event into an {@link
 * ApiRequest} for the shared {@code HttpApi} and its answer into the Lambda response. API Gateway's
 * JWT authorizer has already verified the token; the caller is its {@code sub} claim, an admin when
 * the scope {@value Caller#ADMIN_SCOPE} appears in the {@code scope} or {@code scp} claim or in the
 * authorizer's scopes. Routes without an authorizer ({@code /health}) arrive without a caller.
 *
 * <p>After a request that may have written (anything but GET and HEAD), the job events it wrote are
 * published to EventBridge; if that fails, the tick publishes them.
 *
 * <p>It takes the event as a stream and binds it (and writes its answer) with its own JSON mapper,
 * not the runtime's: the runtime's serializer is built at init but first used on the first event, a
 * cold path in the runtime that priming cannot reach, where this mapper is primed with the rest
 * (SnapStart, {@link Priming}). The typed {@link #handleRequest(APIGatewayV2HTTPEvent, Context)}
 * stays for callers holding an event object; given {@code ::handleRequest}, the runtime takes the
 * stream overload (it prefers the longer signature).
 */
public final class EnqueueFunction implements RequestStreamHandler {
  private static final Lazy<QueueServices> SERVICES =
      Lazy.of(() -> AwsServices.queueServices(Component.ENQUEUE));

  /**
   * Binds API Gateway's payload 2.0 as the runtime does: unknown fields ignored, absent ones left
   * out of the answer.
   */
  private static final ObjectMapper EVENTS =
      new ObjectMapper()
          .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
          .setSerializationInclusion(JsonInclude.Include.NON_NULL);

  /**
   * A request priming sends through the whole local path: a kind that does not exist, refused
   * before any statement.
   */
  private static final byte[] SAMPLE_REQUEST =
      """
      {"version": "2.0", "routeKey": "POST /jobs", "rawPath": "/jobs", "rawQueryString": "",
       "headers": {"content-type": "application/json"}, "body": "{\\"kind\\": \\"-priming-\\", \\"payload\\": {}}",
       "isBase64Encoded": false,
       "requestContext": {"http": {"method": "POST", "path": "/jobs"}, "requestId": "priming", "timeEpoch": 0,
         "authorizer": {"jwt": {"claims": {"sub": "priming", "scope": "buildqueue/jobs",
           "iat": "4102441200", "exp": "4102444800"}, "scopes": []}}}}
      """
          .getBytes(StandardCharsets.UTF_8);

  private final Supplier<QueueServices> services;

  public EnqueueFunction() {
    this(SERVICES);
    LambdaLogging.install(Component.ENQUEUE);
    Priming.register("EnqueueFunction", () -> prime(SERVICES.get()));
  }

  /**
   * SnapStart priming ({@link Priming}): builds what a first request needs and runs the request
   * path up to the database: the event's binding, the API's routing and body checks (a kind that
   * does not exist is refused before any statement), each kind's payload check against its schema,
   * and the answer's conversion and writing. No statement is sent and nothing is written.
   */
  static void prime(QueueServices s) {
    Priming.loadClasses();
    s.primeLocally();
    com.fasterxml.jackson.databind.node.ObjectNode empty =
        com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
    for (int round = 0; round < Priming.ROUNDS; round++) {
      ApiResponse refused = s.api().handle(toApiRequest(readEvent(SAMPLE_REQUEST)));
      if (refused.status() != 400) {
        throw new IllegalStateException(
            "priming expected the unknown kind to be refused, got " + refused.status());
      }
      writeResponse(toLambdaResponse(refused), OutputStream.nullOutputStream());
      for (String kind : s.kinds().kinds()) {
        try {
          s.kinds().payloadSchema(kind).orElseThrow().check(empty.deepCopy());
        } catch (IllegalArgumentException refusedPayload) {
          // Expected for most kinds: the schema's check ran, which is the point.
        }
      }
    }
    Priming.rehearse(r -> r.dataApi().ecs().eventBridge());
  }

  public EnqueueFunction(Supplier<QueueServices> services) {
    this.services = services;
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context)
      throws IOException {
    writeResponse(handleRequest(readEvent(input.readAllBytes()), context), output);
  }

  public APIGatewayV2HTTPResponse handleRequest(APIGatewayV2HTTPEvent event, Context context) {
    QueueServices s = services.get();
    Metrics metrics = s.newMetrics();
    try {
      ApiRequest request = toApiRequest(event);
      if (event.getRequestContext() != null && event.getRequestContext().getRequestId() != null) {
        metrics.property("requestId", event.getRequestContext().getRequestId());
      }
      // Each route that writes publishes the job events it wrote from its own statements
      // (BuildQueue#submit, #cancelAnswering, #updateUser): no publishing run after it, which cost
      // two more round trips. A backlog is the tick's.
      ApiResponse response = s.api().handle(request);
      return toLambdaResponse(response);
    } finally {
      s.flush(metrics);
    }
  }

  /** The event as the runtime would bind it for a handler taking {@link APIGatewayV2HTTPEvent}. */
  static APIGatewayV2HTTPEvent readEvent(byte[] json) {
    try {
      return EVENTS.readValue(json, APIGatewayV2HTTPEvent.class);
    } catch (IOException e) {
      // As the runtime fails an event it cannot bind: API Gateway answers 502, nothing ran.
      throw new IllegalArgumentException("not an API Gateway payload 2.0 event", e);
    }
  }

  static void writeResponse(APIGatewayV2HTTPResponse response, OutputStream output) {
    try {
      EVENTS.writeValue(output, response);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  static ApiRequest toApiRequest(APIGatewayV2HTTPEvent event) {
    APIGatewayV2HTTPEvent.RequestContext rc = event.getRequestContext();
    String method =
        rc != null && rc.getHttp() != null && rc.getHttp().getMethod() != null
            ? rc.getHttp().getMethod().toUpperCase(Locale.ROOT)
            : "GET";
    String path =
        event.getRawPath() == null || event.getRawPath().isEmpty() ? "/" : event.getRawPath();
    Caller caller = caller(rc);
    String refusal = caller == null ? null : tokenRefusal(rc.getAuthorizer().getJwt().getClaims());
    return new ApiRequest(
        method,
        path,
        event.getRawQueryString(),
        event.getHeaders(),
        body(event),
        refusal == null ? caller : null,
        refusal);
  }

  /**
   * Why a token API Gateway verified is still refused ({@link TokenLifetime}): its JWT authorizer
   * checks that {@code exp} is in the future, not that there is one, nor how far off it is.
   */
  static String tokenRefusal(Map<String, String> claims) {
    return TokenLifetime.refusal(
        epochSeconds(claims.get("iat")), epochSeconds(claims.get("exp")), Instant.now());
  }

  /** A NumericDate claim as API Gateway passes it, a string; null when absent or not a number. */
  private static Instant epochSeconds(String claim) {
    if (claim == null || claim.isBlank()) {
      return null;
    }
    try {
      return Instant.ofEpochSecond(new java.math.BigDecimal(claim.trim()).longValueExact());
    } catch (ArithmeticException | NumberFormatException | java.time.DateTimeException e) {
      return null;
    }
  }

  private static byte[] body(APIGatewayV2HTTPEvent event) {
    if (event.getBody() == null) {
      return new byte[0];
    }
    if (event.getIsBase64Encoded()) {
      try {
        return Base64.getDecoder().decode(event.getBody());
      } catch (IllegalArgumentException e) {
        // API Gateway encodes correctly; a broken body reaches the API as bytes it will refuse.
        return event.getBody().getBytes(StandardCharsets.UTF_8);
      }
    }
    return event.getBody().getBytes(StandardCharsets.UTF_8);
  }

  /** The caller from the JWT authorizer's context, or null when the route has none. */
  static Caller caller(APIGatewayV2HTTPEvent.RequestContext rc) {
    if (rc == null || rc.getAuthorizer() == null || rc.getAuthorizer().getJwt() == null) {
      return null;
    }
    APIGatewayV2HTTPEvent.RequestContext.Authorizer.JWT jwt = rc.getAuthorizer().getJwt();
    Map<String, String> claims = jwt.getClaims() == null ? Map.of() : jwt.getClaims();
    String sub = claims.get("sub");
    if (sub == null || sub.isBlank()) {
      return null;
    }
    List<String> scopes = new ArrayList<>();
    if (jwt.getScopes() != null) {
      scopes.addAll(jwt.getScopes());
    }
    scopes.add(scopeClaim(claims.get("scope")));
    scopes.add(scopeClaim(claims.get("scp")));
    return Caller.of(sub, scopes);
  }

  /**
   * A scope claim as API Gateway passes it: a space-separated string, or (for a JSON array claim
   * such as Entra ID's {@code scp}) the array flattened to {@code [a b]}.
   */
  private static String scopeClaim(String value) {
    if (value == null) {
      return "";
    }
    String v = value.trim();
    if (v.startsWith("[") && v.endsWith("]")) {
      v = v.substring(1, v.length() - 1);
    }
    return v.replace(',', ' ').replace('"', ' ');
  }

  static APIGatewayV2HTTPResponse toLambdaResponse(ApiResponse response) {
    String type = response.header("Content-Type").orElse("").toLowerCase(Locale.ROOT);
    boolean text =
        type.startsWith("text/")
            || type.contains("json")
            || type.contains("xml")
            || type.contains("javascript");
    APIGatewayV2HTTPResponse.APIGatewayV2HTTPResponseBuilder b =
        APIGatewayV2HTTPResponse.builder()
            .withStatusCode(response.status())
            .withHeaders(Map.copyOf(response.headers()));
    if (response.body().length == 0) {
      return b.withBody("").withIsBase64Encoded(false).build();
    }
    return text
        ? b.withBody(new String(response.body(), StandardCharsets.UTF_8))
            .withIsBase64Encoded(false)
            .build()
        : b.withBody(Base64.getEncoder().encodeToString(response.body()))
            .withIsBase64Encoded(true)
            .build();
  }
}
