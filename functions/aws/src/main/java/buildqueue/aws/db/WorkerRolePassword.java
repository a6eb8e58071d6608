package buildqueue.aws.db;

import buildqueue.BuildQueueException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;
import software.amazon.awssdk.services.secretsmanager.model.ResourceNotFoundException;
import software.amazon.awssdk.services.secretsmanager.model.SecretsManagerException;

/**
 * The worker role's password (V005, docs/architecture.md §6.1): read from its own Secrets Manager
 * secret, the one the worker task is given, and set on the role by the migration, so the secret and
 * the role agree after every deploy ({@link buildqueue.db.WorkerRole#allowLogin}). The password is
 * never logged.
 */
public final class WorkerRolePassword {
  private static final ObjectMapper JSON = new ObjectMapper();

  private WorkerRolePassword() {}

  /**
   * The {@code password} field of the secret's JSON (as the stack's GenerateSecretString makes it).
   */
  public static String read(SecretsManagerClient client, String secretArn) {
    String text;
    try {
      text = client.getSecretValue(r -> r.secretId(secretArn)).secretString();
    } catch (ResourceNotFoundException e) {
      throw new BuildQueueException(
          "the worker role's secret "
              + secretArn
              + " does not exist; deploy the stack"
              + " that creates it, or set the migrate function's BUILDQUEUE_WORKER_DB_SECRET_ARN to it",
          e);
    } catch (SecretsManagerException e) {
      throw new BuildQueueException(
          "cannot read the worker role's secret "
              + secretArn
              + ": "
              + e.awsErrorDetails().errorCode(),
          e);
    }
    try {
      JsonNode password = text == null ? null : JSON.readTree(text).get("password");
      if (password == null || !password.isTextual() || password.asText().isEmpty()) {
        throw new BuildQueueException(
            "the worker role's secret " + secretArn + " has no \"password\" field");
      }
      return password.asText();
    } catch (IOException e) {
      // The text is not echoed: it is the secret.
      throw new BuildQueueException("the worker role's secret " + secretArn + " is not JSON", e);
    }
  }
}
