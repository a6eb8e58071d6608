package buildqueue.aws.webhooks;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.lambda.LambdaClient;
import software.amazon.awssdk.services.lambda.LambdaClientBuilder;
import software.amazon.awssdk.services.lambda.model.InvocationType;
import software.amazon.awssdk.services.lambda.model.InvokeResponse;

/**
 * Starts a webhook delivery pass on AWS (docs/architecture.md §4.11): an asynchronous Invoke
 * ({@code InvocationType: Event}) of the delivery function, which Lambda queues and answers with
 * 202 at once, so the caller (the tick) never waits for an endpoint. The payload names only who
 * started the pass, for the delivery function's logs; what to deliver is in the database.
 *
 * <p>A start that fails loses nothing: the deliveries stay due, and the next tick's survey finds
 * them and starts a pass again. Two passes at once are safe (each claims its own deliveries).
 */
public final class WebhookDeliveryStarter implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final LambdaClient lambda;
  private final String function;

  /**
   * @param function the delivery function's name or ARN, qualified with the alias to run (its
   *     {@code live} alias, so that SnapStart's published version runs)
   */
  public WebhookDeliveryStarter(LambdaClient lambda, String function) {
    if (function == null || function.isBlank()) {
      throw new IllegalArgumentException("the webhook delivery function is required");
    }
    this.lambda = lambda;
    this.function = function;
  }

  /** The starter on {@code function} in {@code region}, with the function's role's credentials. */
  public static WebhookDeliveryStarter create(String region, String function) {
    return create(region, function, null, DefaultCredentialsProvider.builder().build());
  }

  /** As {@link #create(String, String)}; {@code endpoint}, when not null, overrides Lambda's. */
  public static WebhookDeliveryStarter create(
      String region, String function, URI endpoint, AwsCredentialsProvider credentials) {
    LambdaClientBuilder client =
        LambdaClient.builder()
            .region(Region.of(region))
            .credentialsProvider(credentials)
            .httpClient(
                UrlConnectionHttpClient.builder()
                    .connectionTimeout(Duration.ofSeconds(3))
                    .socketTimeout(Duration.ofSeconds(5))
                    .build())
            // The tick starts a pass from its reserve (TickFunction.RESERVE): a start that hangs
            // must not eat it; the next tick starts one anyway.
            .overrideConfiguration(c -> c.apiCallTimeout(Duration.ofSeconds(6)));
    if (endpoint != null) {
      client.endpointOverride(endpoint);
    }
    return new WebhookDeliveryStarter(client.build(), function);
  }

  public String function() {
    return function;
  }

  /** The event the delivery function receives: who started it, and the tick's event id. */
  static String payload(String startedBy, String eventId) {
    return JSON.createObjectNode().put("startedBy", startedBy).put("eventId", eventId).toString();
  }

  /**
   * Queues one invocation of the delivery function. Returns Lambda's status code (202 when queued);
   * throws the SDK's exception when Lambda refused it (no such function, throttled, a payload too
   * large) or could not be reached.
   */
  public int start(String startedBy, String eventId) {
    // A few dozen bytes: far under what Lambda takes for an asynchronous invocation.
    byte[] payload = payload(startedBy, eventId).getBytes(StandardCharsets.UTF_8);
    InvokeResponse answer =
        lambda.invoke(
            r ->
                r.functionName(function)
                    .invocationType(InvocationType.EVENT)
                    .payload(SdkBytes.fromByteArray(payload)));
    return answer.statusCode();
  }

  @Override
  public void close() {
    lambda.close();
  }
}
