package buildqueue.aws.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.lambda.LambdaClient;
import software.amazon.awssdk.services.lambda.model.InvocationType;
import software.amazon.awssdk.services.lambda.model.InvokeResponse;
import software.amazon.awssdk.services.lambda.model.LambdaException;
import software.amazon.awssdk.services.lambda.model.RequestTooLargeException;
import software.amazon.awssdk.services.lambda.model.ResourceNotFoundException;

/**
 * The fake answers the real SDK v2 Lambda client as Lambda answers Invoke, one test per rule it
 * enforces: an asynchronous invocation queued with 202, a payload past the asynchronous limit
 * refused with 413, an unknown function or alias 404, a qualifier given twice and differently 400,
 * and an unsigned request 403.
 */
class LambdaFakeTest {
  private LambdaFake fake;
  private LambdaClient lambda;

  @BeforeEach
  void start() {
    fake = LambdaFake.start().function("deliver", "live");
    lambda = client(LambdaFake.credentials());
  }

  @AfterEach
  void stop() {
    lambda.close();
    fake.close();
  }

  private LambdaClient client(
      software.amazon.awssdk.auth.credentials.AwsCredentialsProvider credentials) {
    return LambdaClient.builder()
        .endpointOverride(fake.endpoint())
        .region(Region.of(LambdaFake.REGION))
        .credentialsProvider(credentials)
        .httpClient(UrlConnectionHttpClient.create())
        .overrideConfiguration(c -> c.retryStrategy(AwsRetryStrategy.doNotRetry()))
        .build();
  }

  private InvokeResponse invokeAsync(String function, byte[] payload) {
    return lambda.invoke(
        r ->
            r.functionName(function)
                .invocationType(InvocationType.EVENT)
                .payload(SdkBytes.fromByteArray(payload)));
  }

  @Test
  void an_asynchronous_invoke_is_queued_with_202_by_name_arn_or_partial_arn_and_alias() {
    byte[] payload = "{\"startedBy\":\"tick\"}".getBytes();

    assertThat(invokeAsync(LambdaFake.arn("deliver", "live"), payload).statusCode()).isEqualTo(202);
    assertThat(invokeAsync("deliver:live", payload).statusCode()).isEqualTo(202);
    assertThat(invokeAsync(LambdaFake.ACCOUNT + ":function:deliver", payload).statusCode())
        .isEqualTo(202);
    assertThat(
            lambda
                .invoke(
                    r ->
                        r.functionName("deliver")
                            .qualifier("live")
                            .invocationType(InvocationType.EVENT)
                            .payload(SdkBytes.fromByteArray(payload)))
                .statusCode())
        .isEqualTo(202);

    assertThat(fake.invocations("deliver"))
        .extracting(LambdaFake.Invocation::qualifier)
        .containsExactly("live", "live", "$LATEST", "live");
    assertThat(fake.invocations())
        .allSatisfy(
            i -> {
              assertThat(i.type()).isEqualTo("Event");
              assertThat(i.payloadText()).isEqualTo("{\"startedBy\":\"tick\"}");
            });
  }

  @Test
  void an_asynchronous_payload_over_256_kb_is_refused_with_413_and_not_queued() {
    byte[] atTheLimit = new byte[LambdaFake.MAX_ASYNC_PAYLOAD];
    Arrays.fill(atTheLimit, (byte) ' ');
    atTheLimit[0] = '"';
    atTheLimit[atTheLimit.length - 1] = '"';
    byte[] over = Arrays.copyOf(atTheLimit, atTheLimit.length + 1);
    over[over.length - 2] = ' ';
    over[over.length - 1] = '"';

    assertThat(invokeAsync("deliver:live", atTheLimit).statusCode()).isEqualTo(202);
    assertThatThrownBy(() -> invokeAsync("deliver:live", over))
        .isInstanceOfSatisfying(
            RequestTooLargeException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(413);
              assertThat(e.awsErrorDetails().errorMessage())
                  .isEqualTo("Request must be smaller than 262144 bytes for the Invoke operation");
            });
    assertThat(fake.invocations()).hasSize(1);
  }

  @Test
  void an_unknown_function_or_alias_is_resource_not_found() {
    assertThatThrownBy(() -> invokeAsync("nobody:live", new byte[] {'{', '}'}))
        .isInstanceOfSatisfying(
            ResourceNotFoundException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(404);
              assertThat(e.awsErrorDetails().errorMessage())
                  .isEqualTo("Function not found: " + LambdaFake.arn("nobody", "live"));
            });
    assertThatThrownBy(() -> invokeAsync("deliver:prod", new byte[] {'{', '}'}))
        .isInstanceOf(ResourceNotFoundException.class)
        .hasMessageContaining("Function not found: " + LambdaFake.arn("deliver", "prod"));
    // The same name in another account is another function.
    assertThatThrownBy(
            () ->
                invokeAsync(
                    "arn:aws:lambda:eu-west-1:444455556666:function:deliver:live",
                    new byte[] {'{', '}'}))
        .isInstanceOf(ResourceNotFoundException.class);
    assertThat(fake.invocations()).isEmpty();
  }

  @Test
  void a_qualifier_in_the_name_and_the_query_must_agree() {
    assertThatThrownBy(
            () ->
                lambda.invoke(
                    r ->
                        r.functionName("deliver:live")
                            .qualifier("$LATEST")
                            .invocationType(InvocationType.EVENT)
                            .payload(SdkBytes.fromUtf8String("{}"))))
        .isInstanceOfSatisfying(
            LambdaException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode())
                  .isEqualTo("InvalidParameterValueException");
            });
  }

  @Test
  void a_request_signed_with_other_credentials_is_refused() {
    try (LambdaClient stranger =
        client(StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDSTRANGER", "x")))) {
      assertThatThrownBy(
              () ->
                  stranger.invoke(
                      r ->
                          r.functionName("deliver:live")
                              .invocationType(InvocationType.EVENT)
                              .payload(SdkBytes.fromUtf8String("{}"))))
          .isInstanceOfSatisfying(
              LambdaException.class, e -> assertThat(e.statusCode()).isEqualTo(403));
    }
    assertThat(fake.invocations()).isEmpty();
  }
}
