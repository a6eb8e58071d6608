package buildqueue.aws.lambda;

import buildqueue.BuildQueueException;
import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.db.WorkerSecretRotation;
import buildqueue.aws.db.WorkerSecretRotation.Step;
import buildqueue.db.Database;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * The worker role secret's rotation function: Secrets Manager invokes it with {@code {"Step",
 * "SecretId", "ClientRequestToken"}} four times per rotation ({@link WorkerSecretRotation}), on a
 * schedule or on {@code aws secretsmanager rotate-secret}. A step that cannot be done fails the
 * invocation with a message that says why, so Secrets Manager marks the rotation failed and the
 * secret keeps its current version. A function of its own rather than a mode of the Migrate
 * function: another caller (Secrets Manager, not CloudFormation), another answer (the invocation's
 * result, not a PUT to a pre-signed URL) and other rights (writing the worker secret's versions),
 * which the deploy-time function should not hold.
 */
public final class WorkerSecretRotationFunction implements RequestStreamHandler {
  private static final System.Logger LOG =
      System.getLogger(WorkerSecretRotationFunction.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Lazy<AwsSettings> SETTINGS =
      Lazy.of(() -> AwsSettings.fromEnvironment(Component.WORKER_SECRET_ROTATION));
  private static final Lazy<Database> DATABASE =
      Lazy.of(() -> AwsServices.database(SETTINGS.get()));
  private static final Lazy<WorkerSecretRotation> ROTATION =
      Lazy.of(
          () ->
              new WorkerSecretRotation(
                  AwsServices.secretsManager(SETTINGS.get().region()),
                  DATABASE,
                  SETTINGS.get().workerSecretArn()));

  private final Supplier<WorkerSecretRotation> rotation;

  public WorkerSecretRotationFunction() {
    this(ROTATION);
    LambdaLogging.install(Component.WORKER_SECRET_ROTATION);
  }

  public WorkerSecretRotationFunction(Supplier<WorkerSecretRotation> rotation) {
    this.rotation = rotation;
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context)
      throws IOException {
    byte[] body = input.readAllBytes();
    JsonNode event;
    try {
      event = JSON.readTree(body);
    } catch (IOException e) {
      event = null;
    }
    if (event == null || !event.isObject()) {
      throw new BuildQueueException(
          "not a Secrets Manager rotation event ("
              + body.length
              + " bytes, not a JSON object): expected {\"Step\", \"SecretId\", \"ClientRequestToken\"}");
    }
    Step step = Step.of(text(event, "Step"));
    String secretId = text(event, "SecretId");
    String token = text(event, "ClientRequestToken");
    String outcome = rotation.get().run(step, secretId, token);
    LOG.log(Level.INFO, "{0} of {1}: {2}", step.wireName(), secretId, outcome);
    output.write(
        JSON.createObjectNode()
            .put("step", step.wireName())
            .put("outcome", outcome)
            .toString()
            .getBytes(StandardCharsets.UTF_8));
  }

  private static String text(JsonNode event, String field) {
    JsonNode value = event.get(field);
    if (value == null || !value.isTextual() || value.asText().isBlank()) {
      throw new BuildQueueException(
          "the rotation event has no \""
              + field
              + "\": expected {\"Step\", \"SecretId\", \"ClientRequestToken\"}");
    }
    return value.asText();
  }
}
