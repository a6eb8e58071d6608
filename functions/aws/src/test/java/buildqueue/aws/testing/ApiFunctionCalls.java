package buildqueue.aws.testing;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.OpenApiContract;
import buildqueue.aws.lambda.EnqueueFunction;
import buildqueue.aws.lambda.QueueServices;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPEvent;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPResponse;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

/** Calls of the API function ({@link EnqueueFunction}) as Lambda makes them, in tests. */
public final class ApiFunctionCalls {
  private ApiFunctionCalls() {}

  /**
   * Invokes the function as Lambda does (the event's bytes in, the answer's out, read back by the
   * runtime's own serializer); every answer is held to openapi.json, as the core route tests hold
   * theirs.
   */
  public static APIGatewayV2HTTPResponse invoke(QueueServices services, ObjectNode event) {
    byte[] bytes = SampleEvents.bytes(event);
    APIGatewayV2HTTPEvent sent = SampleEvents.asLambdaEvent(bytes, APIGatewayV2HTTPEvent.class);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      new EnqueueFunction(() -> services)
          .handleRequest(
              new ByteArrayInputStream(bytes),
              out,
              TestContext.withTimeLeft(Duration.ofSeconds(30)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    APIGatewayV2HTTPResponse r =
        SampleEvents.asLambdaEvent(out.toByteArray(), APIGatewayV2HTTPResponse.class);
    byte[] body =
        r.getBody() == null
            ? new byte[0]
            : r.getIsBase64Encoded()
                ? Base64.getDecoder().decode(r.getBody())
                : r.getBody().getBytes(StandardCharsets.UTF_8);
    OpenApiContract.shipped()
        .check(
            new ApiRequest(
                sent.getRequestContext().getHttp().getMethod(),
                sent.getRawPath(),
                "",
                Map.of(),
                new byte[0],
                null),
            new ApiResponse(r.getStatusCode(), r.getHeaders(), body));
    return r;
  }
}
