package buildqueue.aws.lambda;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.db.WorkerRolePassword;
import buildqueue.db.Database;
import buildqueue.db.Migrator;
import buildqueue.db.WorkerRole;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;

/**
 * A CloudFormation custom resource that applies the schema migrations ({@link Migrator}) over the
 * RDS Data API on every deploy: on Create and Update it migrates, on Delete it does nothing (the
 * data outlives the stack's function). It ALWAYS answers CloudFormation by a PUT to the pre-signed
 * {@code ResponseURL}: on success, on failure, on an unreadable request, and when the migration
 * runs out of time (it stops waiting {@link #RESERVE} before the Lambda deadline, so the answer
 * still goes out). Without an answer a deploy hangs for an hour.
 */
public final class MigrateFunction implements RequestStreamHandler {
  /** Kept back from the Lambda deadline for sending the answer. */
  static final Duration RESERVE = Duration.ofSeconds(20);

  static final String PHYSICAL_ID = "buildqueue-schema";
  private static final int MAX_REASON_CHARS = 1500;
  private static final System.Logger LOG = System.getLogger(MigrateFunction.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Lazy<AwsSettings> SETTINGS =
      Lazy.of(() -> AwsSettings.fromEnvironment(Component.MIGRATE));
  private static final Lazy<Database> DATABASE =
      Lazy.of(() -> AwsServices.forSchemaChanges(AwsServices.database(SETTINGS.get())));

  private final Supplier<Database> database;
  private final Supplier<String> workerPassword;

  public MigrateFunction() {
    this(
        DATABASE,
        () -> {
          try (SecretsManagerClient client = AwsServices.secretsManager(SETTINGS.get().region())) {
            return WorkerRolePassword.read(client, SETTINGS.get().workerSecretArn());
          }
        });
    LambdaLogging.install(Component.MIGRATE);
    Priming.register("MigrateFunction", () -> prime(DATABASE));
  }

  /**
   * SnapStart priming ({@link Priming}): the Data API client and the classes a first deploy's
   * request needs, the answer's building on a sample request, and, against the rehearsal's loopback
   * server, the worker secret's reading and the answer's PUT on the JDK's HTTP client (each a few
   * hundred classes and their first run, which the first deploy after a restore would pay). No
   * statement is sent and nothing reaches CloudFormation: the migration and its answer happen per
   * request.
   */
  static void prime(Supplier<Database> database) {
    database.get();
    Priming.loadClasses();
    ObjectNode sample = JSON.createObjectNode();
    sample
        .put("RequestType", "Create")
        .put("ResponseURL", "http://127.0.0.1/priming")
        .put("StackId", "priming")
        .put("RequestId", "priming")
        .put("LogicalResourceId", "Schema");
    byte[] request = sample.toString().getBytes(StandardCharsets.UTF_8);
    byte[] answer = null;
    for (int round = 0; round < Priming.ROUNDS; round++) {
      try {
        answer = response(JSON.readTree(request), new Answer(true, "primed", 0), null);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
    byte[] primedAnswer = answer;
    Priming.rehearse(
        r -> {
          r.dataApi().secretsManager();
          put(
              r.endpoint().resolve("/priming-answer").toString(),
              primedAnswer,
              Duration.ofSeconds(10));
        });
  }

  /**
   * @param workerPassword the worker role's password, from its secret: read on every Create and
   *     Update, after the migrations, so a rotated secret reaches the role at the next deploy
   */
  public MigrateFunction(Supplier<Database> database, Supplier<String> workerPassword) {
    this.database = database;
    this.workerPassword = workerPassword;
  }

  /** The answer CloudFormation gets. */
  record Answer(boolean success, String reason, int applied) {}

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context)
      throws IOException {
    byte[] body = input.readAllBytes();
    JsonNode request;
    try {
      request = JSON.readTree(body);
    } catch (IOException e) {
      request = null;
    }
    String responseUrl = request == null ? null : request.path("ResponseURL").asText(null);
    if (responseUrl == null) {
      // Nothing to answer: not a custom-resource request. Its body may carry anything; log its
      // size.
      LOG.log(
          Level.ERROR,
          "not a CloudFormation custom resource request ({0} bytes); nothing to answer",
          body.length);
      return;
    }
    Answer answer = answer(request, context);
    byte[] response = response(request, answer, context);
    boolean sent = put(responseUrl, response, deadlineLeft(context));
    LOG.log(
        sent ? Level.INFO : Level.ERROR,
        "{0} {1}: answered {2}{3}",
        request.path("RequestType").asText("?"),
        request.path("LogicalResourceId").asText("?"),
        answer.success() ? "SUCCESS" : "FAILED (" + answer.reason() + ")",
        sent ? "" : ", but the answer could not be delivered");
    output.write(response);
  }

  private Answer answer(JsonNode request, Context context) {
    String type = request.path("RequestType").asText("");
    switch (type) {
      case "Delete":
        return new Answer(true, "nothing to delete: the schema and its data stay", 0);
      case "Create":
      case "Update":
        return migrateWithin(migrationBudget(context));
      default:
        return new Answer(false, "unknown RequestType \"" + type + "\"", 0);
    }
  }

  private Answer migrateWithin(Duration budget) {
    ExecutorService runner =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "buildqueue-migrate");
              t.setDaemon(true);
              return t;
            });
    try {
      Future<List<String>> migration =
          runner.submit(
              () -> {
                List<String> applied = new Migrator(database.get()).migrate();
                // The role exists once V005 ran; it logs in with the password its own secret holds.
                allowWorkerLogin();
                return applied;
              });
      List<String> applied = migration.get(budget.toMillis(), TimeUnit.MILLISECONDS);
      LOG.log(Level.INFO, "migrations applied: {0}", applied);
      return new Answer(true, "applied " + applied, applied.size());
    } catch (TimeoutException e) {
      return new Answer(
          false,
          "the migration did not finish within "
              + budget.toSeconds()
              + " s; each migration is one transaction, so deploy again to finish it",
          0);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      LOG.log(Level.ERROR, "migration failed", cause);
      return new Answer(false, "migration failed: " + cause, 0);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Answer(false, "interrupted while migrating", 0);
    } finally {
      runner.shutdownNow();
    }
  }

  /**
   * Sets the worker role's password from its secret, then reads the secret again: a rotation that
   * moved {@code AWSCURRENT} meanwhile sets the role after its move ({@link
   * buildqueue.aws.db.WorkerSecretRotation}), so whichever of the two sets last, the role ends on
   * the secret's current password.
   */
  private void allowWorkerLogin() {
    String password = workerPassword.get();
    WorkerRole.allowLogin(database.get(), password);
    for (int read = 0; read < 3; read++) {
      String again = workerPassword.get();
      if (again.equals(password)) {
        return;
      }
      password = again;
      WorkerRole.allowLogin(database.get(), password);
    }
  }

  private static Duration migrationBudget(Context context) {
    Duration left = deadlineLeft(context).minus(RESERVE);
    return left.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : left;
  }

  private static Duration deadlineLeft(Context context) {
    return context == null
        ? Duration.ofMinutes(5)
        : Duration.ofMillis(context.getRemainingTimeInMillis());
  }

  private static byte[] response(JsonNode request, Answer answer, Context context) {
    ObjectNode r = JSON.createObjectNode();
    r.put("Status", answer.success() ? "SUCCESS" : "FAILED");
    String reason = answer.reason();
    if (!answer.success() && context != null && context.getLogStreamName() != null) {
      reason = reason + " (log stream " + context.getLogStreamName() + ")";
    }
    // The whole answer must stay under 4096 bytes.
    r.put(
        "Reason",
        reason.length() > MAX_REASON_CHARS ? reason.substring(0, MAX_REASON_CHARS) + "…" : reason);
    String physicalId = request.path("PhysicalResourceId").asText("");
    r.put("PhysicalResourceId", physicalId.isEmpty() ? PHYSICAL_ID : physicalId);
    r.put("StackId", request.path("StackId").asText(""));
    r.put("RequestId", request.path("RequestId").asText(""));
    r.put("LogicalResourceId", request.path("LogicalResourceId").asText(""));
    r.putObject("Data").put("MigrationsApplied", answer.applied());
    return r.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * PUTs the answer, retrying a failed attempt while time is left. No Content-Type: the URL is
   * pre-signed, and a header the signature did not cover could make S3 refuse it.
   */
  private static boolean put(String url, byte[] body, Duration left) {
    // Built per answer (a deploy makes a handful): nothing network-bound is kept in a snapshot.
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    long deadline =
        System.nanoTime() + Math.max(left.toNanos() - Duration.ofSeconds(1).toNanos(), 0);
    for (int attempt = 1; attempt <= 3; attempt++) {
      long remainingMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (attempt > 1 && remainingMs < 1000) {
        return false;
      }
      try {
        HttpRequest request =
            HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofMillis(Math.max(1000, Math.min(10_000, remainingMs))))
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                .build();
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 == 2) {
          return true;
        }
        LOG.log(
            Level.WARNING,
            "answer to CloudFormation refused with HTTP {0} (attempt {1})",
            response.statusCode(),
            attempt);
      } catch (IOException | IllegalArgumentException e) {
        LOG.log(
            Level.WARNING,
            "answer to CloudFormation not delivered (attempt {0}): {1}",
            attempt,
            e.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }
}
