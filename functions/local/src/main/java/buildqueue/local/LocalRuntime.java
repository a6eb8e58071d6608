package buildqueue.local;

import buildqueue.api.HttpApi;
import buildqueue.artifacts.DirectoryArtifactStore;
import buildqueue.core.ArtifactSweep;
import buildqueue.core.BuildQueue;
import buildqueue.core.Capacities;
import buildqueue.core.JobQueries;
import buildqueue.core.OutboxTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.TickBudget;
import buildqueue.core.TickSchedule;
import buildqueue.core.WebhookDeliveries;
import buildqueue.core.WebhookHttp;
import buildqueue.db.Database;
import buildqueue.db.JdbcDatabase;
import buildqueue.db.Migrator;
import buildqueue.kinds.KindCatalogue;
import buildqueue.worker.QueueKindLimits;
import buildqueue.worker.exec.JobUser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * The whole system in this JVM: PostgreSQL (embedded or given), migrations, the HTTP API on
 * 127.0.0.1, the tick on a timer, and workers as child processes. {@link #shutdown()} is what
 * SIGTERM and Ctrl-C do: dispatch nothing more, stop accepting requests and stop the tick; then,
 * with the embedded database, stop the running workers gracefully (their jobs are interrupted with
 * their progress and run again from it at the next start) before the database stops; with an
 * external one, leave them running for the next start to adopt.
 */
public final class LocalRuntime implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(LocalRuntime.class.getName());

  /** The workers' copy of the kind catalogue, in the data directory. */
  static final String WORKER_KINDS_FILE = "kinds.json";

  private final LocalSettings settings;
  private final KindCatalogue kinds;
  private final LocalTokens tokens;
  private final LocalDatabase database;
  private final Database db;
  private final LocalProcessPlatform platform;
  private final BuildQueue queue;
  private final HttpApi api;
  private final LocalHttpServer http;
  private final ScheduledExecutorService ticker;
  private final DiskSweep disk;
  private final DirectoryArtifactStore artifacts;
  private final ArtifactSweep artifactSweep;
  private final OutboxTransitions outbox;
  private final WebhookDeliveries webhooks;

  /** Runs the webhook deliverer beside the tick, so a slow endpoint never holds the tick. */
  private final ExecutorService webhookRunner =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "buildqueue-webhooks");
            t.setDaemon(true);
            return t;
          });

  private final AtomicBoolean delivering = new AtomicBoolean();
  private final AtomicBoolean stopped = new AtomicBoolean();

  /**
   * The first tick sweeps the disk whatever it housekept: files of jobs deleted while no server
   * ran.
   */
  private boolean swept;

  private final LocalTickSchedule schedule;

  private LocalRuntime(
      LocalSettings settings,
      KindCatalogue kinds,
      LocalTokens tokens,
      LocalDatabase database,
      Database db,
      LocalProcessPlatform platform,
      BuildQueue queue,
      HttpApi api,
      LocalHttpServer http,
      ScheduledExecutorService ticker,
      LocalTickSchedule schedule,
      DirectoryArtifactStore artifacts) {
    this.settings = settings;
    this.artifacts = artifacts;
    this.artifactSweep = new ArtifactSweep(db, artifacts);
    this.schedule = schedule;
    this.kinds = kinds;
    this.tokens = tokens;
    this.database = database;
    this.db = db;
    this.platform = platform;
    this.queue = queue;
    this.api = api;
    this.http = http;
    this.ticker = ticker;
    this.outbox = new OutboxTransitions(db, QueueClock.DATABASE);
    this.webhooks =
        new WebhookDeliveries(
            db, QueueClock.DATABASE, new WebhookHttp(settings.webhooksAllowPrivateTargets()));
    this.disk =
        new DiskSweep(
            database.dataSource(), LocalProcessPlatform.Directories.under(settings.dataDir()));
  }

  public static LocalRuntime start(LocalSettings settings) {
    return start(settings, WorkerCommand.forThisJvm());
  }

  /**
   * Starts everything, or nothing: a part that fails to start closes the parts before it. The kind
   * catalogue is checked first, so a bad one ({@link buildqueue.kinds.KindCatalogueException})
   * starts nothing at all, not even the data directory.
   */
  public static LocalRuntime start(LocalSettings settings, WorkerCommand workerCommand) {
    KindCatalogue kinds =
        settings
            .kindsFile()
            .map(f -> KindCatalogue.load(f, QueueKindLimits.of(settings.queue())))
            .orElseGet(KindCatalogue::none);
    Deque<AutoCloseable> opened = new ArrayDeque<>();
    try {
      Optional<String> jobUser = settings.effectiveJobUser();
      jobUser.ifPresent(
          JobUser::lookup); // a user that does not exist fails the start, not every job
      Files.createDirectories(settings.dataDir());
      Optional<Path> workerKinds = workerCopy(kinds, settings.dataDir());
      LocalTokens tokens = LocalTokens.open(settings.dataDir());
      LocalDatabase database = LocalDatabase.open(settings);
      opened.push(database);
      Database db = new JdbcDatabase(database.dataSource());
      List<String> applied = new Migrator(db).migrate();
      if (!applied.isEmpty()) {
        LOG.log(Level.INFO, "applied migrations {0}", applied);
      }
      database.allowWorkerLogin(db);
      if (jobUser.isPresent()) {
        closeDataDirectory(settings.dataDir()); // now that all it holds is there
      }
      LocalProcessPlatform platform =
          new LocalProcessPlatform(
              workerCommand,
              new LocalProcessPlatform.WorkerDatabase(
                  database.workerUrl(), database.workerUser(), database.workerPassword()),
              settings.queue(),
              LocalProcessPlatform.Directories.under(settings.dataDir()),
              LocalProcessPlatform.thisHost(),
              workerKinds,
              settings.maxLogBytes(),
              jobUser);
      opened.push(platform);
      LocalTickSchedule schedule =
          new LocalTickSchedule(LocalTickSchedule.fallbackFor(settings.queue().retention()));
      BuildQueue queue =
          new BuildQueue(
              db,
              platform,
              settings.queue(),
              QueueClock.DATABASE,
              BuildQueue.ExitListener.NONE,
              null,
              schedule);
      // Each kind on the capacity its catalogue names, as on AWS: a Spot worker is recorded as
      // such, billed at Spot prices, and open to a simulated reclaim.
      queue.useCapacities(new Capacities(settings.defaultCapacity(), kinds.capacities()));
      platform.onStopped(queue::taskStopped);
      // The artifact store: the worker processes put files in it, the API serves them from it.
      DirectoryArtifactStore artifacts =
          new DirectoryArtifactStore(
              LocalProcessPlatform.Directories.under(settings.dataDir()).artifacts());
      HttpApi api =
          new HttpApi(
                  queue,
                  new JobQueries(db, settings.queue(), QueueClock.DATABASE),
                  kinds.registry(),
                  artifacts)
              .withSpotReclaims(new LocalReclaims(db, platform, settings.reclaimGrace()));
      LocalHttpServer http = LocalHttpServer.start(settings.port(), tokens, api::handle);
      opened.push(http);
      ScheduledExecutorService ticker =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "buildqueue-tick");
                t.setDaemon(true);
                return t;
              });
      LocalRuntime runtime =
          new LocalRuntime(
              settings, kinds, tokens, database, db, platform, queue, api, http, ticker, schedule,
              artifacts);
      // The first tick runs at once: after a restart it re-checks the workers the last server left.
      ticker.scheduleWithFixedDelay(
          runtime::tick, 0, settings.tickInterval().toMillis(), TimeUnit.MILLISECONDS);
      return runtime;
    } catch (IOException e) {
      closeAll(opened);
      throw new UncheckedIOException("could not start the local server: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      closeAll(opened);
      throw e;
    }
  }

  /**
   * Where jobs run as another user: the data directory may be passed through (mode 711: its
   * attempts' directories are under {@code work/}) but not listed, and every other entry in it is
   * the server's alone. {@code workers/} and {@code jobs/} are made here, before any worker, so the
   * logs the workers write in them are never reachable whatever their own mode.
   */
  private static void closeDataDirectory(Path dataDir) throws IOException {
    Set<PosixFilePermission> traverseOnly = PosixFilePermissions.fromString("rwx--x--x");
    LocalProcessPlatform.Directories dirs = LocalProcessPlatform.Directories.under(dataDir);
    Files.createDirectories(dirs.work());
    Files.createDirectories(dirs.workerLogs());
    Files.createDirectories(dirs.jobLogs());
    Files.setPosixFilePermissions(dataDir, traverseOnly);
    try (Stream<Path> entries = Files.list(dataDir)) {
      for (Path entry : entries.toList()) {
        if (entry.equals(dirs.work())) {
          Files.setPosixFilePermissions(entry, traverseOnly);
        } else if (entry.equals(DemoKinds.directory(dataDir)) && Files.isDirectory(entry)) {
          // serve --demo's script is a job's program: readable, beside a catalogue that is not.
          Files.setPosixFilePermissions(entry, traverseOnly);
          try (Stream<Path> demo = Files.list(entry)) {
            for (Path file : demo.toList()) {
              ownerOnly(file);
            }
          }
          Files.setPosixFilePermissions(
              DemoKinds.script(dataDir), PosixFilePermissions.fromString("rw-r--r--"));
        } else {
          ownerOnly(entry);
        }
      }
    }
  }

  private static void ownerOnly(Path entry) throws IOException {
    if (!Files.isSymbolicLink(entry)) {
      Set<PosixFilePermission> mode = Files.getPosixFilePermissions(entry);
      mode.removeIf(p -> !p.name().startsWith("OWNER_"));
      Files.setPosixFilePermissions(entry, mode);
    }
  }

  /**
   * The catalogue the workers load: a copy, in the data directory, of the text this server checked,
   * so that editing the file while the server runs cannot give workers other kinds than the API's
   * (an edit takes effect at the next start).
   */
  private static Optional<Path> workerCopy(KindCatalogue kinds, Path dataDir) throws IOException {
    if (kinds.file().isEmpty()) {
      return Optional.empty();
    }
    Path copy = dataDir.resolve(WORKER_KINDS_FILE);
    Path partial = dataDir.resolve(WORKER_KINDS_FILE + ".partial");
    Files.writeString(partial, kinds.json(), StandardCharsets.UTF_8);
    // Atomic, so a worker that starts now reads the old copy or the new one, never half of one.
    Files.move(partial, copy, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    return Optional.of(copy);
  }

  private static void closeAll(Deque<AutoCloseable> opened) {
    while (!opened.isEmpty()) {
      try {
        opened.pop().close();
      } catch (Exception e) {
        LOG.log(Level.WARNING, "while closing after a failed start: " + e.getMessage());
      }
    }
  }

  /**
   * Unpublished uploads of attempts that can no longer publish, and the files of jobs the retention
   * deleted ({@link ArtifactSweep}), as the tick on AWS sweeps them: only when its survey found an
   * upload to sweep or its housekeeping deleted jobs, and at a server's first tick (what a server
   * killed before its sweep left), so an idle queue's tick sends no sweep.
   */
  private void sweepArtifacts() {
    try {
      if (!artifacts.isEmpty()) {
        artifactSweep.sweep();
      }
    } catch (IOException e) {
      LOG.log(Level.WARNING, "artifact sweep failed; the next tick retries: " + e);
    }
  }

  private void tick() {
    TickSchedule.Cause cause = schedule.due(System.nanoTime());
    if (cause == null) {
      return; // idle: the database is left alone until an enqueue arms the tick, or the fallback
    }
    try {
      publishLocally();
      BuildQueue.TickReport r = queue.tick(TickBudget.of(queue.maxTickBudget()), false, cause);
      if (r.found().webhooksDue()) {
        deliverWebhooks();
      }
      if (r.exited() + r.reclaimed() + r.relaunched() + r.stopRequests() > 0) {
        LOG.log(Level.INFO, "tick: {0}", r);
      }
      boolean firstTick = !swept;
      if (firstTick || r.housekeptJobs() + r.housekeptWorkers() > 0) {
        // The retention deleted jobs or workers: what this runtime kept of them on disk goes too.
        disk.sweep(platform.knownWorkerIds());
        swept = true;
      }
      if (firstTick || r.found().artifactsToSweep() || r.housekeptJobs() > 0) {
        sweepArtifacts();
      }
    } catch (RuntimeException e) {
      // A failed tick must not end the schedule: the next one starts over from the database.
      LOG.log(Level.WARNING, "tick failed; the next one retries: " + e);
    }
  }

  /** The most one delivery pass runs; what is left is due at the next tick's survey. */
  private static final Duration WEBHOOK_PASS = Duration.ofSeconds(60);

  /**
   * Starts a delivery pass on its own thread unless one runs: the tick's survey found deliveries
   * due, and with no endpoint registered it never does, so webhooks cost an idle or endpoint-less
   * queue nothing.
   */
  private void deliverWebhooks() {
    if (!delivering.compareAndSet(false, true)) {
      return;
    }
    webhookRunner.execute(
        () -> {
          try {
            webhooks.deliverDue(WEBHOOK_PASS);
          } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "a webhook delivery pass failed; the next tick retries: " + e);
          } finally {
            delivering.set(false);
          }
        });
  }

  /**
   * Claims per tick at most: a backlog (a first start on an old data directory) is worked off over
   * several ticks.
   */
  private static final int PUBLISH_BATCHES = 10;

  /**
   * No event bus runs on one machine, so a job's history is published as soon as it is written (it
   * stays readable in the job's record). Without this no local job would ever be published, and the
   * retention deletes published jobs only.
   */
  private void publishLocally() {
    for (int i = 0; i < PUBLISH_BATCHES; i++) {
      List<Long> ids =
          outbox.claimPending(OutboxTransitions.MAX_CLAIM).stream()
              .map(OutboxTransitions.PendingEvent::id)
              .toList();
      if (!ids.isEmpty()) {
        outbox.settle(ids, List.of());
      }
      if (ids.size() < OutboxTransitions.MAX_CLAIM) {
        return;
      }
    }
  }

  public int port() {
    return http.port();
  }

  public URI baseUri() {
    return URI.create("http://127.0.0.1:" + port() + "/");
  }

  public LocalSettings settings() {
    return settings;
  }

  /** The kinds the API accepts and the workers run, beside the built-in {@code demo}. */
  public KindCatalogue kinds() {
    return kinds;
  }

  public LocalTokens tokens() {
    return tokens;
  }

  public BuildQueue queue() {
    return queue;
  }

  public HttpApi api() {
    return api;
  }

  public LocalProcessPlatform platform() {
    return platform;
  }

  /**
   * A simulated Fargate Spot reclaim of worker {@code workerId} (what {@code bq reclaim} asks the
   * server for): SIGTERM, SIGKILL after {@link LocalSettings#reclaimGrace}, and evidence with the
   * stop code {@code SpotInterruption}; refused for a worker not running on Spot.
   */
  public buildqueue.platform.SpotReclaims.Outcome reclaim(long workerId) {
    return new LocalReclaims(db, platform, settings.reclaimGrace()).reclaim(workerId);
  }

  /** The server's own database handle. */
  public Database database() {
    return db;
  }

  /**
   * What SIGTERM and Ctrl-C do. First nothing is dispatched or launched any more (an exit seen from
   * then on still frees its slot; what it would have dispatched stays queued for the next start),
   * then requests and ticks stop. With the embedded database, which the workers cannot do without,
   * every running worker gets SIGTERM: it stops its job's program (the kind's grace, within its
   * stop timeout), records an interruption that keeps the job's progress, takes no next job and
   * exits; one not gone within {@link LocalSettings#shutdownGrace()} is killed with what its job
   * left. Only then does the database stop, so no job's program runs on without a worker watching
   * it, and the next start runs each interrupted job again from its progress. With an external
   * database the workers are left running and the next start adopts them. Idempotent.
   */
  public void shutdown() {
    if (!stopped.compareAndSet(false, true)) {
      return;
    }
    queue.stopDispatching();
    platform.stopLaunching();
    http.close(Duration.ofSeconds(1));
    ticker.shutdown();
    webhookRunner.shutdownNow();
    try {
      ticker.awaitTermination(30, TimeUnit.SECONDS);
      webhookRunner.awaitTermination(15, TimeUnit.SECONDS);
      List<LocalTaskId> running = platform.liveWorkers();
      if (database.embedded() && !running.isEmpty()) {
        LOG.log(
            Level.INFO,
            "stopping {0} running worker(s) (their jobs keep their progress and run again at the"
                + " next start): {1}",
            running.size(),
            running);
        if (!platform.stopWorkers(settings.shutdownGrace())) {
          LOG.log(
              Level.WARNING,
              "workers still running {0}; the database stops now, their jobs are recovered at the"
                  + " next start",
              platform.liveWorkers());
        }
      } else if (!running.isEmpty()) {
        LOG.log(
            Level.INFO,
            "leaving {0} worker(s) running: {1}; their exits are seen after the next start",
            running.size(),
            running);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      platform.close();
      database.close();
    }
  }

  @Override
  public void close() {
    shutdown();
  }
}
