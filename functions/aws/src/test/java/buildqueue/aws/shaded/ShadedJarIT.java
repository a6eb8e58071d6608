package buildqueue.aws.shaded;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.lambda.EnqueueFunction;
import buildqueue.aws.lambda.MigrateFunction;
import buildqueue.aws.lambda.TaskStateChangeFunction;
import buildqueue.aws.lambda.TickFunction;
import buildqueue.aws.lambda.WorkerSecretRotationFunction;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.worker.FargateWorkerMain;
import buildqueue.core.BuildQueue;
import buildqueue.core.QueueClock;
import buildqueue.db.Json;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestKitClasses;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The shaded jar the Lambdas and the worker image run: it holds the handlers, the migrations and
 * their runtime dependencies, and nothing of the tests or the local runtime; and the worker starts
 * from it alone, on a plain JVM.
 */
@ExtendWith(PostgresExtension.class)
class ShadedJarIT {
  private static final Path JAR = Path.of("target", "buildqueue-aws.jar");

  private static List<String> entries() throws IOException {
    try (JarFile jar = new JarFile(JAR.toFile())) {
      return jar.stream().map(ZipEntry::getName).toList();
    }
  }

  @Test
  void the_jar_holds_the_handlers_and_the_migrations() throws IOException {
    List<String> entries = entries();
    for (Class<?> c :
        List.of(
            EnqueueFunction.class,
            TickFunction.class,
            TaskStateChangeFunction.class,
            MigrateFunction.class,
            WorkerSecretRotationFunction.class,
            FargateWorkerMain.class)) {
      assertThat(entries).contains(c.getName().replace('.', '/') + ".class");
    }
    assertThat(entries)
        .contains(
            "buildqueue/db/migrations/V001__queue.sql",
            "buildqueue/db/migrations/V002__event_publish_claim.sql");
    // The kind catalogue at the root (Lambda unpacks it to /var/task/kinds.json), and the JSON
    // Schema meta-schemas the validator loads from its own jar instead of the network.
    assertThat(entries).contains("kinds.json").contains("draft/2020-12/schema", "draft-07/schema");
    System.out.printf("shaded jar: %,d bytes, %,d entries%n", Files.size(JAR), entries.size());
  }

  @Test
  void the_jar_holds_no_test_or_local_only_dependency() throws IOException {
    List<String> entries = entries();
    for (String forbidden :
        List.of(
            "io/zonky/", // embedded PostgreSQL
            "com/zaxxer/hikari/", // the JDBC pool
            "org/junit/",
            "org/assertj/",
            "net/bytebuddy/",
            "org/yaml/", // the template test's YAML reader
            "com/amazonaws/services/lambda/runtime/serialization/", // the runtime's serializer,
            // tests only
            "buildqueue/testing/",
            "buildqueue/aws/fake/",
            "org/apache/http/",
            "org/apache/hc/",
            "io/netty/", // HTTP clients other than url-connection
            "org/slf4j/simple/")) {
      assertThat(entries).as("entries under %s", forbidden).noneMatch(e -> e.startsWith(forbidden));
    }
  }

  @Test
  void the_jar_holds_no_test_double() throws IOException {
    List<String> entries = entries();
    assertThat(TestKitClasses.entries())
        .as("the test kit as loaded")
        .contains("buildqueue/testing/InProcessPlatform.class");
    assertThat(TestKitClasses.doublesIn(entries)).isEmpty();
  }

  @Test
  void the_worker_runs_from_the_jar_alone(TestDatabase tdb) throws Exception {
    ManualPlatform platform = new ManualPlatform();
    new BuildQueue(tdb.jdbc(), platform, QueueHarness.testConfig(), QueueClock.DATABASE)
        .enqueue("alice", "demo", new Json("{\"steps\": 2, \"stepMillis\": 1}"), null);
    WorkerLaunch launch = platform.lastLaunch();
    ProcessBuilder pb =
        new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-jar",
            JAR.toString());
    pb.environment().clear();
    pb.environment().put(AwsSettings.JDBC_URL, tdb.jdbcUrl());
    pb.environment().put(AwsSettings.WORKER_ID, Long.toString(launch.workerId()));
    pb.environment().put(AwsSettings.WORKER_TOKEN, launch.token().toString());
    // The catalogue the image copies in; loading it compiles its payloadSchema from the jar alone.
    pb.environment()
        .put(AwsSettings.KINDS_FILE, SampleEvents.repoFile("infra/kinds/kinds.json").toString());
    pb.redirectErrorStream(true);

    Process worker = pb.start();
    String output = new String(worker.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(worker.waitFor(60, TimeUnit.SECONDS)).isTrue();

    assertThat(worker.exitValue()).as(output).isZero();
    assertThat(tdb.jdbc().query("select status from build_job").get(0).string("status"))
        .isEqualTo("succeeded");
    // Logs are JSON lines; the metrics line is embedded metric format.
    assertThat(output.lines().filter(l -> !l.isBlank()))
        .allSatisfy(l -> assertThat(l).startsWith("{"));
    assertThat(output).contains("\"_aws\"").contains("\"component\":\"worker\"");
    assertThat(output).doesNotContain(launch.token().toString());
  }
}
