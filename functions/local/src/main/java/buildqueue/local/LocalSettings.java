package buildqueue.local;

import buildqueue.BuildQueueException;
import buildqueue.core.QueueConfig;
import buildqueue.platform.Capacity;
import buildqueue.worker.JobLog;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * How the local server runs. Immutable; {@link #defaults()} documents every default.
 *
 * @param port the HTTP port on 127.0.0.1 (default 8080; 0 picks a free one)
 * @param dataDir where the embedded database, the token secret and the worker logs live (default
 *     {@code ./.buildqueue})
 * @param databaseUrl an existing PostgreSQL ({@code jdbc:postgresql://…}) instead of the embedded
 *     one (default: none, embedded)
 * @param databaseUser user for {@code databaseUrl} (environment {@code BUILDQUEUE_DATABASE_USER})
 * @param databasePassword password for {@code databaseUrl} (environment {@code
 *     BUILDQUEUE_DATABASE_PASSWORD}; never a flag, so it stays out of {@code ps})
 * @param tickInterval how often the tick runs (default 5 s)
 * @param shutdownGrace on SIGTERM or Ctrl-C with the embedded database, how long running workers,
 *     which the server sends SIGTERM, may take to stop their jobs and exit before SIGKILL (default
 *     30 s; each stops within its own stop timeout, 10 s, unless it hangs); with an external
 *     database the server does not stop them: they go on and the next start adopts them
 * @param queue the queue's settings (default {@link QueueConfig#defaults()}, its ledger billing a
 *     child's wall time: {@link buildqueue.core.Ledger#wallTime()})
 * @param kindsFile the kind catalogue the API and the workers read (default: none, only the
 *     built-in {@code demo} kind); made absolute, because workers run from another directory
 * @param maxLogBytes a job attempt's output kept at most, in bytes (default {@link
 *     JobLog#DEFAULT_MAX_LOG_BYTES}, 100 MiB): past it the output is dropped and one line says how
 *     much; the job's file, its tail and {@code logs} show the rest was cut
 * @param jobUser when the server runs as root, the unprivileged user its jobs' programs run as
 *     (default {@value #DEFAULT_JOB_USER}); naming the server's own user runs them as that user.
 *     Without root, jobs run as the server's user whatever this says.
 * @param defaultCapacity what the workers of kinds that name no {@code capacity} run on (default
 *     {@code on-demand}): locally a Spot worker is a child process like any other, recorded as
 *     {@code spot} (its bill at Spot prices) and open to a simulated reclaim ({@code bq reclaim})
 * @param reclaimGrace what a simulated Spot reclaim gives a worker between SIGTERM and SIGKILL
 *     (default 10 s, the workers' own stop timeout; AWS gives two minutes): a shorter one kills a
 *     worker before it has recorded its job's interruption, and the exit's evidence recovers it
 * @param webhooksAllowPrivateTargets whether webhook deliveries may reach private, loopback and
 *     link-local addresses (default false: refused, docs/architecture.md "Webhooks"; a receiver on
 *     this machine needs it)
 */
public record LocalSettings(
    int port,
    Path dataDir,
    String databaseUrl,
    String databaseUser,
    String databasePassword,
    Duration tickInterval,
    Duration shutdownGrace,
    QueueConfig queue,
    Optional<Path> kindsFile,
    long maxLogBytes,
    String jobUser,
    Capacity defaultCapacity,
    Duration reclaimGrace,
    boolean webhooksAllowPrivateTargets) {

  /** The user jobs run as when the server runs as root: it exists on Debian and owns nothing. */
  public static final String DEFAULT_JOB_USER = "nobody";

  /**
   * What a {@link #jobUser} may be: a POSIX user name (useradd's rules), checked before any lookup.
   */
  static final java.util.regex.Pattern USER_NAME =
      java.util.regex.Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}");

  public static final int DEFAULT_PORT = 8080;
  public static final Path DEFAULT_DATA_DIR = Path.of(".buildqueue");

  public static LocalSettings defaults() {
    return new LocalSettings(
        DEFAULT_PORT,
        DEFAULT_DATA_DIR,
        null,
        null,
        null,
        Duration.ofSeconds(5),
        Duration.ofSeconds(30),
        QueueConfig.defaults().toBuilder()
            .ledger(QueueConfig.defaults().ledger().wallTime())
            .build(),
        Optional.empty(),
        JobLog.DEFAULT_MAX_LOG_BYTES,
        DEFAULT_JOB_USER,
        Capacity.ON_DEMAND,
        WorkerProcessStarter.KILL_AFTER_STOP,
        false);
  }

  public LocalSettings {
    if (port < 0 || port > 65535) {
      throw new BuildQueueException("port must be from 0 to 65535, was " + port);
    }
    if (dataDir == null) {
      throw new BuildQueueException("dataDir must be set");
    }
    if (databaseUrl != null && !databaseUrl.startsWith("jdbc:postgresql:")) {
      throw new BuildQueueException(
          "databaseUrl must start with jdbc:postgresql:, was "
              + LocalDatabase.redacted(databaseUrl));
    }
    if (tickInterval == null || tickInterval.toMillis() < 10) {
      throw new BuildQueueException("tickInterval must be at least 10 ms, was " + tickInterval);
    }
    if (shutdownGrace == null || shutdownGrace.isNegative()) {
      throw new BuildQueueException("shutdownGrace must not be negative, was " + shutdownGrace);
    }
    if (queue == null) {
      throw new BuildQueueException("queue settings must be set");
    }
    if (maxLogBytes < 1) {
      throw new BuildQueueException("maxLogBytes must be at least 1, was " + maxLogBytes);
    }
    if (jobUser == null || !USER_NAME.matcher(jobUser).matches()) {
      throw new BuildQueueException("jobUser must be a user name, was " + jobUser);
    }
    if (defaultCapacity == null) {
      throw new BuildQueueException("defaultCapacity must be set: one of " + Capacity.labels());
    }
    if (reclaimGrace == null || reclaimGrace.isNegative()) {
      throw new BuildQueueException("reclaimGrace must not be negative, was " + reclaimGrace);
    }
    dataDir = dataDir.toAbsolutePath().normalize();
    kindsFile =
        kindsFile == null ? Optional.empty() : kindsFile.map(f -> f.toAbsolutePath().normalize());
  }

  public LocalSettings withPort(int p) {
    return with(v -> v.port = p);
  }

  public LocalSettings withDataDir(Path d) {
    return with(v -> v.dataDir = d);
  }

  public LocalSettings withDatabase(String url, String user, String password) {
    return with(
        v -> {
          v.databaseUrl = url;
          v.databaseUser = user;
          v.databasePassword = password;
        });
  }

  public LocalSettings withTickInterval(Duration d) {
    return with(v -> v.tickInterval = d);
  }

  public LocalSettings withShutdownGrace(Duration d) {
    return with(v -> v.shutdownGrace = d);
  }

  public LocalSettings withQueue(QueueConfig q) {
    return with(v -> v.queue = q);
  }

  public LocalSettings withKindsFile(Path file) {
    return with(v -> v.kindsFile = Optional.ofNullable(file));
  }

  public LocalSettings withMaxLogBytes(long bytes) {
    return with(v -> v.maxLogBytes = bytes);
  }

  public LocalSettings withJobUser(String user) {
    return with(v -> v.jobUser = user);
  }

  public LocalSettings withDefaultCapacity(Capacity c) {
    return with(v -> v.defaultCapacity = c);
  }

  public LocalSettings withReclaimGrace(Duration d) {
    return with(v -> v.reclaimGrace = d);
  }

  public LocalSettings withWebhooksAllowPrivateTargets(boolean allow) {
    return with(v -> v.webhooksAllowPrivateTargets = allow);
  }

  /** A copy with {@code change} made to its values; the record's checks run on the copy. */
  private LocalSettings with(Consumer<Values> change) {
    Values v = new Values(this);
    change.accept(v);
    return new LocalSettings(
        v.port,
        v.dataDir,
        v.databaseUrl,
        v.databaseUser,
        v.databasePassword,
        v.tickInterval,
        v.shutdownGrace,
        v.queue,
        v.kindsFile,
        v.maxLogBytes,
        v.jobUser,
        v.defaultCapacity,
        v.reclaimGrace,
        v.webhooksAllowPrivateTargets);
  }

  /** The record's components, as a wither changes them. */
  private static final class Values {
    int port;
    Path dataDir;
    String databaseUrl;
    String databaseUser;
    String databasePassword;
    Duration tickInterval;
    Duration shutdownGrace;
    QueueConfig queue;
    Optional<Path> kindsFile;
    long maxLogBytes;
    String jobUser;
    Capacity defaultCapacity;
    Duration reclaimGrace;
    boolean webhooksAllowPrivateTargets;

    Values(LocalSettings s) {
      port = s.port;
      dataDir = s.dataDir;
      databaseUrl = s.databaseUrl;
      databaseUser = s.databaseUser;
      databasePassword = s.databasePassword;
      tickInterval = s.tickInterval;
      shutdownGrace = s.shutdownGrace;
      queue = s.queue;
      kindsFile = s.kindsFile;
      maxLogBytes = s.maxLogBytes;
      jobUser = s.jobUser;
      defaultCapacity = s.defaultCapacity;
      reclaimGrace = s.reclaimGrace;
      webhooksAllowPrivateTargets = s.webhooksAllowPrivateTargets;
    }
  }

  /**
   * The user the server's jobs run as, if not the server's own: {@link #jobUser} when this process
   * runs as root and that is not root itself.
   */
  public Optional<String> effectiveJobUser() {
    if (!buildqueue.worker.exec.JobUser.runningAsRoot()
        || jobUser.equals(System.getProperty("user.name"))
        || jobUser.equals("root")) {
      return Optional.empty();
    }
    return Optional.of(jobUser);
  }

  /** Leaves out the password and the URL's parameters. */
  @Override
  public String toString() {
    return "LocalSettings[port="
        + port
        + ", dataDir="
        + dataDir
        + ", database="
        + (databaseUrl == null ? "embedded" : LocalDatabase.redacted(databaseUrl))
        + ", tickInterval="
        + tickInterval
        + ", shutdownGrace="
        + shutdownGrace
        + ", queue="
        + queue
        + ", kindsFile="
        + kindsFile.map(Path::toString).orElse("none")
        + ", maxLogBytes="
        + maxLogBytes
        + ", jobUser="
        + jobUser
        + ", defaultCapacity="
        + defaultCapacity.label()
        + ", reclaimGrace="
        + reclaimGrace
        + ", webhooksAllowPrivateTargets="
        + webhooksAllowPrivateTargets
        + "]";
  }
}
