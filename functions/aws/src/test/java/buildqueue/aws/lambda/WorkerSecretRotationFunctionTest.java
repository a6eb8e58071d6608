package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.aws.db.DataApiDatabase;
import buildqueue.aws.db.WorkerSecretRotation;
import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.SecretsManagerFake;
import buildqueue.aws.testing.TestContext;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Params;
import buildqueue.db.WorkerRole;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;

/**
 * The worker secret's rotation, end to end on the fakes: Secrets Manager's four steps move the
 * secret's labels, the worker role's password follows, and a worker task (the Data API logging in
 * with whatever the worker secret holds) keeps working. The role is cluster-wide, so every test
 * puts the suite's worker password back.
 */
@ExtendWith(PostgresExtension.class)
class WorkerSecretRotationFunctionTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String ARN = DataApiFake.WORKER_SECRET_ARN;
  private static final String ORIGINAL =
      "{\"username\": \"buildqueue_worker\", \"password\": \""
          + TestDatabases.WORKER_PASSWORD
          + "\"}";
  private static final List<String> STEPS =
      List.of("createSecret", "setSecret", "testSecret", "finishSecret");

  private TestDatabase db;
  private SecretsManagerFake secrets;
  private SecretsManagerClient secretsClient;
  private DataApiFake dataApi;
  private RdsDataClient dataApiClient;
  private Database admin;
  private Database worker;
  private WorkerSecretRotationFunction function;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    secrets = SecretsManagerFake.start().put(ARN, ORIGINAL);
    secretsClient = secrets.newClient();
    dataApi = DataApiFake.start();
    dataApiClient = dataApi.newClient();
    dataApi.serve(db.name(), db.dataSource());
    dataApi.serve(
        db.name(),
        ARN,
        secrets,
        "jdbc:postgresql://localhost:" + TestDatabases.postgres().getPort() + "/" + db.name());
    admin = new DataApiDatabase(dataApiClient, dataApi.settings(db.name()));
    worker = new DataApiDatabase(dataApiClient, dataApi.workerSettings(db.name()));
    function =
        new WorkerSecretRotationFunction(
            () -> new WorkerSecretRotation(secretsClient, () -> admin, ARN));
  }

  @AfterEach
  void stop() {
    // Roles are cluster-wide: the rest of the suite logs in with this password.
    WorkerRole.allowLogin(db.jdbc(), TestDatabases.WORKER_PASSWORD);
    dataApiClient.close();
    dataApi.close();
    secretsClient.close();
    secrets.close();
  }

  private String invoke(String step, String secretId, String token) throws Exception {
    ObjectNode event =
        JSON.createObjectNode()
            .put("Step", step)
            .put("SecretId", secretId)
            .put("ClientRequestToken", token);
    return invoke(event.toString());
  }

  private String invoke(String event) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    function.handleRequest(
        new ByteArrayInputStream(event.getBytes(StandardCharsets.UTF_8)),
        out,
        TestContext.withTimeLeft(Duration.ofMinutes(1)));
    return out.toString(StandardCharsets.UTF_8);
  }

  private String workerUser() {
    return worker.query("select current_user as who", Params.none()).get(0).string("who");
  }

  private static boolean canLogIn(String jdbcUrl, String password) {
    try (Connection c = DriverManager.getConnection(jdbcUrl, WorkerRole.NAME, password)) {
      return c.isValid(5);
    } catch (SQLException e) {
      assertThat(e.getSQLState()).as("a refused login, not another failure").isEqualTo("28P01");
      return false;
    }
  }

  private String url() {
    return "jdbc:postgresql://localhost:" + TestDatabases.postgres().getPort() + "/" + db.name();
  }

  private static String password(String secretJson) throws Exception {
    return JSON.readTree(secretJson).get("password").asText();
  }

  @Test
  void the_four_steps_give_the_worker_role_the_new_password_and_workers_keep_working()
      throws Exception {
    assertThat(workerUser()).isEqualTo(WorkerRole.NAME);
    String oldVersion = secrets.stages(ARN).keySet().iterator().next();
    String token = secrets.startRotation(ARN);

    for (String step : STEPS) {
      invoke(step, ARN, token);
    }

    assertThat(secrets.stages(ARN))
        .isEqualTo(Map.of(token, Set.of("AWSCURRENT"), oldVersion, Set.of("AWSPREVIOUS")));
    String rotated = password(secrets.value(ARN, "AWSCURRENT"));
    assertThat(rotated)
        .isNotEqualTo(TestDatabases.WORKER_PASSWORD)
        .hasSize(32)
        .doesNotContainAnyWhitespaces();
    assertThat(JSON.readTree(secrets.value(ARN, "AWSCURRENT")).get("username").asText())
        .isEqualTo(WorkerRole.NAME);
    assertThat(canLogIn(url(), rotated)).as("logs in with the new password").isTrue();
    assertThat(canLogIn(url(), TestDatabases.WORKER_PASSWORD))
        .as("logs in with the old password")
        .isFalse();
    // A worker task: the Data API logs in with what the worker secret now holds.
    assertThat(workerUser()).isEqualTo(WorkerRole.NAME);
  }

  @Test
  void every_step_run_again_as_secrets_manager_retries_changes_nothing_more() throws Exception {
    String token = secrets.startRotation(ARN);

    invoke("createSecret", ARN, token);
    String pending = secrets.value(ARN, "AWSPENDING");
    int versions = secrets.versionCount(ARN);
    invoke("createSecret", ARN, token);
    assertThat(secrets.value(ARN, "AWSPENDING")).isEqualTo(pending);
    assertThat(secrets.versionCount(ARN)).isEqualTo(versions);

    for (String step :
        List.of("setSecret", "setSecret", "testSecret", "testSecret", "finishSecret")) {
      invoke(step, ARN, token);
    }
    Map<String, Set<String>> finished = secrets.stages(ARN);
    for (String step : STEPS) {
      assertThat(invoke(step, ARN, token)).contains("AWSCURRENT");
    }

    assertThat(secrets.stages(ARN)).isEqualTo(finished);
    assertThat(secrets.value(ARN, "AWSCURRENT")).isEqualTo(pending);
    assertThat(canLogIn(url(), password(pending))).isTrue();
    assertThat(workerUser()).isEqualTo(WorkerRole.NAME);
  }

  @Test
  void a_finish_retried_after_a_deploy_reset_the_role_puts_the_current_password_back()
      throws Exception {
    String token = secrets.startRotation(ARN);
    for (String step : STEPS) {
      invoke(step, ARN, token);
    }
    // A deploy that read the old AWSCURRENT just before the move sets the role after it.
    WorkerRole.allowLogin(db.jdbc(), TestDatabases.WORKER_PASSWORD);

    invoke("finishSecret", ARN, token);

    assertThat(canLogIn(url(), password(secrets.value(ARN, "AWSCURRENT")))).isTrue();
    assertThat(workerUser()).isEqualTo(WorkerRole.NAME);
  }

  @Test
  void a_secret_rotated_without_the_role_locks_the_workers_out() throws Exception {
    // What happened before the rotation function: a new AWSCURRENT the role never heard of.
    secrets.put(ARN, "{\"username\": \"buildqueue_worker\", \"password\": \"rotated-elsewhere\"}");

    assertThatThrownBy(this::workerUser)
        .isInstanceOf(DatabaseException.class)
        .hasMessageContaining("password authentication failed");
  }

  @Test
  void a_step_for_another_secret_or_an_unknown_step_or_a_malformed_event_fails_clearly()
      throws Exception {
    String token = secrets.startRotation(ARN);

    assertThatThrownBy(() -> invoke("createSecret", DataApiFake.SECRET_ARN, token))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("rotates the worker role's secret " + ARN + " only");
    assertThatThrownBy(() -> invoke("rotateEverything", ARN, token))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("unknown rotation step \"rotateEverything\"");
    assertThatThrownBy(() -> invoke("{\"Step\": \"createSecret\", \"SecretId\": \"" + ARN + "\"}"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("no \"ClientRequestToken\"");
    assertThatThrownBy(() -> invoke("not json"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("not a Secrets Manager rotation event");
    assertThatThrownBy(() -> invoke("setSecret", ARN, "00000000-0000-0000-0000-00000000dead"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("has no label for rotation");
    assertThat(secrets.value(ARN, "AWSCURRENT")).isEqualTo(ORIGINAL);
  }

  @Test
  void set_before_create_fails_and_leaves_the_role_alone() throws Exception {
    String token = secrets.startRotation(ARN);

    assertThatThrownBy(() -> invoke("setSecret", ARN, token))
        .hasMessageContaining("can't find the specified secret value");

    assertThat(canLogIn(url(), TestDatabases.WORKER_PASSWORD)).isTrue();
    assertThat(workerUser()).isEqualTo(WorkerRole.NAME);
  }
}
