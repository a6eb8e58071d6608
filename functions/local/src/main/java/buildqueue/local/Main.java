package buildqueue.local;

import buildqueue.BuildQueueException;
import buildqueue.api.HttpApi;
import buildqueue.core.JobStatus;
import buildqueue.core.QueueConfig;
import buildqueue.kinds.KindCatalogue;
import buildqueue.kinds.KindCatalogueException;
import buildqueue.kinds.KindRegistry;
import buildqueue.kinds.PayloadSchema;
import buildqueue.worker.QueueKindLimits;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The runnable jar: {@code serve} runs the whole system; {@code try} runs one job on a queue of its
 * own; {@code token}, {@code submit}, {@code
 * status}, {@code dedicated}, {@code cancel} and {@code logs} talk to a running server over HTTP
 * with a token they mint from the data directory's secret.
 */
public final class Main {
  static final int OK = 0;
  static final int API_ERROR = 1;
  static final int USAGE = 2;
  static final int UNREACHABLE = 3;
  /** {@code try} stopped by Ctrl-C (SIGINT), as shells report it. */
  static final int INTERRUPTED = 130;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration CLI_TOKEN_TTL = Duration.ofMinutes(5);

  static final String USAGE_TEXT = """
      usage: java -jar buildqueue-local.jar <command> [options]

        serve [--demo] [--port 8080] [--data-dir .buildqueue] [--database-url jdbc:postgresql://...]
              [--tick-interval 5s] [--shared-slots 1] [--shutdown-grace 30s] [--kinds kinds.json]
              [--worker-lifetime 60m] [--shared-order fair|fifo] [--max-queued-jobs 1000]
              [--max-log-bytes 100m] [--retention 7d] [--job-user nobody]
            Runs the queue, the HTTP API and the dashboard on http://127.0.0.1:<port>/, with
            workers as child processes. --demo also submits a mix of jobs and shows them live.
            --kinds adds the job kinds of a kind catalogue (README: Job kinds) to the built-in demo.
            --shared-order: fair (default) takes turns by user in the shared lane, fifo takes the
            oldest job; --max-queued-jobs: each user's default quota of queued jobs.
            --max-log-bytes: a job attempt's output kept in <data-dir>/jobs/job-<id>.log at most
            (k, m, g: KiB, MiB, GiB); the rest is dropped and one line says how much.
            --retention: finished jobs, their logs and exited workers are deleted after this.
            --job-user: run as root, the server runs its jobs' programs as this user (default nobody).
        try <kind> <payload-json> [--kinds kinds.json]
            Runs one job of a kind through a queue of its own (embedded PostgreSQL in a temporary
            directory, removed after), in the foreground: prints its log as it comes, then its
            outcome; exits 0 if it succeeded, 1 if not, 2 if the kind or the payload is refused.
            Kinds: the built-in demo and render-sample, and those of --kinds or BUILDQUEUE_KINDS_FILE.
        token <user> [--admin] [--hours 24]
            Prints a token for the API and the dashboard (--admin: may see every lane and job).
        submit <kind> [payload-json] [--user <you>] [--key <idempotency-key>] [--supersede-key <key>]
            Submits a job, e.g.: submit demo '{"steps": 5, "stepMillis": 500}'
            --supersede-key cancels your queued jobs with the same key and stops the running one.
        status [job-id] [--user <user>]
            One job with its history, or the lanes and the most recent jobs.
        dedicated <user> on|off
            Gives a user a dedicated worker (their own lane) or takes it away.
        quota <user> <max-queued-jobs>|default
            Sets how many queued jobs a user may have at once, or gives them the server's default.
        cancel <job-id>
            Cancels a job: at once if queued; a running one is stopped within seconds.
        logs <job-id> [--follow]
            Prints the output the queue keeps of a job (its last 60 KB); --follow prints new
            output as it comes until the job ends.

      Client commands also take --port, --data-dir (where the token secret is) and --json; or
      --api-url <the stack's ApiUrl> with --token <JWT> (or BUILDQUEUE_API_TOKEN) for a deployed API.
      An API that could not invoke its function (HTTP 500 "Internal Server Error", e.g. after 14
      idle days) is asked again, up to 6 times in ~23 s, for reads, quota and dedicated changes, and
      a submit with --key; any other request is not sent twice.
      An existing PostgreSQL's credentials come from BUILDQUEUE_DATABASE_USER and
      BUILDQUEUE_DATABASE_PASSWORD.
      """;

  private static final Set<String> CLIENT_FLAGS = Set.of("port", "data-dir", "api-url", "token");
  /** The bearer token for {@code --api-url} when {@code --token} is not given. */
  static final String API_TOKEN_ENV = "BUILDQUEUE_API_TOKEN";

  private final PrintStream out;
  private final PrintStream err;
  private final Map<String, String> env;

  Main(PrintStream out, PrintStream err, Map<String, String> env) {
    this.out = out;
    this.err = err;
    this.env = env;
  }

  public static void main(String[] args) {
    // One line per log record, before any logger exists.
    System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tT %4$s %5$s%6$s%n");
    Main main = new Main(System.out, System.err, System.getenv());
    System.exit(main.run(args));
  }

  /** Runs a client command (everything but {@code serve}); returns the exit code. */
  int run(String... args) {
    if (args.length == 0 || Set.of("help", "-h", "--help").contains(args[0])) {
      out.print(USAGE_TEXT);
      return args.length == 0 ? USAGE : OK;
    }
    List<String> rest = Arrays.asList(args).subList(1, args.length);
    try {
      switch (args[0]) {
        case "token":
          return token(rest);
        case "submit":
          return submit(rest);
        case "status":
          return status(rest);
        case "dedicated":
          return dedicated(rest);
        case "quota":
          return quota(rest);
        case "cancel":
          return cancel(rest);
        case "logs":
          return logs(rest);
        case "serve":
          return serve(rest);
        case "try":
          return tryKind(rest);
        default:
          throw new CommandLine.UsageException("unknown command \"" + args[0]
              + "\"; the commands are serve, try, token, submit, status, dedicated, quota, cancel, logs");
      }
    } catch (CommandLine.UsageException e) {
      err.println("buildqueue: " + e.getMessage());
      err.println("run with --help for usage");
      return USAGE;
    } catch (RefusedException e) {
      return problem(e.reply);
    } catch (ApiClient.UnreachableException e) {
      err.println("buildqueue: " + e.getMessage());
      return UNREACHABLE;
    } catch (BuildQueueException e) {
      err.println("buildqueue: " + e.getMessage());
      return API_ERROR;
    }
  }

  // ---- serve

  /**
   * Starts the server and blocks until the JVM is asked to stop (SIGTERM, Ctrl-C), when the
   * shutdown hook runs {@link LocalRuntime#shutdown()}.
   */
  int serve(List<String> args) {
    CommandLine cl = CommandLine.parse("serve", args,
        Set.of("port", "data-dir", "database-url", "tick-interval", "shared-slots", "shutdown-grace", "kinds",
            "worker-lifetime", "shared-order", "max-queued-jobs", "max-log-bytes", "retention", "job-user"), Set.of("demo"));
    cl.atMostPositionals(0, "serve [--demo] [--port N] [--data-dir DIR] [--database-url URL] [--kinds FILE]");
    boolean demo = cl.has("demo");
    LocalSettings defaults = LocalSettings.defaults();
    // The demo shows two workers sharing a lane beside a dedicated one, unless told otherwise.
    int sharedSlots = cl.intValue("shared-slots", demo ? 2 : defaults.queue().sharedSlots(), 1, 64);
    QueueConfig queue = defaults.queue().withSharedSlots(sharedSlots)
        .withMaxQueuedJobs(cl.intValue("max-queued-jobs", defaults.queue().maxQueuedJobs(), 1, 1_000_000));
    String order = cl.get("shared-order", defaults.queue().sharedOrder().label());
    if (QueueConfig.SharedOrder.ofLabel(order) == null) {
      throw new CommandLine.UsageException("--shared-order must be fair or fifo, was \"" + order + "\"");
    }
    queue = queue.withSharedOrder(QueueConfig.SharedOrder.ofLabel(order));
    Duration lifetime = cl.duration("worker-lifetime", queue.workerLifetime());
    if (lifetime.compareTo(Duration.ofMinutes(1)) < 0) {
      throw new CommandLine.UsageException("--worker-lifetime must be at least 1m, was " + cl.get("worker-lifetime", ""));
    }
    queue = queue.withLease(lifetime, queue.leaseSlack(), queue.deadlineMargin());
    Duration retention = cl.duration("retention", queue.retention());
    if (retention.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new CommandLine.UsageException("--retention must be at least 1s, was " + cl.get("retention", ""));
    }
    queue = queue.withRetention(retention);
    LocalSettings settings = defaults
        .withPort(cl.intValue("port", LocalSettings.DEFAULT_PORT, 0, 65535))
        .withDataDir(Path.of(cl.get("data-dir", LocalSettings.DEFAULT_DATA_DIR.toString())))
        .withDatabase(cl.get("database-url", null), env.get("BUILDQUEUE_DATABASE_USER"),
            env.get("BUILDQUEUE_DATABASE_PASSWORD"))
        .withTickInterval(cl.duration("tick-interval", defaults.tickInterval()))
        .withShutdownGrace(cl.duration("shutdown-grace", defaults.shutdownGrace()))
        .withQueue(queue)
        .withKindsFile(cl.has("kinds") ? Path.of(cl.get("kinds", "")) : null)
        .withMaxLogBytes(cl.bytes("max-log-bytes", defaults.maxLogBytes()));
    String jobUser = cl.get("job-user", defaults.jobUser());
    if (!LocalSettings.USER_NAME.matcher(jobUser).matches()) {
      throw new CommandLine.UsageException("--job-user must be a user name, was \"" + jobUser + "\"");
    }
    settings = settings.withJobUser(jobUser);

    LocalRuntime runtime;
    try {
      if (demo) {
        settings = settings.withKindsFile(DemoKinds.prepare(settings.dataDir(), settings.kindsFile(), queue));
      }
      runtime = LocalRuntime.start(settings);
    } catch (RuntimeException e) {
      err.println("buildqueue: the server did not start: " + e.getMessage());
      return API_ERROR;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      err.println("buildqueue: stopping: no new requests, ticks or workers; " + (runtime.settings().databaseUrl() == null
          ? "running jobs are stopped with their progress and run again from it at the next start"
          : "running workers go on and the next start adopts them"));
      runtime.shutdown();
      stopped.countDown();
    }, "buildqueue-shutdown"));

    out.println("buildqueue is running: API and dashboard on " + runtime.baseUri());
    out.println("  data in " + settings.dataDir() + (settings.databaseUrl() == null
        ? " (embedded PostgreSQL)" : ", database " + LocalDatabase.redacted(settings.databaseUrl())));
    out.println("  job kinds: demo" + runtime.kinds().kinds().stream().map(k -> ", " + k.name())
        .collect(java.util.stream.Collectors.joining())
        + runtime.kinds().file().map(f -> " (catalogue " + f + ")").orElse(" (no catalogue: serve --kinds FILE adds one)"));
    out.println("  jobs run as: " + settings.effectiveJobUser()
        .map(u -> u + " (the server runs as root; --job-user names another)")
        .orElse("the server's own user " + System.getProperty("user.name") + " (README: what a job can reach)"));
    out.println("  shared lane: " + sharedSlots + (sharedSlots == 1 ? " slot" : " slots") + ", "
        + (queue.sharedOrder() == QueueConfig.SharedOrder.FAIR ? "fair (turns by user)" : "fifo")
        + ", at most " + queue.maxQueuedJobs() + " queued jobs a user"
        + "; worker logs in " + settings.dataDir().resolve("workers"));
    out.println("  job logs in " + settings.dataDir().resolve("jobs") + ", at most " + settings.maxLogBytes()
        + " bytes an attempt; finished jobs and their logs are deleted after " + describe(queue.retention()));
    if (demo) {
      out.println("  dashboard token (admin, valid 12 h): "
          + runtime.tokens().mint("demo", true, Duration.ofHours(12)));
    } else {
      out.println("  for a dashboard token: java -jar buildqueue-local.jar token <you> --admin");
    }
    out.println("  stop with Ctrl-C (SIGTERM)");
    out.flush();
    try {
      if (demo) {
        runDemo(runtime);
      }
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return OK;
  }

  private static String describe(Duration d) {
    if (d.toDays() > 0 && d.equals(Duration.ofDays(d.toDays()))) {
      return d.toDays() + (d.toDays() == 1 ? " day" : " days");
    }
    return d.toString().substring(2).toLowerCase(java.util.Locale.ROOT);
  }

  /** A demo that goes wrong says so and leaves the server serving. */
  private void runDemo(LocalRuntime runtime) throws InterruptedException {
    try {
      demo(runtime);
    } catch (RuntimeException e) {
      err.println("buildqueue: the demo stopped: " + e.getMessage() + "; the server goes on serving");
    }
  }

  private void demo(LocalRuntime runtime) throws InterruptedException {
    Demo demo = new Demo(runtime.api(), out, System.console() != null && !"dumb".equals(env.get("TERM")));
    out.println();
    out.println("demo: " + Demo.DEDICATED_USER + " has a dedicated worker; the others share the shared lane");
    Map<Long, String> jobs = demo.submit(Demo.mix(400), Long.toString(System.currentTimeMillis(), 36));
    List<JsonNode> done = demo.watch(jobs, Duration.ofMillis(250));
    long succeeded = done.stream().filter(j -> j.path("status").asText().equals("succeeded")).count();
    out.println();
    out.println("demo: all " + done.size() + " jobs finished (" + succeeded + " succeeded, "
        + (done.size() - succeeded) + " failed as intended). Still serving on " + runtime.baseUri()
        + "; Ctrl-C to stop.");
    out.flush();
  }

  // ---- try

  /** The environment variable {@code try} reads its catalogue from when {@code --kinds} is absent. */
  static final String KINDS_FILE_ENV = "BUILDQUEUE_KINDS_FILE";
  /** How often {@code try} reads the job's new output. */
  static final Duration TRY_POLL = Duration.ofMillis(200);
  static final Duration TRY_SHUTDOWN_GRACE = Duration.ofSeconds(5);

  /**
   * {@code try KIND PAYLOAD}: one job through a queue of its own, with the same catalogue checks,
   * payload validation and workers (child processes) as {@code serve}, so a kind that works here
   * works on a server. Refusals exit {@value #USAGE} and queue nothing.
   */
  private int tryKind(List<String> args) {
    CommandLine cl = CommandLine.parse("try", args, Set.of("kinds"), Set.of());
    String kind = cl.positional(0, "a job kind: try <kind> <payload-json>");
    JsonNode payload = payload(cl.positional(1, "a payload: try <kind> <payload-json>, e.g. try demo '{\"steps\": 3}'"));
    cl.atMostPositionals(2, "try <kind> <payload-json> [--kinds FILE]");
    String kindsFile = cl.get("kinds", env.get(KINDS_FILE_ENV));
    Path dataDir;
    try {
      dataDir = Files.createTempDirectory("buildqueue-try-");
    } catch (IOException e) {
      throw new UncheckedIOException("could not make a temporary directory: " + e.getMessage(), e);
    }
    LocalSettings defaults = LocalSettings.defaults();
    // A short grace: the job has ended (or was interrupted) when the runtime closes, so only its
    // worker's last statements are left to wait for.
    LocalSettings settings = defaults.withPort(0).withDataDir(dataDir).withTickInterval(Duration.ofSeconds(1))
        .withShutdownGrace(TRY_SHUTDOWN_GRACE);
    AtomicBoolean interrupted = new AtomicBoolean();
    try {
      Path catalogue = DemoKinds.prepare(dataDir,
          kindsFile == null || kindsFile.isBlank() ? Optional.empty() : Optional.of(Path.of(kindsFile)), defaults.queue());
      String refused = refusal(KindCatalogue.load(catalogue, QueueKindLimits.of(defaults.queue())).registry(), kind,
          payload);
      if (refused != null) {
        // Said before a database starts (seconds), as the API would say it.
        err.println("buildqueue: " + refused);
        return USAGE;
      }
      try (LocalRuntime runtime = LocalRuntime.start(settings.withKindsFile(catalogue))) {
        // Ctrl-C stops the job's worker at once (a try is not a server: nothing waits for it), and
        // leaves neither the embedded PostgreSQL running nor the temporary directory behind. The
        // hook alone cleans up then: the directory goes only once the database has stopped.
        Thread hook = new Thread(() -> {
          interrupted.set(true);
          runtime.platform().liveWorkers().forEach(w -> runtime.platform().stop(w.toString(), "bq try was interrupted"));
          runtime.close();
          deleteQuietly(dataDir);
        }, "buildqueue-try-stop");
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
      err.println("buildqueue: interrupted; the job's worker was stopped");
      return INTERRUPTED;
    } finally {
      if (!interrupted.get()) {
        deleteQuietly(dataDir);
      }
    }
  }

  /** Why the API would refuse {@code kind} with {@code payload}, in its words; null if it would take them. */
  static String refusal(KindRegistry kinds, String kind, JsonNode payload) {
    Optional<PayloadSchema> schema = kinds.payloadSchema(kind);
    if (schema.isEmpty()) {
      return "unknown kind \"" + kind + "\"; the known kinds are: "
          + String.join(", ", new java.util.TreeSet<>(kinds.kinds()));
    }
    if (payload != null && !payload.isNull() && !payload.isObject()) {
      return "the payload must be a JSON object, e.g. '{}'";
    }
    try {
      schema.get().check(payload == null || payload.isNull() ? JSON.createObjectNode() : payload.deepCopy());
      return null;
    } catch (IllegalArgumentException e) {
      return "the payload is not valid for kind \"" + kind + "\": "
          + (e.getMessage() == null ? "the kind's validation refused it without saying why" : e.getMessage());
    }
  }

  private int tryOn(LocalRuntime runtime, String kind, JsonNode payload) {
    ApiClient api = new ApiClient(runtime.baseUri(), runtime.tokens().mint(defaultUser(), true, CLI_TOKEN_TTL));
    ObjectNode body = JSON.createObjectNode().put("kind", kind);
    body.set("payload", payload);
    ApiClient.Reply submitted = api.post("jobs", body);
    if (submitted.status() == 400 || submitted.status() == 422) {
      problem(submitted);
      return USAGE;
    }
    long id = accepted(submitted).json().path("id").asLong();
    out.println("[buildqueue] job " + id + " (" + kind + ") queued on a queue of its own; its output follows");
    long since = 0;
    while (true) {
      ApiClient.Reply log = accepted(api.get("jobs/" + id + "/log" + (since > 0 ? "?since=" + since : "")));
      long total = log.header(HttpApi.LOG_TOTAL_BYTES).map(Long::parseLong).orElse(0L);
      if (since > total) {
        out.println("[buildqueue] the job started a new attempt; its output starts over");
      }
      out.print(log.text());
      out.flush();
      since = total;
      if (JobStatus.of(log.header(HttpApi.JOB_STATUS).orElse("")).finished()) {
        break;
      }
      try {
        Thread.sleep(TRY_POLL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return API_ERROR;
      }
    }
    JsonNode job = accepted(api.get("jobs/" + id)).json();
    String status = job.path("status").asText();
    String error = job.path("error").asText("");
    out.println("[buildqueue] job " + id + " " + status + " after " + job.path("attempts").asInt() + " attempt"
        + (job.path("attempts").asInt() == 1 ? "" : "s") + ", progress " + job.path("progress").asInt()
        + (error.isEmpty() || job.path("error").isNull() ? "" : ": " + error));
    return "succeeded".equals(status) ? OK : API_ERROR;
  }

  private static void removeShutdownHook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // The hook is running or about to: it does the same cleanup.
    }
  }

  private static void deleteQuietly(Path dir) {
    try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // A temporary directory left behind is harmless; the outcome was already printed.
    }
  }

  // ---- client commands

  private int token(List<String> args) {
    CommandLine cl = CommandLine.parse("token", args, Set.of("data-dir", "hours"), Set.of("admin"));
    String user = cl.positional(0, "a user id: token <user> [--admin]");
    cl.atMostPositionals(1, "token <user> [--admin] [--hours N]");
    int hours = cl.intValue("hours", 24, 1, 24 * 366);
    out.println(tokens(cl).mint(user, cl.has("admin"), Duration.ofHours(hours)));
    return OK;
  }

  private int submit(List<String> args) {
    CommandLine cl = CommandLine.parse("submit", args, union(CLIENT_FLAGS, "user", "key", "supersede-key"), Set.of("json"));
    String kind = cl.positional(0, "a job kind: submit <kind> [payload-json]");
    cl.atMostPositionals(2, "submit <kind> [payload-json] [--user U] [--key K] [--supersede-key S]");
    ObjectNode body = JSON.createObjectNode().put("kind", kind);
    if (cl.positionals().size() > 1) {
      body.set("payload", payload(cl.positionals().get(1)));
    }
    if (cl.has("key")) {
      body.put("idempotencyKey", cl.get("key", null));
    }
    if (cl.has("supersede-key")) {
      body.put("supersedeKey", cl.get("supersede-key", null));
    }
    if (cl.has("api-url") && cl.has("user")) {
      throw new CommandLine.UsageException("with --api-url the token's subject is the user; drop --user");
    }
    String user = cl.get("user", defaultUser());
    ApiClient api = client(cl, user, false);
    // With a key the API answers a repeat with the job it made, so a submission refused before the
    // function ran may be sent again.
    ApiClient.Reply reply = accepted(cl.has("key") ? api.postIdempotent("jobs", body) : api.post("jobs", body));
    JsonNode job = reply.json();
    JsonNode superseded = job.path("superseded");
    String supersededLine = "";
    if (superseded.isObject()) {
      long cancelled = superseded.path("cancelledCount").asLong();
      JsonNode stopping = superseded.path("cancelRequested");
      supersededLine = System.lineSeparator() + "  superseded: " + (cancelled == 0 ? "no queued jobs"
          : cancelled + " queued job" + (cancelled == 1 ? "" : "s")
          + " cancelled (" + ids(superseded.path("cancelled")) + (superseded.path("cancelled").size() < cancelled ? ", ..." : "")
          + ")") + (stopping.isEmpty() ? "" : "; asked running job " + ids(stopping) + " to stop");
    }
    return answer(cl, reply.text(), (reply.status() == 201 ? "submitted job " : "already submitted with this key: job ")
        + job.path("id").asLong() + " (" + job.path("kind").asText() + ") for " + job.path("userId").asText()
        + " in lane " + job.path("lane").asText() + ": " + job.path("status").asText()
        + (job.path("position").isNull() ? "" : ", position " + job.path("position").asInt()) + supersededLine);
  }

  private static JsonNode payload(String text) {
    try {
      return JSON.readTree(text);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      String why = e.getOriginalMessage();
      int detail = why.indexOf(" (");
      throw new CommandLine.UsageException("the payload is not valid JSON (" + (detail < 0 ? why : why.substring(0, detail))
          + "); quote it, e.g. '{\"steps\": 5}'");
    }
  }

  private static String ids(JsonNode array) {
    StringBuilder s = new StringBuilder();
    array.forEach(id -> s.append(s.length() == 0 ? "" : ", ").append(id.asLong()));
    return s.toString();
  }

  private int status(List<String> args) {
    CommandLine cl = CommandLine.parse("status", args, union(CLIENT_FLAGS, "user"), Set.of("json"));
    cl.atMostPositionals(1, "status [job-id] [--user U]");
    ApiClient api = client(cl, "cli", true);
    if (!cl.positionals().isEmpty()) {
      String id = jobId(cl.positionals().get(0));
      JsonNode job = accepted(api.get("jobs/" + id)).json();
      JsonNode events = accepted(api.get("jobs/" + id + "/events")).json().path("events");
      ObjectNode both = JSON.createObjectNode();
      both.set("job", job);
      both.set("events", events);
      return answer(cl, both.toString(), Render.jobDetail(job, events).stripTrailing());
    }
    JsonNode lanes = accepted(api.get("lanes")).json().path("lanes");
    String jobsPath = "jobs?limit=20" + (cl.has("user")
        ? "&userId=" + URLEncoder.encode(cl.get("user", ""), StandardCharsets.UTF_8) : "");
    JsonNode list = accepted(api.get(jobsPath)).json().path("jobs");
    ObjectNode both = JSON.createObjectNode();
    both.set("lanes", lanes);
    both.set("jobs", list);
    StringBuilder text = new StringBuilder(Render.lanes(lanes)).append(System.lineSeparator());
    text.append(list.isEmpty() ? "no jobs yet" : "recent jobs" + (cl.has("user") ? " of " + cl.get("user", "") : "")
        + ", newest first:");
    list.forEach(j -> text.append(System.lineSeparator()).append("  ").append(Render.jobLine(j)));
    return answer(cl, both.toString(), text.toString());
  }

  private int dedicated(List<String> args) {
    CommandLine cl = CommandLine.parse("dedicated", args, CLIENT_FLAGS, Set.of("json"));
    String user = cl.positional(0, "a user id: dedicated <user> on|off");
    String onOff = cl.positional(1, "on or off: dedicated <user> on|off");
    cl.atMostPositionals(2, "dedicated <user> on|off");
    if (!onOff.equals("on") && !onOff.equals("off")) {
      throw new CommandLine.UsageException("say on or off, not \"" + onOff + "\": dedicated <user> on|off");
    }
    ObjectNode body = JSON.createObjectNode().put("dedicatedWorker", onOff.equals("on"));
    ApiClient.Reply reply = accepted(client(cl, "cli", true).put(userPath(user), body));
    JsonNode r = reply.json();
    long moved = r.path("movedCount").asLong();
    return answer(cl, reply.text(),
        user + (r.path("dedicatedWorker").asBoolean() ? " now has a dedicated worker" : " now shares workers")
            + ": new jobs wait in lane " + r.path("lane").asText()
            + (moved == 0 ? "" : "; " + moved + " queued job" + (moved == 1 ? "" : "s") + " moved there"));
  }

  private int quota(List<String> args) {
    CommandLine cl = CommandLine.parse("quota", args, CLIENT_FLAGS, Set.of("json"));
    String user = cl.positional(0, "a user id: quota <user> <max-queued-jobs>|default");
    String value = cl.positional(1, "a number or default: quota <user> <max-queued-jobs>|default");
    cl.atMostPositionals(2, "quota <user> <max-queued-jobs>|default");
    ObjectNode body = JSON.createObjectNode();
    if (value.equals("default")) {
      body.putNull("maxQueuedJobs");
    } else if (value.matches("[0-9]{1,9}")) {
      body.put("maxQueuedJobs", Integer.parseInt(value));
    } else {
      throw new CommandLine.UsageException("say a whole number or default, not \"" + value
          + "\": quota <user> <max-queued-jobs>|default");
    }
    ApiClient.Reply reply = accepted(client(cl, "cli", true).put(userPath(user), body));
    JsonNode r = reply.json();
    return answer(cl, reply.text(), user + " may have " + r.path("maxQueuedJobs").asLong() + " queued jobs at once"
        + (r.path("maxQueuedJobsIsDefault").asBoolean() ? " (the server's default)" : ""));
  }

  /** {@code users/{id}}, the id encoded as a path segment. */
  private static String userPath(String user) {
    return "users/" + URLEncoder.encode(user, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private int cancel(List<String> args) {
    CommandLine cl = CommandLine.parse("cancel", args, CLIENT_FLAGS, Set.of("json"));
    String id = jobId(cl.positional(0, "a job id: cancel <job-id>"));
    cl.atMostPositionals(1, "cancel <job-id>");
    ApiClient.Reply reply = accepted(client(cl, "cli", true).post("jobs/" + id + "/cancel", JSON.createObjectNode()));
    JsonNode job = reply.json();
    return answer(cl, reply.text(), "job " + id + ": " + job.path("status").asText()
        + (job.path("cancelRequested").asBoolean() && !"cancelled".equals(job.path("status").asText())
            ? " (cancel requested; its worker stops it within seconds)" : ""));
  }

  /** How often {@code logs --follow} asks for new output. */
  static final Duration FOLLOW_INTERVAL = Duration.ofSeconds(1);

  private int logs(List<String> args) {
    CommandLine cl = CommandLine.parse("logs", args, CLIENT_FLAGS, Set.of("follow"));
    String id = jobId(cl.positional(0, "a job id: logs <job-id> [--follow]"));
    cl.atMostPositionals(1, "logs <job-id> [--follow]");
    ApiClient api = client(cl, "cli", true);
    long since = 0;
    while (true) {
      ApiClient.Reply reply = accepted(api.get("jobs/" + id + "/log" + (since > 0 ? "?since=" + since : "")));
      long total = reply.header(HttpApi.LOG_TOTAL_BYTES).map(Long::parseLong).orElse(0L);
      long skipped = reply.header(HttpApi.LOG_SKIPPED_BYTES).map(Long::parseLong).orElse(0L);
      if (since > total) {
        out.println("[buildqueue] the job started a new attempt; its output starts over");
      }
      if (skipped > 0) {
        out.println("[buildqueue] " + skipped + " earlier bytes are not kept here; see the job's log location ("
            + "buildqueue status " + id + ")");
      }
      out.print(reply.text());
      out.flush();
      since = total;
      String status = reply.header(HttpApi.JOB_STATUS).orElse("");
      if (!cl.has("follow") || JobStatus.of(status).finished()) {
        return OK;
      }
      try {
        Thread.sleep(FOLLOW_INTERVAL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return OK;
      }
    }
  }

  private ApiClient client(CommandLine cl, String user, boolean admin) {
    if (cl.has("api-url")) {
      return remote(cl);
    }
    if (cl.has("token")) {
      throw new CommandLine.UsageException("--token goes with --api-url; the local server's tokens come from --data-dir");
    }
    int port = cl.intValue("port", LocalSettings.DEFAULT_PORT, 1, 65535);
    return new ApiClient(URI.create("http://127.0.0.1:" + port + "/"), tokens(cl).mint(user, admin, CLI_TOKEN_TTL),
        ApiClient.NotReadyRetry.STANDARD, d -> Thread.sleep(d.toMillis()), notice -> err.println("buildqueue: " + notice));
  }

  /** A deployed API (the stack's ApiUrl output) with a token from its issuer: the token's subject is the user. */
  private ApiClient remote(CommandLine cl) {
    String url = cl.get("api-url", null);
    String token = cl.get("token", env.get(API_TOKEN_ENV));
    if (token == null || token.isBlank()) {
      throw new CommandLine.UsageException("--api-url needs a bearer token from the API's issuer: --token T, or "
          + API_TOKEN_ENV);
    }
    URI base;
    try {
      base = URI.create(url.endsWith("/") ? url : url + "/");
    } catch (IllegalArgumentException e) {
      throw new CommandLine.UsageException("--api-url is not a URL: " + url);
    }
    if (!"https".equals(base.getScheme()) && !"http".equals(base.getScheme()) || base.getHost() == null) {
      throw new CommandLine.UsageException("--api-url must be an http(s) URL such as the stack's ApiUrl, not " + url);
    }
    return new ApiClient(base, token, ApiClient.NotReadyRetry.STANDARD, d -> Thread.sleep(d.toMillis()),
        notice -> err.println("buildqueue: " + notice));
  }

  private LocalTokens tokens(CommandLine cl) {
    return LocalTokens.open(Path.of(cl.get("data-dir", LocalSettings.DEFAULT_DATA_DIR.toString())).toAbsolutePath());
  }

  /** The API refused a request: the command ends with the problem it answered. */
  static final class RefusedException extends RuntimeException {
    final ApiClient.Reply reply;

    RefusedException(ApiClient.Reply reply) {
      super("HTTP " + reply.status(), null, false, false);
      this.reply = reply;
    }
  }

  /** The reply if the API accepted the request; a refusal ends the command with its problem. */
  private static ApiClient.Reply accepted(ApiClient.Reply reply) {
    if (!reply.ok()) {
      throw new RefusedException(reply);
    }
    return reply;
  }

  /** Prints a command's result: the API's JSON with {@code --json}, otherwise the text for people. */
  private int answer(CommandLine cl, String json, String text) {
    out.println(cl.has("json") ? json : text);
    return OK;
  }

  private int problem(ApiClient.Reply reply) {
    JsonNode p = reply.json();
    String detail = p.path("detail").asText(reply.text());
    String title = p.path("title").asText("");
    err.println("buildqueue: " + (title.isEmpty() ? "" : title + " ") + "(HTTP " + reply.status() + "): " + detail);
    return API_ERROR;
  }

  private static String jobId(String text) {
    if (!text.matches("[0-9]{1,18}")) {
      throw new CommandLine.UsageException("a job id is a whole number, not \"" + text + "\"");
    }
    return text;
  }

  private String defaultUser() {
    return env.getOrDefault("USER", System.getProperty("user.name", "local"));
  }

  private static Set<String> union(Set<String> base, String... more) {
    java.util.HashSet<String> all = new java.util.HashSet<>(base);
    all.addAll(List.of(more));
    return all;
  }
}
