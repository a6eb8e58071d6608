package buildqueue.aws.ecs;

import buildqueue.BuildQueueException;
import java.net.URI;
import java.time.Duration;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.ecs.EcsClient;
import software.amazon.awssdk.services.ecs.EcsClientBuilder;

/**
 * Builds the {@link EcsClient} the platform uses: the URL-connection HTTP client (no connection
 * pool or thread to start, so the smallest cold start of the SDK's sync clients; ECS calls are few
 * and short), bounded timeouts and the SDK's standard retries.
 *
 * <p>Retrying RunTask is safe because every call carries the worker's token as {@code clientToken}:
 * a repeated call returns the first call's task. The whole call, retries included, must end well
 * inside {@code QueueConfig#launchGrace} (default 60 s), after which the tick may retry a launch
 * whose outcome was never recorded.
 */
public final class EcsClients {
  private EcsClients() {}

  /**
   * @param region the AWS region, e.g. {@code eu-west-1}
   * @param endpoint an endpoint override (tests point it at a fake), or null for the region's ECS
   * @param connectTimeout TCP connect (default 2 s)
   * @param socketTimeout longest wait for response bytes (default 10 s)
   * @param attemptTimeout one HTTP attempt (default 10 s)
   * @param callTimeout the whole call including retries and backoff (default 25 s)
   * @param maxAttempts attempts per call including the first (default 3)
   */
  public record Settings(
      String region,
      URI endpoint,
      Duration connectTimeout,
      Duration socketTimeout,
      Duration attemptTimeout,
      Duration callTimeout,
      int maxAttempts) {

    public static Settings defaults(String region) {
      return new Settings(
          region,
          null,
          Duration.ofSeconds(2),
          Duration.ofSeconds(10),
          Duration.ofSeconds(10),
          Duration.ofSeconds(25),
          3);
    }

    public Settings {
      if (region == null || region.isBlank()) {
        throw new BuildQueueException("ECS client settings: region is required, e.g. eu-west-1");
      }
      positive("connectTimeout", connectTimeout);
      positive("socketTimeout", socketTimeout);
      positive("attemptTimeout", attemptTimeout);
      positive("callTimeout", callTimeout);
      if (maxAttempts < 1) {
        throw new BuildQueueException(
            "ECS client settings: maxAttempts must be at least 1, was " + maxAttempts);
      }
    }

    public Settings withEndpoint(URI endpoint) {
      return new Settings(
          region,
          endpoint,
          connectTimeout,
          socketTimeout,
          attemptTimeout,
          callTimeout,
          maxAttempts);
    }

    public Settings withTimeouts(Duration socket, Duration attempt, Duration call) {
      return new Settings(region, endpoint, connectTimeout, socket, attempt, call, maxAttempts);
    }

    public Settings withMaxAttempts(int n) {
      return new Settings(
          region, endpoint, connectTimeout, socketTimeout, attemptTimeout, callTimeout, n);
    }

    private static void positive(String name, Duration d) {
      if (d == null || d.isZero() || d.isNegative()) {
        throw new BuildQueueException(
            "ECS client settings: " + name + " must be a positive duration, was " + d);
      }
    }
  }

  /** A client with the default credentials chain (the Lambda's or task's role in AWS). */
  public static EcsClient create(Settings settings) {
    return create(settings, DefaultCredentialsProvider.builder().build());
  }

  public static EcsClient create(Settings settings, AwsCredentialsProvider credentials) {
    EcsClientBuilder builder =
        EcsClient.builder()
            .region(Region.of(settings.region()))
            .credentialsProvider(credentials)
            .httpClientBuilder(
                UrlConnectionHttpClient.builder()
                    .connectionTimeout(settings.connectTimeout())
                    .socketTimeout(settings.socketTimeout()))
            .overrideConfiguration(
                o ->
                    o.apiCallAttemptTimeout(settings.attemptTimeout())
                        .apiCallTimeout(settings.callTimeout())
                        .retryStrategy(r -> r.maxAttempts(settings.maxAttempts())));
    if (settings.endpoint() != null) {
      builder.endpointOverride(settings.endpoint());
    }
    return builder.build();
  }
}
