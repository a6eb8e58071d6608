package buildqueue.aws.testing;

import com.amazonaws.services.lambda.runtime.ClientContext;
import com.amazonaws.services.lambda.runtime.CognitoIdentity;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.LambdaLogger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** A Lambda context whose deadline is a fixed time from its creation. */
public final class TestContext implements Context {
  private final long deadlineNanos;

  public TestContext(Duration timeLeft) {
    this.deadlineNanos = System.nanoTime() + timeLeft.toNanos();
  }

  public static TestContext withTimeLeft(Duration timeLeft) {
    return new TestContext(timeLeft);
  }

  @Override
  public String getAwsRequestId() {
    return "test-request";
  }

  @Override
  public String getLogGroupName() {
    return "/aws/lambda/test";
  }

  @Override
  public String getLogStreamName() {
    return "2026/11/30/[live]test";
  }

  @Override
  public String getFunctionName() {
    return "test";
  }

  @Override
  public String getFunctionVersion() {
    return "1";
  }

  @Override
  public String getInvokedFunctionArn() {
    return "arn:aws:lambda:eu-west-1:111122223333:function:test:live";
  }

  @Override
  public CognitoIdentity getIdentity() {
    return null;
  }

  @Override
  public ClientContext getClientContext() {
    return null;
  }

  @Override
  public int getRemainingTimeInMillis() {
    return (int) Math.max(0, Duration.ofNanos(deadlineNanos - System.nanoTime()).toMillis());
  }

  @Override
  public int getMemoryLimitInMB() {
    return 1024;
  }

  @Override
  public LambdaLogger getLogger() {
    return new LambdaLogger() {
      @Override
      public void log(String message) {
        System.out.println(message);
      }

      @Override
      public void log(byte[] message) {
        System.out.println(new String(message, StandardCharsets.UTF_8));
      }
    };
  }
}
