package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.db.WorkerRolePassword;
import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.SecretsManagerFake;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.testing.TestContext;
import buildqueue.db.Database;
import buildqueue.db.Migrator;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;

@ExtendWith(PostgresExtension.class)
class MigrateFunctionTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The pre-signed S3 URL CloudFormation waits on: records every PUT it gets. */
  private HttpServer s3;

  private final List<JsonNode> answers = Collections.synchronizedList(new ArrayList<>());
  private final List<String> contentTypes = Collections.synchronizedList(new ArrayList<>());
  private final List<String> methods = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger refuseNext = new AtomicInteger();

  @BeforeEach
  void startS3() throws Exception {
    s3 = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    s3.createContext(
        "/",
        exchange -> {
          try (exchange) {
            byte[] body = exchange.getRequestBody().readAllBytes();
            if (refuseNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
              exchange.sendResponseHeaders(503, -1);
              return;
            }
            methods.add(exchange.getRequestMethod());
            contentTypes.add(String.valueOf(exchange.getRequestHeaders().getFirst("Content-Type")));
            answers.add(JSON.readTree(body));
            exchange.sendResponseHeaders(200, -1);
          }
        });
    s3.start();
  }

  @AfterEach
  void stopS3() {
    s3.stop(0);
  }

  private byte[] request(String type) {
    ObjectNode r = SampleEvents.tree("cloudformation-create.json");
    r.put("RequestType", type);
    r.put(
        "ResponseURL",
        "http://127.0.0.1:"
            + s3.getAddress().getPort()
            + "/stack-response?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=host&X-Amz-Signature=abc");
    if (!type.equals("Create")) {
      r.put("PhysicalResourceId", MigrateFunction.PHYSICAL_ID);
    }
    return SampleEvents.bytes(r);
  }

  private static void invoke(MigrateFunction f, byte[] request, Duration timeLeft)
      throws Exception {
    f.handleRequest(
        new ByteArrayInputStream(request),
        new ByteArrayOutputStream(),
        TestContext.withTimeLeft(timeLeft));
  }

  private static List<String> tables(TestDatabase db) {
    return db
        .jdbc()
        .query("select tablename from pg_tables where schemaname = 'public' order by 1")
        .stream()
        .map(r -> r.string("tablename"))
        .toList();
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void create_migrates_an_empty_database_and_answers_success(String adapter) throws Exception {
    try (TestDatabase empty = TestDatabases.createEmpty()) {
      Database db = QueueWorld.adapter(adapter, empty);
      invoke(
          new MigrateFunction(() -> db, () -> TestDatabases.WORKER_PASSWORD),
          request("Create"),
          Duration.ofMinutes(5));

      assertThat(tables(empty))
          .contains("build_job", "build_worker", "build_job_event", "build_schema_migration");
      assertThat(answers).hasSize(1);
      JsonNode a = answers.get(0);
      assertThat(a.get("Status").asText()).isEqualTo("SUCCESS");
      assertThat(a.get("PhysicalResourceId").asText()).isEqualTo(MigrateFunction.PHYSICAL_ID);
      assertThat(a.get("StackId").asText())
          .startsWith("arn:aws:cloudformation:eu-west-1:111122223333:stack/buildqueue/");
      assertThat(a.get("RequestId").asText()).isEqualTo("7cfecd7c-9f4c-4b5d-8f7e-4b3d2e1f0a9b");
      assertThat(a.get("LogicalResourceId").asText()).isEqualTo("SchemaMigration");
      assertThat(a.get("Data").get("MigrationsApplied").asInt())
          .isEqualTo(Migrator.MIGRATIONS.size());
      assertThat(methods).containsExactly("PUT");
      assertThat(contentTypes).containsExactly("null"); // no header the pre-signed URL did not sign
    }
  }

  @Test
  void update_on_a_current_schema_applies_nothing_and_succeeds(TestDatabase db) throws Exception {
    invoke(
        new MigrateFunction(db::jdbc, () -> TestDatabases.WORKER_PASSWORD),
        request("Update"),
        Duration.ofMinutes(5));

    assertThat(answers)
        .singleElement()
        .satisfies(
            a -> {
              assertThat(a.get("Status").asText()).isEqualTo("SUCCESS");
              assertThat(a.get("Data").get("MigrationsApplied").asInt()).isZero();
            });
  }

  @Test
  void delete_changes_nothing_and_succeeds(TestDatabase db) throws Exception {
    Supplier<Database> mustNotBeUsed =
        () -> {
          throw new AssertionError("delete must not touch the database");
        };
    List<String> before = tables(db);

    invoke(
        new MigrateFunction(mustNotBeUsed, () -> TestDatabases.WORKER_PASSWORD),
        request("Delete"),
        Duration.ofMinutes(5));

    assertThat(tables(db)).isEqualTo(before);
    assertThat(answers)
        .singleElement()
        .satisfies(a -> assertThat(a.get("Status").asText()).isEqualTo("SUCCESS"));
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void
      a_released_migration_edited_since_the_database_applied_it_fails_the_deploy_naming_it_and_applies_nothing(
          String adapter) throws Exception {
    try (TestDatabase empty = TestDatabases.createEmpty()) {
      Database db = QueueWorld.adapter(adapter, empty);
      Migrator.firstOf(db, 4).migrate();
      // The database applied another text of V003 than the one this build holds.
      empty
          .jdbc()
          .update(
              "update build_schema_migration set checksum = :sum where version = 3",
              Params.of("sum", "0".repeat(64)));

      invoke(
          new MigrateFunction(() -> db, () -> TestDatabases.WORKER_PASSWORD),
          request("Update"),
          Duration.ofMinutes(5));

      assertThat(answers)
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.get("Status").asText()).isEqualTo("FAILED");
                assertThat(a.get("Reason").asText())
                    .contains("V003__job_logs.sql was edited after this database applied it")
                    .contains("Nothing was applied");
              });
      assertThat(empty.jdbc().query("select version from build_schema_migration")).hasSize(4);
      assertThat(empty.jdbc().query("select 1 from pg_proc where proname = 'build_worker_start'"))
          .isEmpty();
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_database_migrated_before_checksums_gets_them_on_the_next_deploy(String adapter)
      throws Exception {
    try (TestDatabase empty = TestDatabases.createEmpty()) {
      Database db = QueueWorld.adapter(adapter, empty);
      Migrator.firstOf(db, 4).migrate();
      // The table as older releases made it.
      empty.jdbc().update("alter table build_schema_migration drop column checksum");

      invoke(
          new MigrateFunction(() -> db, () -> TestDatabases.WORKER_PASSWORD),
          request("Update"),
          Duration.ofMinutes(5));

      assertThat(answers)
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.get("Status").asText()).isEqualTo("SUCCESS");
                assertThat(a.get("Data").get("MigrationsApplied").asInt())
                    .isEqualTo(Migrator.MIGRATIONS.size() - 4);
              });
      assertThat(empty.jdbc().query("select checksum from build_schema_migration"))
          .hasSize(Migrator.MIGRATIONS.size())
          .allSatisfy(r -> assertThat(r.string("checksum")).matches("[0-9a-f]{64}"));
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void create_gives_the_worker_role_a_login_with_the_password_its_secret_holds(String adapter)
      throws Exception {
    try (TestDatabase empty = TestDatabases.createEmpty();
        SecretsManagerFake secrets = SecretsManagerFake.start();
        SecretsManagerClient client = secrets.newClient()) {
      // Roles are cluster-wide: the test cluster's worker password stays the one the suite uses.
      secrets.put(
          DataApiFake.WORKER_SECRET_ARN,
          "{\"username\": \"buildqueue_worker\", \"password\": \""
              + TestDatabases.WORKER_PASSWORD
              + "\"}");
      Database db = QueueWorld.adapter(adapter, empty);

      invoke(
          new MigrateFunction(
              () -> db, () -> WorkerRolePassword.read(client, DataApiFake.WORKER_SECRET_ARN)),
          request("Create"),
          Duration.ofMinutes(5));

      assertThat(answers)
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.get("Status").asText()).isEqualTo("SUCCESS");
                assertThat(a.toString()).doesNotContain(TestDatabases.WORKER_PASSWORD);
              });
      Row role =
          empty
              .jdbc()
              .query(
                  "select rolcanlogin, rolpassword from pg_authid where rolname = 'buildqueue_worker'")
              .get(0);
      assertThat(role.bool("rolcanlogin")).isTrue();
      assertThat(scramVerifies(role.string("rolpassword"), TestDatabases.WORKER_PASSWORD)).isTrue();
      assertThat(scramVerifies(role.string("rolpassword"), "another password")).isFalse();
    }
  }

  @Test
  void
      a_rotation_that_moves_the_secret_while_the_deploy_sets_the_role_leaves_the_role_on_the_current_password(
          TestDatabase db) throws Exception {
    // The deploy reads the old AWSCURRENT; a rotation's finishSecret moves the label and sets the
    // role; then the deploy sets the old password. Reading the secret again after setting it
    // catches the move.
    AtomicInteger reads = new AtomicInteger();
    Supplier<String> secret =
        () -> reads.getAndIncrement() == 0 ? "before-rotation" : "after-rotation";
    try {
      invoke(new MigrateFunction(db::jdbc, secret), request("Update"), Duration.ofMinutes(5));

      assertThat(answers)
          .singleElement()
          .satisfies(a -> assertThat(a.get("Status").asText()).isEqualTo("SUCCESS"));
      String stored =
          db.jdbc()
              .query("select rolpassword from pg_authid where rolname = 'buildqueue_worker'")
              .get(0)
              .string("rolpassword");
      assertThat(scramVerifies(stored, "after-rotation")).isTrue();
    } finally {
      // Roles are cluster-wide: the rest of the suite logs in with this password.
      buildqueue.db.WorkerRole.allowLogin(db.jdbc(), TestDatabases.WORKER_PASSWORD);
    }
  }

  @Test
  void a_worker_secret_that_does_not_exist_fails_the_deploy_naming_it(TestDatabase db)
      throws Exception {
    try (SecretsManagerFake secrets = SecretsManagerFake.start();
        SecretsManagerClient client = secrets.newClient()) {
      invoke(
          new MigrateFunction(
              db::jdbc, () -> WorkerRolePassword.read(client, DataApiFake.WORKER_SECRET_ARN)),
          request("Update"),
          Duration.ofMinutes(5));

      assertThat(answers)
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.get("Status").asText()).isEqualTo("FAILED");
                assertThat(a.get("Reason").asText())
                    .contains(DataApiFake.WORKER_SECRET_ARN)
                    .contains("does not exist");
              });
    }
  }

  /**
   * Whether {@code password} matches a stored {@code SCRAM-SHA-256$iter:salt$StoredKey:ServerKey}
   * (RFC 5802).
   */
  private static boolean scramVerifies(String stored, String password) throws Exception {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("SCRAM-SHA-256\\$(\\d+):([^$]+)\\$([^:]+):(.+)")
            .matcher(stored);
    assertThat(m.matches()).as("a SCRAM verifier").isTrue();
    byte[] salt = java.util.Base64.getDecoder().decode(m.group(2));
    javax.crypto.SecretKeyFactory f =
        javax.crypto.SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
    byte[] salted =
        f.generateSecret(
                new javax.crypto.spec.PBEKeySpec(
                    password.toCharArray(), salt, Integer.parseInt(m.group(1)), 256))
            .getEncoded();
    javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
    mac.init(new javax.crypto.spec.SecretKeySpec(salted, "HmacSHA256"));
    byte[] clientKey = mac.doFinal("Client Key".getBytes(StandardCharsets.UTF_8));
    byte[] storedKey = java.security.MessageDigest.getInstance("SHA-256").digest(clientKey);
    return java.util.Base64.getEncoder().encodeToString(storedKey).equals(m.group(3));
  }

  @Test
  void a_failing_migration_answers_failed_with_the_reason() throws Exception {
    Supplier<Database> unreachable =
        () -> {
          throw new IllegalStateException(
              "database cluster arn:aws:rds:eu-west-1:111122223333:cluster:bq not reachable");
        };

    invoke(
        new MigrateFunction(unreachable, () -> TestDatabases.WORKER_PASSWORD),
        request("Create"),
        Duration.ofMinutes(5));

    assertThat(answers)
        .singleElement()
        .satisfies(
            a -> {
              assertThat(a.get("Status").asText()).isEqualTo("FAILED");
              assertThat(a.get("Reason").asText()).contains("not reachable").contains("log stream");
              assertThat(a.get("PhysicalResourceId").asText())
                  .isEqualTo(MigrateFunction.PHYSICAL_ID);
            });
  }

  @Test
  void a_migration_that_outlasts_the_lambda_answers_failed_before_the_deadline(TestDatabase db)
      throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    Supplier<Database> hanging =
        () -> {
          try {
            never.await(); // a Data API call that never returns
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return db.jdbc();
        };
    Duration timeLeft = MigrateFunction.RESERVE.plusSeconds(2);
    long start = System.nanoTime();

    invoke(
        new MigrateFunction(hanging, () -> TestDatabases.WORKER_PASSWORD),
        request("Create"),
        timeLeft);

    Duration took = Duration.ofNanos(System.nanoTime() - start);
    assertThat(took).isLessThan(timeLeft);
    assertThat(answers)
        .singleElement()
        .satisfies(
            a -> {
              assertThat(a.get("Status").asText()).isEqualTo("FAILED");
              assertThat(a.get("Reason").asText()).contains("did not finish");
            });
  }

  @Test
  void a_refused_answer_is_sent_again(TestDatabase db) throws Exception {
    refuseNext.set(1);

    invoke(
        new MigrateFunction(db::jdbc, () -> TestDatabases.WORKER_PASSWORD),
        request("Update"),
        Duration.ofMinutes(5));

    assertThat(answers)
        .singleElement()
        .satisfies(a -> assertThat(a.get("Status").asText()).isEqualTo("SUCCESS"));
  }

  @Test
  void an_unknown_request_type_is_answered_failed() throws Exception {
    invoke(
        new MigrateFunction(
            () -> {
              throw new AssertionError("not to be used");
            },
            () -> TestDatabases.WORKER_PASSWORD),
        request("Rename"),
        Duration.ofMinutes(5));

    assertThat(answers)
        .singleElement()
        .satisfies(
            a -> {
              assertThat(a.get("Status").asText()).isEqualTo("FAILED");
              assertThat(a.get("Reason").asText()).contains("Rename");
            });
  }

  @Test
  void a_request_that_is_not_json_is_logged_and_left() throws Exception {
    invoke(
        new MigrateFunction(
            () -> {
              throw new AssertionError("not to be used");
            },
            () -> TestDatabases.WORKER_PASSWORD),
        "nonsense".getBytes(StandardCharsets.UTF_8),
        Duration.ofMinutes(5));

    assertThat(answers).isEmpty();
  }
}
