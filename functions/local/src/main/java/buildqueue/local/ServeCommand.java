package buildqueue.local;

import buildqueue.core.Ledger;
import buildqueue.core.QueueConfig;
import buildqueue.platform.Capacity;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

/**
 * {@code serve}: starts the server and blocks until the JVM is asked to stop (SIGTERM, Ctrl-C),
 * when the shutdown hook runs {@link LocalRuntime#shutdown()}.
 */
record ServeCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        serve [--demo] [--port 8080] [--data-dir .buildqueue] [--database-url jdbc:postgresql://...]
              [--tick-interval 5s] [--shared-slots 1] [--shutdown-grace 30s] [--kinds kinds.json]
              [--webhooks-allow-private-targets]
              [--worker-lifetime 60m] [--shared-order fair|fifo] [--max-queued-jobs 1000]
              [--max-log-bytes 100m] [--retention 7d] [--job-user nobody]
              [--default-capacity on-demand|spot|spot-then-on-demand] [--reclaim-grace 10s]
            Runs the queue, the HTTP API and the dashboard on http://127.0.0.1:<port>/, with
            workers as child processes. --demo also submits a mix of jobs and shows them live.
            --kinds adds the job kinds of a kind catalogue (README: Job kinds) to the built-in demo.
            --shared-order: fair (default) takes turns by user in the shared lane, fifo takes the
            oldest job; --max-queued-jobs: each user's default quota of queued jobs.
            --max-log-bytes: a job attempt's output kept in <data-dir>/jobs/job-<id>.log at most
            (k, m, g: KiB, MiB, GiB); the rest is dropped and one line says how much.
            --retention: finished jobs, their logs and exited workers are deleted after this.
            --job-user: run as root, the server runs its jobs' programs as this user (default nobody).
            --default-capacity: what the workers of kinds that name no capacity run on; a Spot
            worker can be reclaimed (reclaim <worker-id>), with --reclaim-grace before SIGKILL.
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse(
            "serve",
            args,
            Set.of(
                "port",
                "data-dir",
                "database-url",
                "tick-interval",
                "shared-slots",
                "shutdown-grace",
                "kinds",
                "worker-lifetime",
                "shared-order",
                "max-queued-jobs",
                "worker-cpu",
                "worker-memory",
                "budget-vcpu-seconds",
                "budget-period",
                "max-log-bytes",
                "retention",
                "job-user",
                "default-capacity",
                "reclaim-grace"),
            Set.of("demo", "webhooks-allow-private-targets"));
    cl.atMostPositionals(
        0, "serve [--demo] [--port N] [--data-dir DIR] [--database-url URL] [--kinds FILE]");
    boolean demo = cl.has("demo");
    LocalSettings defaults = LocalSettings.defaults();
    // The demo shows two workers sharing a lane beside a dedicated one, unless told otherwise.
    int sharedSlots = cl.intValue("shared-slots", demo ? 2 : defaults.queue().sharedSlots(), 1, 64);
    QueueConfig queue =
        defaults
            .queue()
            .withSharedSlots(sharedSlots)
            .withMaxQueuedJobs(
                cl.intValue("max-queued-jobs", defaults.queue().maxQueuedJobs(), 1, 1_000_000));
    String order = cl.get("shared-order", defaults.queue().sharedOrder().label());
    if (QueueConfig.SharedOrder.ofLabel(order) == null) {
      throw new CommandLine.UsageException(
          "--shared-order must be fair or fifo, was \"" + order + "\"");
    }
    queue = queue.withSharedOrder(QueueConfig.SharedOrder.ofLabel(order));
    queue = queue.toBuilder().ledger(ledger(cl, queue.ledger())).build();
    Duration lifetime = cl.duration("worker-lifetime", queue.workerLifetime());
    if (lifetime.compareTo(Duration.ofMinutes(1)) < 0) {
      throw new CommandLine.UsageException(
          "--worker-lifetime must be at least 1m, was " + cl.get("worker-lifetime", ""));
    }
    queue = queue.withLease(lifetime, queue.leaseSlack(), queue.deadlineMargin());
    Duration retention = cl.duration("retention", queue.retention());
    if (retention.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new CommandLine.UsageException(
          "--retention must be at least 1s, was " + cl.get("retention", ""));
    }
    queue = queue.withRetention(retention);
    LocalSettings settings =
        defaults
            .withPort(cl.intValue("port", LocalSettings.DEFAULT_PORT, 0, 65535))
            .withDataDir(Path.of(cl.get("data-dir", LocalSettings.DEFAULT_DATA_DIR.toString())))
            .withDatabase(
                cl.get("database-url", null),
                cli.env.get("BUILDQUEUE_DATABASE_USER"),
                cli.env.get("BUILDQUEUE_DATABASE_PASSWORD"))
            .withTickInterval(cl.duration("tick-interval", defaults.tickInterval()))
            .withShutdownGrace(cl.duration("shutdown-grace", defaults.shutdownGrace()))
            .withQueue(queue)
            .withKindsFile(cl.has("kinds") ? Path.of(cl.get("kinds", "")) : null)
            .withMaxLogBytes(cl.bytes("max-log-bytes", defaults.maxLogBytes()))
            .withWebhooksAllowPrivateTargets(cl.has("webhooks-allow-private-targets"));
    String jobUser = cl.get("job-user", defaults.jobUser());
    if (!LocalSettings.USER_NAME.matcher(jobUser).matches()) {
      throw new CommandLine.UsageException(
          "--job-user must be a user name, was \"" + jobUser + "\"");
    }
    settings = settings.withJobUser(jobUser);
    String capacity = cl.get("default-capacity", defaults.defaultCapacity().label());
    try {
      settings = settings.withDefaultCapacity(Capacity.ofLabel(capacity));
    } catch (IllegalArgumentException e) {
      throw new CommandLine.UsageException(
          "--default-capacity must be one of " + Capacity.labels() + ", not \"" + capacity + "\"");
    }
    Duration reclaimGrace = cl.duration("reclaim-grace", defaults.reclaimGrace());
    if (reclaimGrace.isNegative() || reclaimGrace.compareTo(Duration.ofMinutes(2)) > 0) {
      throw new CommandLine.UsageException(
          "--reclaim-grace must be from 0s to 2m (a Spot reclaim's warning on AWS), was "
              + cl.get("reclaim-grace", ""));
    }
    settings = settings.withReclaimGrace(reclaimGrace);

    LocalRuntime runtime;
    try {
      if (demo) {
        settings =
            settings.withKindsFile(
                DemoKinds.prepare(settings.dataDir(), settings.kindsFile(), queue));
      }
      runtime = LocalRuntime.start(settings);
    } catch (RuntimeException e) {
      cli.err.println("buildqueue: the server did not start: " + e.getMessage());
      return Main.API_ERROR;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  cli.err.println(
                      "buildqueue: stopping: no new requests, ticks or workers; "
                          + (runtime.settings().databaseUrl() == null
                              ? "running jobs are stopped with their progress and run again from it at the next start"
                              : "running workers go on and the next start adopts them"));
                  runtime.shutdown();
                  stopped.countDown();
                },
                "buildqueue-shutdown"));

    printBanner(runtime, settings, queue, demo);
    try {
      if (demo) {
        runDemo(runtime);
      }
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return Main.OK;
  }

  /** What runs where: the API's address, the data, the kinds, the job user, the lanes, the logs. */
  private void printBanner(
      LocalRuntime runtime, LocalSettings settings, QueueConfig queue, boolean demo) {
    PrintStream out = cli.out;
    int sharedSlots = queue.sharedSlots();
    out.println("buildqueue is running: API and dashboard on " + runtime.baseUri());
    out.println(
        "  data in "
            + settings.dataDir()
            + (settings.databaseUrl() == null
                ? " (embedded PostgreSQL)"
                : ", database " + LocalDatabase.redacted(settings.databaseUrl())));
    out.println(
        "  job kinds: demo"
            + runtime.kinds().kinds().stream()
                .map(k -> ", " + k.name())
                .collect(Collectors.joining())
            + runtime
                .kinds()
                .file()
                .map(f -> " (catalogue " + f + ")")
                .orElse(" (no catalogue: serve --kinds FILE adds one)"));
    out.println(
        "  jobs run as: "
            + settings
                .effectiveJobUser()
                .map(u -> u + " (the server runs as root; --job-user names another)")
                .orElse(
                    "the server's own user "
                        + System.getProperty("user.name")
                        + " (README: what a job can reach)"));
    out.println(
        "  shared lane: "
            + sharedSlots
            + (sharedSlots == 1 ? " slot" : " slots")
            + ", "
            + (queue.sharedOrder() == QueueConfig.SharedOrder.FAIR
                ? "fair (turns by user)"
                : "fifo")
            + ", at most "
            + queue.maxQueuedJobs()
            + " queued jobs a user"
            + "; worker logs in "
            + settings.dataDir().resolve("workers"));
    out.println(
        "  workers run on "
            + settings.defaultCapacity().label()
            + " unless their kind names its capacity; a Spot worker can be reclaimed"
            + " (reclaim <worker-id>: SIGTERM, SIGKILL after "
            + describe(settings.reclaimGrace())
            + ")");
    out.println(
        "  job logs in "
            + settings.dataDir().resolve("jobs")
            + ", at most "
            + settings.maxLogBytes()
            + " bytes an attempt; finished jobs and their logs are deleted after "
            + describe(queue.retention()));
    if (demo) {
      out.println(
          "  dashboard token (admin, valid 12 h): "
              + runtime.tokens().mint("demo", true, Duration.ofHours(12)));
    } else {
      out.println("  for a dashboard token: java -jar buildqueue-local.jar token <you> --admin");
    }
    out.println("  stop with Ctrl-C (SIGTERM)");
    out.flush();
  }

  private static String describe(Duration d) {
    if (d.toDays() > 0 && d.equals(Duration.ofDays(d.toDays()))) {
      return d.toDays() + (d.toDays() == 1 ? " day" : " days");
    }
    return d.toString().substring(2).toLowerCase(Locale.ROOT);
  }

  /** A demo that goes wrong says so and leaves the server serving. */
  private void runDemo(LocalRuntime runtime) throws InterruptedException {
    try {
      demo(runtime);
    } catch (RuntimeException e) {
      cli.err.println(
          "buildqueue: the demo stopped: " + e.getMessage() + "; the server goes on serving");
    }
  }

  private void demo(LocalRuntime runtime) throws InterruptedException {
    PrintStream out = cli.out;
    Demo demo =
        new Demo(
            runtime.api(), out, System.console() != null && !"dumb".equals(cli.env.get("TERM")));
    out.println();
    out.println(
        "demo: "
            + Demo.DEDICATED_USER
            + " has a dedicated worker; the others share the shared lane");
    Map<Long, String> jobs =
        demo.submit(Demo.mix(400), Long.toString(System.currentTimeMillis(), 36));
    List<JsonNode> done = demo.watch(jobs, Duration.ofMillis(250));
    long succeeded =
        done.stream().filter(j -> j.path("status").asText().equals("succeeded")).count();
    out.println();
    out.println(
        "demo: all "
            + done.size()
            + " jobs finished ("
            + succeeded
            + " succeeded, "
            + (done.size() - succeeded)
            + " failed as intended). Still serving on "
            + runtime.baseUri()
            + "; Ctrl-C to stop.");
    out.flush();
  }

  /**
   * The ledger's settings (docs/architecture.md §4.8): what a worker counts as (a child's wall time
   * × these sizes) and every user's budget unless an admin set their own.
   */
  private static Ledger ledger(CommandLine cl, Ledger defaults) {
    int cpu = cl.intValue("worker-cpu", defaults.vcpuMilli() * 1024 / 1000, 1, 16384);
    int memory = cl.intValue("worker-memory", defaults.memoryMb(), 1, 122880);
    Long budget =
        cl.has("budget-vcpu-seconds")
            ? Long.valueOf(cl.intValue("budget-vcpu-seconds", 0, 0, Integer.MAX_VALUE))
            : defaults.defaultBudgetVcpuSeconds();
    String period = cl.get("budget-period", defaults.budgetPeriod());
    if (!Ledger.PERIODS.contains(period)) {
      throw new CommandLine.UsageException(
          "--budget-period must be month, week or day, was \"" + period + "\"");
    }
    return defaults.withWorkerSize(cpu * 1000 / 1024, memory).withBudget(budget, period);
  }
}
