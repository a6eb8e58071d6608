package buildqueue.aws.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.aws.db.WorkerRolePassword;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;
import software.amazon.awssdk.services.secretsmanager.model.InvalidParameterException;
import software.amazon.awssdk.services.secretsmanager.model.ResourceExistsException;
import software.amazon.awssdk.services.secretsmanager.model.ResourceNotFoundException;

/**
 * The fake answers the real SDK as Secrets Manager does: found or not found, and the versions and
 * staging labels a rotation moves.
 */
class SecretsManagerFakeTest {
  @Test
  void the_worker_role_password_is_read_from_its_secrets_json() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(
          DataApiFake.WORKER_SECRET_ARN,
          "{\"username\": \"buildqueue_worker\", \"password\": \"s3cret\"}");

      assertThat(WorkerRolePassword.read(client, DataApiFake.WORKER_SECRET_ARN))
          .isEqualTo("s3cret");
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
          .isInstanceOf(BuildQueueException.class)
          .hasMessageContaining(DataApiFake.SECRET_ARN)
          .hasCauseInstanceOf(ResourceNotFoundException.class);
    }
  }

  @Test
  void a_secret_without_a_password_field_is_refused_without_echoing_it() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(
          DataApiFake.WORKER_SECRET_ARN,
          "{\"username\": \"buildqueue_worker\", \"pass\": \"hunter2\"}");

      assertThatThrownBy(() -> WorkerRolePassword.read(client, DataApiFake.WORKER_SECRET_ARN))
          .isInstanceOf(BuildQueueException.class)
          .hasMessageContaining("no \"password\" field")
          .hasMessageNotContaining("hunter2");
    }
  }

  private static final String ARN = DataApiFake.WORKER_SECRET_ARN;

  @Test
  void a_rotation_starts_with_a_pending_version_that_has_no_value_until_it_is_put() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(ARN, "{\"password\": \"one\"}");
      String token = fake.startRotation(ARN);

      var described = client.describeSecret(r -> r.secretId(ARN));
      assertThat(described.rotationEnabled()).isTrue();
      assertThat(described.versionIdsToStages()).containsEntry(token, List.of("AWSPENDING"));
      assertThatThrownBy(
              () ->
                  client.getSecretValue(
                      r -> r.secretId(ARN).versionId(token).versionStage("AWSPENDING")))
          .isInstanceOf(ResourceNotFoundException.class)
          .hasMessageContaining("VersionId: " + token);
      assertThatThrownBy(
              () -> client.getSecretValue(r -> r.secretId(ARN).versionStage("AWSPENDING")))
          .isInstanceOf(ResourceNotFoundException.class)
          .hasMessageContaining("staging label: AWSPENDING");

      client.putSecretValue(
          r ->
              r.secretId(ARN)
                  .clientRequestToken(token)
                  .secretString("{\"password\": \"two\"}")
                  .versionStages("AWSPENDING"));

      assertThat(
              client
                  .getSecretValue(r -> r.secretId(ARN).versionId(token).versionStage("AWSPENDING"))
                  .secretString())
          .contains("two");
      assertThat(client.getSecretValue(r -> r.secretId(ARN)).secretString())
          .contains("one"); // AWSCURRENT by default
      // An id and a label that name different versions: not found.
      assertThatThrownBy(
              () ->
                  client.getSecretValue(
                      r -> r.secretId(ARN).versionId(token).versionStage("AWSCURRENT")))
          .isInstanceOf(ResourceNotFoundException.class);
    }
  }

  @Test
  void putting_a_version_again_with_its_value_changes_nothing_and_with_another_value_is_refused() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(ARN, "{\"password\": \"one\"}");
      String token = "00000000-0000-0000-0000-000000000042";
      client.putSecretValue(
          r ->
              r.secretId(ARN)
                  .clientRequestToken(token)
                  .secretString("two")
                  .versionStages("AWSPENDING"));
      Map<String, Set<String>> stages = fake.stages(ARN);

      client.putSecretValue(
          r ->
              r.secretId(ARN)
                  .clientRequestToken(token)
                  .secretString("two")
                  .versionStages("AWSPENDING"));
      assertThat(fake.stages(ARN)).isEqualTo(stages);
      assertThat(fake.versionCount(ARN)).isEqualTo(2);

      assertThatThrownBy(
              () ->
                  client.putSecretValue(
                      r -> r.secretId(ARN).clientRequestToken(token).secretString("three")))
          .isInstanceOf(ResourceExistsException.class);
      assertThat(fake.value(ARN, "AWSPENDING")).isEqualTo("two");
    }
  }

  @Test
  void moving_awscurrent_needs_the_version_it_leaves_and_moves_awsprevious_there() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(ARN, "one");
      String first = fake.stages(ARN).keySet().iterator().next();
      String token = fake.startRotation(ARN);
      client.putSecretValue(
          r ->
              r.secretId(ARN)
                  .clientRequestToken(token)
                  .secretString("two")
                  .versionStages("AWSPENDING"));

      assertThatThrownBy(
              () ->
                  client.updateSecretVersionStage(
                      r -> r.secretId(ARN).versionStage("AWSCURRENT").moveToVersionId(token)))
          .isInstanceOf(InvalidParameterException.class)
          .hasMessageContaining(first);
      assertThatThrownBy(
              () ->
                  client.updateSecretVersionStage(
                      r ->
                          r.secretId(ARN)
                              .versionStage("AWSCURRENT")
                              .moveToVersionId(token)
                              .removeFromVersionId(token)))
          .isInstanceOf(InvalidParameterException.class);
      assertThatThrownBy(
              () ->
                  client.updateSecretVersionStage(
                      r ->
                          r.secretId(ARN)
                              .versionStage("AWSCURRENT")
                              .moveToVersionId("00000000-0000-0000-0000-00000000dead")
                              .removeFromVersionId(first)))
          .isInstanceOf(ResourceNotFoundException.class);
      assertThat(fake.stages(ARN))
          .isEqualTo(Map.of(first, Set.of("AWSCURRENT"), token, Set.of("AWSPENDING")));

      client.updateSecretVersionStage(
          r ->
              r.secretId(ARN)
                  .versionStage("AWSCURRENT")
                  .moveToVersionId(token)
                  .removeFromVersionId(first));
      assertThat(fake.stages(ARN))
          .isEqualTo(
              Map.of(first, Set.of("AWSPREVIOUS"), token, Set.of("AWSCURRENT", "AWSPENDING")));

      client.updateSecretVersionStage(
          r -> r.secretId(ARN).versionStage("AWSPENDING").removeFromVersionId(token));
      assertThat(fake.stages(ARN))
          .isEqualTo(Map.of(first, Set.of("AWSPREVIOUS"), token, Set.of("AWSCURRENT")));
      assertThat(client.getSecretValue(r -> r.secretId(ARN)).secretString()).isEqualTo("two");
    }
  }

  @Test
  void an_operation_the_fake_does_not_answer_is_refused() {
    try (SecretsManagerFake fake = SecretsManagerFake.start();
        SecretsManagerClient client = fake.newClient()) {
      fake.put(ARN, "one");
      assertThatThrownBy(() -> client.getRandomPassword(r -> r.passwordLength(32L)))
          .hasMessageContaining("does not answer GetRandomPassword");
    }
  }
}
