package buildqueue.aws.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.aws.db.WorkerRolePassword;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;
import software.amazon.awssdk.services.secretsmanager.model.ResourceNotFoundException;

/** The fake answers the real SDK as Secrets Manager does, found or not found. */
class SecretsManagerFakeTest {
  @Test
  void the_worker_role_password_is_read_from_its_secrets_json() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(DataApiFake.WORKER_SECRET_ARN, "{\"username\": \"buildqueue_worker\", \"password\": \"s3cret\"}");

      assertThat(WorkerRolePassword.read(client, DataApiFake.WORKER_SECRET_ARN)).isEqualTo("s3cret");
    }
  }

  @Test
  void a_secret_that_does_not_exist_is_resource_not_found_and_the_message_names_it() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      assertThatThrownBy(() -> client.getSecretValue(r -> r.secretId(DataApiFake.SECRET_ARN)))
          .isInstanceOf(ResourceNotFoundException.class)
          .hasMessageContaining("can't find the specified secret");
      assertThatThrownBy(() -> WorkerRolePassword.read(client, DataApiFake.SECRET_ARN))
          .isInstanceOf(BuildQueueException.class).hasMessageContaining(DataApiFake.SECRET_ARN)
          .hasCauseInstanceOf(ResourceNotFoundException.class);
    }
  }

  @Test
  void a_secret_without_a_password_field_is_refused_without_echoing_it() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(DataApiFake.WORKER_SECRET_ARN, "{\"username\": \"buildqueue_worker\", \"pass\": \"hunter2\"}");

      assertThatThrownBy(() -> WorkerRolePassword.read(client, DataApiFake.WORKER_SECRET_ARN))
          .isInstanceOf(BuildQueueException.class).hasMessageContaining("no \"password\" field")
          .hasMessageNotContaining("hunter2");
    }
  }
}
