package buildqueue.aws.db;

import java.time.Duration;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.RdsDataClientBuilder;

/**
 * Builds the {@link RdsDataClient} the adapter uses. Choices, and why:
 *
 * <ul>
 *   <li><b>HTTP client: {@code url-connection-client}</b> ({@link UrlConnectionHttpClient}). It
 *       rides on the JDK's {@code HttpURLConnection}, so it adds almost nothing to the jar and
 *       loads few classes, which is what a Lambda cold start (and a SnapStart restore) pays for;
 *       the Apache and Netty clients are excluded in the pom. We make one call at a time per
 *       thread, so its lack of async and of a tunable pool costs nothing.
 *   <li><b>Timeouts ≥ 60 s.</b> The Data API cancels a statement only after 45 s. A client that
 *       gives up sooner (the SDK's default socket and API-call timeouts are 30 s) can time out on a
 *       statement that then completes, and whoever retries it applies the write twice. So the read
 *       timeout and the whole-call timeout are above 60 s, as AWS recommends; only the TCP connect
 *       timeout is short, because a connection that was never made cannot have run anything.
 *   <li><b>No SDK retries.</b> The SDK's default policy retries 5xx answers, I/O errors and attempt
 *       timeouts. For an {@code ExecuteStatement} each of those can come after the statement ran (a
 *       504 from a writer that committed, a response lost on the way back), and the SDK cannot tell
 *       an {@code UPDATE} from a {@code SELECT}, so a blind retry could apply a write twice or run
 *       a statement in a transaction the first attempt already moved on. We retry only where the
 *       Data API says the statement did not run ({@code DatabaseResumingException}, see {@link
 *       ResumeRetry}); any other failure reaches the caller, whose transitions are guarded and
 *       idempotent and are re-driven by Lambda retries and the tick.
 * </ul>
 */
public final class DataApiClients {
  /** Above the Data API's 45 s statement limit plus the round trip; see the class comment. */
  public static final Duration READ_TIMEOUT = Duration.ofSeconds(65);

  public static final Duration API_CALL_TIMEOUT = Duration.ofSeconds(70);
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

  private DataApiClients() {}

  /** A client with the credentials of the environment (Lambda role, ECS task role). */
  public static RdsDataClient create(DataApiSettings settings) {
    return create(settings, DefaultCredentialsProvider.builder().build());
  }

  public static RdsDataClient create(DataApiSettings settings, AwsCredentialsProvider credentials) {
    return create(settings, credentials, CONNECT_TIMEOUT, READ_TIMEOUT, API_CALL_TIMEOUT);
  }

  /** With explicit timeouts; production uses the constants above, tests may shorten them. */
  static RdsDataClient create(
      DataApiSettings settings,
      AwsCredentialsProvider credentials,
      Duration connectTimeout,
      Duration readTimeout,
      Duration apiCallTimeout) {
    settings.validate();
    RdsDataClientBuilder builder =
        RdsDataClient.builder()
            .region(Region.of(settings.region()))
            .credentialsProvider(credentials)
            .httpClientBuilder(
                UrlConnectionHttpClient.builder()
                    .connectionTimeout(connectTimeout)
                    .socketTimeout(readTimeout))
            .overrideConfiguration(
                ClientOverrideConfiguration.builder()
                    .apiCallTimeout(apiCallTimeout)
                    .apiCallAttemptTimeout(apiCallTimeout)
                    .retryStrategy(AwsRetryStrategy.doNotRetry())
                    .build());
    settings.endpointOverride().ifPresent(builder::endpointOverride);
    return builder.build();
  }
}
