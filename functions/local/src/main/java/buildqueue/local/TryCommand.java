package buildqueue.local;

import buildqueue.api.HttpApi;
import buildqueue.core.JobStatus;
import buildqueue.kinds.KindCatalogue;
import buildqueue.kinds.KindCatalogueException;
import buildqueue.kinds.KindRegistry;
import buildqueue.kinds.PayloadSchema;
import buildqueue.worker.QueueKindLimits;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * {@code try KIND PAYLOAD}: one job through a queue of its own, with the same catalogue checks,
 * payload validation and workers (child processes) as {@code serve}, so a kind that works here
 * works on a server. Refusals exit {@value Main#USAGE} and queue nothing.
 */
record TryCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        try <kind> <payload-json> [--kinds kinds.json]
            Runs one job of a kind through a queue of its own (embedded PostgreSQL in a temporary
            directory, removed after), in the foreground: prints its log as it comes, then its
            outcome; exits 0 if it succeeded, 1 if not, 2 if the kind or the payload is refused.
            Kinds: the built-in demo and render-sample, and those of --kinds or BUILDQUEUE_KINDS_FILE.
      """;

  /**
   * The environment variable {@code try} reads its catalogue from when {@code --kinds} is absent.
   */
  static final String KINDS_FILE_ENV = "BUILDQUEUE_KINDS_FILE";

  /** How often {@code try} reads the job's new output. */
  static final Duration TRY_POLL = Duration.ofMillis(200);

  static final Duration TRY_SHUTDOWN_GRACE = Duration.ofSeconds(5);

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("try", args, Set.of("kinds"), Set.of());
    String kind = cl.positional(0, "a job kind: try <kind> <payload-json>");
    JsonNode payload =
        Cli.payload(
            cl.positional(
                1, "a payload: try <kind> <payload-json>, e.g. try demo '{\"steps\": 3}'"));
    cl.atMostPositionals(2, "try <kind> <payload-json> [--kinds FILE]");
    String kindsFile = cl.get("kinds", cli.env.get(KINDS_FILE_ENV));
    Path dataDir;
    try {
      dataDir = Files.createTempDirectory("buildqueue-try-");
    } catch (IOException e) {
      throw new UncheckedIOException("could not make a temporary directory: " + e.getMessage(), e);
    }
    LocalSettings defaults = LocalSettings.defaults();
    // A short grace: the job has ended (or was interrupted) when the runtime closes, so only its
    // worker's last statements are left to wait for.
    LocalSettings settings =
        defaults
            .withPort(0)
            .withDataDir(dataDir)
            .withTickInterval(Duration.ofSeconds(1))
            .withShutdownGrace(TRY_SHUTDOWN_GRACE);
    AtomicBoolean interrupted = new AtomicBoolean();
    try {
      Path catalogue =
          DemoKinds.prepare(
              dataDir,
              kindsFile == null || kindsFile.isBlank()
                  ? Optional.empty()
                  : Optional.of(Path.of(kindsFile)),
              defaults.queue());
      String refused =
          refusal(
              KindCatalogue.load(catalogue, QueueKindLimits.of(defaults.queue())).registry(),
              kind,
              payload);
      if (refused != null) {
        // Said before a database starts (seconds), as the API would say it.
        cli.err.println("buildqueue: " + refused);
        return Main.USAGE;
      }
      try (LocalRuntime runtime = LocalRuntime.start(settings.withKindsFile(catalogue))) {
        // Ctrl-C stops the job's worker at once (a try is not a server: nothing waits for it), and
        // leaves neither the embedded PostgreSQL running nor the temporary directory behind. The
        // hook alone cleans up then: the directory goes only once the database has stopped.
        Thread hook =
            new Thread(
                () -> {
                  interrupted.set(true);
                  runtime
                      .platform()
                      .liveWorkers()
                      .forEach(
                          w -> runtime.platform().stop(w.toString(), "bq try was interrupted"));
                  runtime.close();
                  deleteQuietly(dataDir);
                },
                "buildqueue-try-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
          return tryOn(runtime, kind, payload);
        } finally {
          removeShutdownHook(hook);
        }
      }
    } catch (KindCatalogueException e) {
      throw new CommandLine.UsageException(e.getMessage());
    } catch (ApiClient.UnreachableException e) {
      if (!interrupted.get()) {
        throw e;
      }
      cli.err.println("buildqueue: interrupted; the job's worker was stopped");
      return Main.INTERRUPTED;
    } finally {
      if (!interrupted.get()) {
        deleteQuietly(dataDir);
      }
    }
  }

  /**
   * Why the API would refuse {@code kind} with {@code payload}, in its words; null if it would take
   * them.
   */
  static String refusal(KindRegistry kinds, String kind, JsonNode payload) {
    Optional<PayloadSchema> schema = kinds.payloadSchema(kind);
    if (schema.isEmpty()) {
      return "unknown kind \""
          + kind
          + "\"; the known kinds are: "
          + String.join(", ", new TreeSet<>(kinds.kinds()));
    }
    if (payload != null && !payload.isNull() && !payload.isObject()) {
      return "the payload must be a JSON object, e.g. '{}'";
    }
    try {
      schema
          .get()
          .check(
              payload == null || payload.isNull()
                  ? Cli.JSON.createObjectNode()
                  : payload.deepCopy());
      return null;
    } catch (IllegalArgumentException e) {
      return "the payload is not valid for kind \""
          + kind
          + "\": "
          + (e.getMessage() == null
              ? "the kind's validation refused it without saying why"
              : e.getMessage());
    }
  }

  private int tryOn(LocalRuntime runtime, String kind, JsonNode payload) {
    ApiClient api =
        new ApiClient(
            runtime.baseUri(),
            runtime.tokens().mint(cli.defaultUser(), true, ApiConnection.CLI_TOKEN_TTL));
    ObjectNode body = Cli.JSON.createObjectNode().put("kind", kind);
    body.set("payload", payload);
    ApiClient.Reply submitted = api.post("jobs", body);
    if (submitted.status() == 400 || submitted.status() == 422) {
      cli.problem(submitted);
      return Main.USAGE;
    }
    long id = Cli.accepted(submitted).json().path("id").asLong();
    cli.out.println(
        "[buildqueue] job "
            + id
            + " ("
            + kind
            + ") queued on a queue of its own; its output follows");
    long since = 0;
    while (true) {
      ApiClient.Reply log =
          Cli.accepted(api.get("jobs/" + id + "/log" + (since > 0 ? "?since=" + since : "")));
      long total = log.header(HttpApi.LOG_TOTAL_BYTES).map(Long::parseLong).orElse(0L);
      if (since > total) {
        cli.out.println("[buildqueue] the job started a new attempt; its output starts over");
      }
      cli.out.print(log.text());
      cli.out.flush();
      since = total;
      if (JobStatus.of(log.header(HttpApi.JOB_STATUS).orElse("")).finished()) {
        break;
      }
      try {
        Thread.sleep(TRY_POLL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Main.API_ERROR;
      }
    }
    JsonNode job = Cli.accepted(api.get("jobs/" + id)).json();
    String status = job.path("status").asText();
    String error = job.path("error").asText("");
    cli.out.println(
        "[buildqueue] job "
            + id
            + " "
            + status
            + " after "
            + job.path("attempts").asInt()
            + " attempt"
            + (job.path("attempts").asInt() == 1 ? "" : "s")
            + ", progress "
            + job.path("progress").asInt()
            + (error.isEmpty() || job.path("error").isNull() ? "" : ": " + error));
    return "succeeded".equals(status) ? Main.OK : Main.API_ERROR;
  }

  private static void removeShutdownHook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // The hook is running or about to: it does the same cleanup.
    }
  }

  private static void deleteQuietly(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // A temporary directory left behind is harmless; the outcome was already printed.
    }
  }
}
