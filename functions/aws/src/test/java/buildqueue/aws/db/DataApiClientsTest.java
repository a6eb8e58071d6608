package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AnonymousCredentialsProvider;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/** The client factory and its settings. */
class DataApiClientsTest {
  private static final DataApiSettings SETTINGS =
      DataApiSettings.of(
          "eu-west-1", "arn:aws:rds:eu-west-1:111122223333:cluster:queue-db",
          "arn:aws:secretsmanager:eu-west-1:111122223333:secret:queue-db-AbCdEf", "queue");

  @Test
  void the_client_outwaits_the_data_api_statement_limit_and_never_retries_on_its_own() {
    try (RdsDataClient client =
        DataApiClients.create(SETTINGS, AnonymousCredentialsProvider.create())) {
      ClientOverrideConfiguration config =
          client.serviceClientConfiguration().overrideConfiguration();
      assertThat(config.apiCallTimeout())
          .hasValueSatisfying(t -> assertThat(t).isGreaterThanOrEqualTo(Duration.ofSeconds(60)));
      assertThat(config.apiCallAttemptTimeout())
          .hasValueSatisfying(t -> assertThat(t).isGreaterThanOrEqualTo(Duration.ofSeconds(60)));
      assertThat(config.retryStrategy())
          .hasValueSatisfying(r -> assertThat(r.maxAttempts()).isEqualTo(1));
      assertThat(DataApiClients.READ_TIMEOUT).isGreaterThanOrEqualTo(Duration.ofSeconds(60));
      assertThat(client.serviceClientConfiguration().region().id()).isEqualTo("eu-west-1");
    }
  }

  @Test
  void settings_come_from_the_environment() {
    DataApiSettings s =
        DataApiSettings.fromEnvironment(
            Map.of(
                "AWS_REGION",
                "eu-west-1",
                "DB_CLUSTER_ARN",
                SETTINGS.resourceArn(),
                "DB_SECRET_ARN",
                SETTINGS.secretArn(),
                "DB_NAME",
                "queue",
                "DB_DATA_API_ENDPOINT",
                "http://127.0.0.1:9999"));
    assertThat(s).isEqualTo(SETTINGS.withEndpointOverride(URI.create("http://127.0.0.1:9999")));
  }

  @Test
  void a_missing_or_malformed_setting_is_named() {
    assertThatThrownBy(() -> DataApiSettings.fromEnvironment(Map.of("AWS_REGION", "eu-west-1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("Data API setting resourceArn is required");
    assertThatThrownBy(() -> SETTINGS.withDatabase(" ").validate())
        .hasMessage("Data API setting database is required");
    assertThatThrownBy(
            () ->
                DataApiSettings.of("eu-west-1", "queue-db", SETTINGS.secretArn(), "queue")
                    .validate())
        .hasMessageStartingWith("resourceArn must be an Aurora cluster ARN");
    assertThatThrownBy(
            () ->
                DataApiSettings.of("eu-west-1", SETTINGS.resourceArn(), "password", "queue")
                    .validate())
        .hasMessageStartingWith("secretArn must be a Secrets Manager secret ARN")
        .hasMessageNotContaining("password");
  }
}
