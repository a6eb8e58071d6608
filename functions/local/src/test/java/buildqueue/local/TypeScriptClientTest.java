package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.WebhookReceiver;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client the README suggests to integrators, made as they make it: openapi-typescript turns the
 * server's own {@code GET /openapi.json} into types, openapi-fetch calls the API with them, and
 * {@code src/test/typescript/integrator.ts} (submit with an idempotency key and a supersede key,
 * poll, list with next, log with since, cancel, quota 429, and the operators' routes: priorities,
 * run next, pause, bulk cancel, retry, cost and usage, lane history, the start estimate, a
 * read-only admin, a job's artifacts, a webhook endpoint, its delivery log and a replay; README's
 * client section lists the steps) must compile under {@code tsc --strict} and pass against a local
 * server. The npm packages are pinned by package-lock.json and installed with {@code npm ci} into
 * target/, never into the sources.
 */
@ExtendWith(PostgresExtension.class)
class TypeScriptClientTest {
  private static final Path SOURCES = Path.of("src/test/typescript");
  private static final Path WORK = Path.of("target/typescript-client").toAbsolutePath();

  /**
   * For openapi-typescript and tsc: seconds on an idle machine, but over two minutes on a shared
   * one with a load of 20 on 2 cores (a timeout there failed a test that was right).
   */
  private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(5);

  private static final List<String> FILES =
      List.of("package.json", "package-lock.json", "tsconfig.json", "integrator.ts");

  @TempDir Path dataDir;
  @TempDir Path programs;

  @BeforeAll
  static void install() throws Exception {
    Assumptions.assumeTrue(
        Programs.onPath("npm") || "true".equals(System.getenv("CI")),
        "needs node and npm on the PATH (.ci/run installs them)");
    Files.createDirectories(WORK);
    for (String f : FILES) {
      Files.copy(
          SOURCES.resolve(f), WORK.resolve(f), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
    // npm ci starts from nothing each time (it needs the registry); skip it while the lock file is
    // the one node_modules was installed from.
    Path marker = WORK.resolve("node_modules/.installed-from-lock");
    String lock = sha256(Files.readAllBytes(WORK.resolve("package-lock.json")));
    if (!Files.exists(marker) || !Files.readString(marker).equals(lock)) {
      Programs.Result ci =
          Programs.run(
              WORK, Map.of(), Duration.ofMinutes(5), "npm", "ci", "--no-audit", "--no-fund");
      assertThat(ci.exit()).as("npm ci:\n%s", ci.output()).isZero();
      Files.writeString(marker, lock);
    }
  }

  @Test
  void the_generated_client_compiles_strictly_and_its_program_passes_against_the_server(
      TestDatabase db) throws Exception {
    AtomicBoolean up = new AtomicBoolean();
    try (WebhookReceiver receiver = new WebhookReceiver(n -> up.get() ? 200 : 503);
        TestServer server = ClientTestServer.start(db, dataDir, programs)) {
      Files.write(WORK.resolve("openapi.json"), served(server, "openapi.json"));
      compile();
      // Its job runs in a lane of its own: the program's first step needs a shared lane in which
      // no job has finished.
      server.setDedicated("ts-hook", true);
      long dead =
          ClientTestServer.deadDelivery(server, "ts-replay", receiver.url("/replay"), "ts-hook");
      up.set(true);
      Map<String, String> env = new HashMap<>();
      env.put("BQ_URL", server.runtime.baseUri().toString().replaceAll("/$", ""));
      env.put("BQ_RUN", Long.toString(System.nanoTime()));
      env.put("BQ_USER", "ts-ada");
      env.put("BQ_TOKEN", server.runtime.tokens().mint("ts-ada", false, Duration.ofMinutes(10)));
      env.put("BQ_QUOTA_USER", "ts-quota");
      env.put(
          "BQ_QUOTA_TOKEN",
          server.runtime.tokens().mint("ts-quota", false, Duration.ofMinutes(10)));
      ObjectNode artifacts = TestServer.JSON.createObjectNode();
      artifacts.put("kind", ClientTestServer.ARTIFACTS_KIND);
      ClientTestServer.ARTIFACTS.forEach(artifacts.putArray("names")::add);
      artifacts.put("report", ClientTestServer.REPORT);
      artifacts.put("randomBytes", ClientTestServer.RANDOM_BYTES);
      env.put("BQ_ARTIFACTS", artifacts.toString());
      env.put("BQ_WEBHOOK_URL", receiver.url("/hook"));
      env.put(
          "BQ_DEAD_DELIVERY",
          TestServer.JSON
              .createObjectNode()
              .put("endpoint", "ts-replay")
              .put("id", dead)
              .toString());
      env.put("BQ_ADMIN_TOKEN", server.runtime.tokens().mint("root", true, Duration.ofMinutes(10)));
      env.put(
          "BQ_READ_ONLY_TOKEN",
          server.runtime.tokens().mint("ts-support", false, true, Duration.ofMinutes(10)));
      Programs.Result run =
          Programs.run(WORK, env, Duration.ofMinutes(5), "node", "dist/integrator.js");
      assertThat(run.exit()).as("the program's checks:\n%s", run.output()).isZero();
      assertThat(run.output()).contains(" passed, 0 failed").doesNotContain("FAILED");
    }
  }

  /**
   * The test above is a guard only if a document generators type wrongly fails it: the {@code
   * payload} of issue 27, a bare {@code {"type": "object"}}, is {@code Record<string, never>} to
   * openapi-typescript, and the program's submissions do not compile.
   */
  @Test
  void a_bare_object_payload_in_the_document_fails_the_compile() throws Exception {
    ObjectNode doc = shipped();
    int stripped = stripFreeForm(doc.path("components").path("schemas"));
    assertThat(stripped).as("free-form payload schemas found").isGreaterThanOrEqualTo(2);
    assertCompileFails(doc, "is not assignable to type 'Record<string, never>'");
  }

  /**
   * Issue 27's other compile error, which {@code POST /jobs/{id}/retry} and {@code
   * /jobs/{id}/run-next} brought back: a path's {@code {id}} declared as a string of digits while
   * {@code Job.id} is an integer, so the program cannot pass a job's id to the route.
   */
  @Test
  void a_job_id_declared_as_a_string_in_a_path_fails_the_compile() throws Exception {
    ObjectNode doc = shipped();
    int changed = 0;
    for (var path : doc.path("paths").properties()) {
      if (!path.getKey().startsWith("/jobs/{id}")) {
        continue; // a worker's id is a string on purpose
      }
      for (JsonNode parameter : path.getValue().path("parameters")) {
        if (parameter.path("name").asText().equals("id")) {
          ((ObjectNode) parameter)
              .putObject("schema")
              .put("type", "string")
              .put("pattern", "^[0-9]{1,18}$");
          changed++;
        }
      }
    }
    assertThat(changed).as("paths with a job id").isEqualTo(8);
    assertCompileFails(doc, "Type 'number' is not assignable to type 'string'");
  }

  private static ObjectNode shipped() throws IOException {
    return (ObjectNode)
        TestServer.JSON.readTree(
            Path.of("../core/src/main/resources/buildqueue/api/openapi.json").toFile());
  }

  private static void assertCompileFails(ObjectNode doc, String error) throws Exception {
    Files.write(WORK.resolve("openapi.json"), TestServer.JSON.writeValueAsBytes(doc));
    Programs.Result tsc = generateAndCompile();
    assertThat(tsc.exit()).as("tsc must fail:\n%s", tsc.output()).isNotZero();
    assertThat(tsc.output()).contains(error);
  }

  private static void compile() throws Exception {
    Programs.Result tsc = generateAndCompile();
    assertThat(tsc.exit()).as("tsc --strict:\n%s", tsc.output()).isZero();
  }

  private static Programs.Result generateAndCompile() throws Exception {
    Programs.Result gen =
        Programs.run(
            WORK,
            Map.of(),
            TOOL_TIMEOUT,
            "node_modules/.bin/openapi-typescript",
            "openapi.json",
            "-o",
            "buildqueue.d.ts");
    assertThat(gen.exit()).as("openapi-typescript:\n%s", gen.output()).isZero();
    return Programs.run(
        WORK, Map.of(), TOOL_TIMEOUT, "node_modules/.bin/tsc", "--strict", "-p", ".");
  }

  /** Removes {@code additionalProperties: true} from every {@code payload}; returns how many. */
  private static int stripFreeForm(JsonNode node) {
    int n = 0;
    if (node.isObject()) {
      JsonNode payload = node.get("payload");
      if (payload != null && payload.isObject() && payload.has("additionalProperties")) {
        ((ObjectNode) payload).remove("additionalProperties");
        n++;
      }
      for (JsonNode child : node) {
        n += stripFreeForm(child);
      }
    }
    return n;
  }

  private static byte[] served(TestServer server, String path) throws Exception {
    HttpResponse<byte[]> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(server.runtime.baseUri().resolve(path)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
    assertThat(r.statusCode()).isEqualTo(200);
    return r.body();
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }

  /** Runs programs for the client tests. */
  static final class Programs {
    record Result(int exit, String output) {}

    static boolean onPath(String program) {
      for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
        if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
          return true;
        }
      }
      return false;
    }

    /** Runs {@code command} in {@code dir}, stdout and stderr together, killed after timeout. */
    static Result run(Path dir, Map<String, String> env, Duration timeout, String... command)
        throws IOException, InterruptedException {
      ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(List.of(command)));
      pb.directory(dir.toFile()).redirectErrorStream(true);
      pb.environment().putAll(env);
      Path out = Files.createTempFile(dir, "output", ".txt");
      pb.redirectOutput(out.toFile());
      Process p = pb.start();
      try {
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
          p.destroyForcibly().waitFor();
          return new Result(-1, "timed out after " + timeout + ":\n" + Files.readString(out));
        }
        return new Result(p.exitValue(), Files.readString(out));
      } finally {
        Files.deleteIfExists(out);
      }
    }
  }
}
