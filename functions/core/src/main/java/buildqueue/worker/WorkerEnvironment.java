package buildqueue.worker;

import buildqueue.BuildQueueException;
import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.DirectoryArtifactStore;
import buildqueue.artifacts.NoArtifactStore;
import buildqueue.core.QueueConfig;
import buildqueue.kinds.KindCatalogue;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Everything a worker process reads from its environment, read in one place so a missing or
 * malformed variable fails the start with a message that names it.
 *
 * <ul>
 *   <li>{@value #WORKER_ID}: the worker row's id (required)
 *   <li>{@value #WORKER_TOKEN}: the launch token, a UUID (required; never logged)
 *   <li>{@value #DATABASE_URL}: a {@code jdbc:postgresql://} URL (required)
 *   <li>{@value #DATABASE_USER}, {@value #DATABASE_PASSWORD}: credentials, when the URL has none
 *   <li>{@value #CHAIN_WINDOW_MS}, {@value #DEADLINE_MARGIN_MS}, {@value #WORKER_LIFETIME_MS}: the
 *       queue's settings that the worker applies itself, so they match the dispatcher's (default:
 *       {@link QueueConfig#defaults()}); the lifetime bounds the catalogue's timeouts as the
 *       server's does
 *   <li>{@value #SHARED_ORDER}: {@code fair} or {@code fifo}, how the shared lane's next job is
 *       chosen; the worker chains by it, so it must match the dispatcher's (default: {@code fair})
 *   <li>{@value KindCatalogue#FILE_VARIABLE}: the kind catalogue, an absolute path (default: none,
 *       only the built-in {@code demo} kind)
 *   <li>{@value WorkerStop#STOP_TIMEOUT_VARIABLE}: how long after SIGTERM the platform sends
 *       SIGKILL, in whole seconds (default 30, ECS's default; the local platform sets its own)
 * </ul>
 */
public record WorkerEnvironment(
    long workerId,
    UUID token,
    String databaseUrl,
    String databaseUser,
    String databasePassword,
    QueueConfig config,
    Optional<Path> kindsFile,
    Duration stopTimeout) {

  public static final String WORKER_ID = "BUILDQUEUE_WORKER_ID";
  public static final String WORKER_TOKEN = "BUILDQUEUE_WORKER_TOKEN";
  public static final String DATABASE_URL = "BUILDQUEUE_DATABASE_URL";
  public static final String DATABASE_USER = "BUILDQUEUE_DATABASE_USER";
  public static final String DATABASE_PASSWORD = "BUILDQUEUE_DATABASE_PASSWORD";
  public static final String CHAIN_WINDOW_MS = "BUILDQUEUE_CHAIN_WINDOW_MS";
  public static final String DEADLINE_MARGIN_MS = "BUILDQUEUE_DEADLINE_MARGIN_MS";
  public static final String WORKER_LIFETIME_MS = "BUILDQUEUE_WORKER_LIFETIME_MS";
  public static final String SHARED_ORDER = "BUILDQUEUE_SHARED_ORDER";
  public static final String KINDS_FILE = KindCatalogue.FILE_VARIABLE;
  public static final String STOP_TIMEOUT_SECONDS = WorkerStop.STOP_TIMEOUT_VARIABLE;

  /**
   * A job attempt's output kept at most, in bytes ({@link JobLog}); unset: {@link
   * JobLog#DEFAULT_MAX_LOG_BYTES}.
   */
  public static final String MAX_LOG_BYTES = "BUILDQUEUE_MAX_LOG_BYTES";

  /**
   * The directory of the local artifact store ({@link DirectoryArtifactStore}; the local runtime's
   * {@code <data dir>/artifacts}); unset: no store, and a job that leaves artifacts fails.
   */
  public static final String ARTIFACT_DIR = "BUILDQUEUE_ARTIFACT_DIR";

  /** The store {@value #ARTIFACT_DIR} names, or {@link NoArtifactStore#NONE}. */
  public static ArtifactStore artifactStore(Map<String, String> env) {
    String dir = blankToNull(env.get(ARTIFACT_DIR));
    return dir == null ? NoArtifactStore.NONE : new DirectoryArtifactStore(Path.of(dir.strip()));
  }

  /**
   * Reads and checks the variables; throws {@link BuildQueueException} naming the first bad one.
   */
  public static WorkerEnvironment read(Map<String, String> env) {
    long workerId = parse(env, WORKER_ID, "a worker id (a positive whole number)", Long::parseLong);
    if (workerId < 1) {
      throw new BuildQueueException(
          WORKER_ID + " must be a positive whole number, was " + workerId);
    }
    UUID token = parse(env, WORKER_TOKEN, "the launch token (a UUID)", UUID::fromString);
    String url = required(env, DATABASE_URL, "a jdbc:postgresql:// URL");
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new BuildQueueException(DATABASE_URL + " must be a jdbc:postgresql:// URL");
    }
    QueueConfig defaults = QueueConfig.defaults();
    Duration chainWindow = optionalMillis(env, CHAIN_WINDOW_MS, defaults.chainWindow());
    Duration margin = optionalMillis(env, DEADLINE_MARGIN_MS, defaults.deadlineMargin());
    Duration lifetime = optionalMillis(env, WORKER_LIFETIME_MS, defaults.workerLifetime());
    QueueConfig config =
        defaults
            .withChainWindow(chainWindow)
            .withLease(lifetime, defaults.leaseSlack(), margin)
            .withSharedOrder(sharedOrder(env.get(SHARED_ORDER), SHARED_ORDER));
    return new WorkerEnvironment(
        workerId,
        token,
        url,
        blankToNull(env.get(DATABASE_USER)),
        blankToNull(env.get(DATABASE_PASSWORD)),
        config,
        kindsFile(env),
        stopTimeout(env.get(STOP_TIMEOUT_SECONDS)));
  }

  /**
   * The cap on a job attempt's output that {@value #MAX_LOG_BYTES} names ({@link
   * JobLog#DEFAULT_MAX_LOG_BYTES} when unset); throws naming the setting otherwise.
   */
  public static long maxLogBytes(Map<String, String> env) {
    String v = blankToNull(env.get(MAX_LOG_BYTES));
    if (v == null) {
      return JobLog.DEFAULT_MAX_LOG_BYTES;
    }
    try {
      long bytes = Long.parseLong(v.strip());
      if (bytes >= 1) {
        return bytes;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new BuildQueueException(
        MAX_LOG_BYTES + " must be a positive whole number of bytes, was \"" + v.strip() + "\"");
  }

  /**
   * The stop timeout a setting names, in whole seconds ({@link WorkerStop#DEFAULT_STOP_TIMEOUT}
   * when unset); throws naming the setting otherwise. The AWS worker's settings read it the same
   * way.
   */
  public static Duration stopTimeout(String value) {
    String v = blankToNull(value);
    if (v == null) {
      return WorkerStop.DEFAULT_STOP_TIMEOUT;
    }
    try {
      long seconds = Long.parseLong(v.strip());
      if (seconds >= 1 && seconds <= 86_400) {
        return Duration.ofSeconds(seconds);
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new BuildQueueException(
        STOP_TIMEOUT_SECONDS
            + " must be a whole number of seconds from 1 to 86400 (the"
            + " platform's time from SIGTERM to SIGKILL; on ECS the container's StopTimeout), was \""
            + v.strip()
            + "\"");
  }

  /**
   * The shared lane's order a setting names ({@code fair} when unset); throws naming the setting
   * otherwise. The server's settings read it the same way.
   */
  public static QueueConfig.SharedOrder sharedOrder(String value, String setting) {
    String v = blankToNull(value);
    if (v == null) {
      return QueueConfig.SharedOrder.FAIR;
    }
    QueueConfig.SharedOrder order = QueueConfig.SharedOrder.ofLabel(v.strip());
    if (order == null) {
      throw new BuildQueueException(setting + " must be fair or fifo, was \"" + v.strip() + "\"");
    }
    return order;
  }

  private static Optional<Path> kindsFile(Map<String, String> env) {
    String value = blankToNull(env.get(KINDS_FILE));
    if (value == null) {
      return Optional.empty();
    }
    Path path = Path.of(value.strip());
    if (!path.isAbsolute()) {
      // A worker's working directory is not the server's: only an absolute path means the same
      // file.
      throw new BuildQueueException(
          KINDS_FILE + " must be an absolute path to the kind catalogue, was \"" + value + "\"");
    }
    return Optional.of(path);
  }

  private static String required(Map<String, String> env, String name, String what) {
    String value = blankToNull(env.get(name));
    if (value == null) {
      throw new BuildQueueException(
          name
              + " is not set: a worker needs "
              + what
              + " in its environment; the platform that launches it sets it");
    }
    return value.strip();
  }

  private static <T> T parse(
      Map<String, String> env,
      String name,
      String what,
      java.util.function.Function<String, T> parser) {
    String value = required(env, name, what);
    try {
      return parser.apply(value);
    } catch (RuntimeException e) {
      // The value is not echoed: the token is a credential.
      throw new BuildQueueException(name + " is malformed: it must be " + what);
    }
  }

  private static Duration optionalMillis(Map<String, String> env, String name, Duration fallback) {
    String value = blankToNull(env.get(name));
    if (value == null) {
      return fallback;
    }
    try {
      long ms = Long.parseLong(value.strip());
      if (ms < 0) {
        throw new NumberFormatException();
      }
      return Duration.ofMillis(ms);
    } catch (NumberFormatException e) {
      throw new BuildQueueException(
          name + " must be a whole number of milliseconds, was \"" + value + "\"");
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  /** Leaves out the token, the password and the URL's parameters. */
  @Override
  public String toString() {
    int query = databaseUrl.indexOf('?');
    String url =
        query < 0 ? databaseUrl : databaseUrl.substring(0, query) + "?…"; // may hold a password
    return "WorkerEnvironment[workerId="
        + workerId
        + ", databaseUrl="
        + url
        + ", user="
        + databaseUser
        + ", kindsFile="
        + kindsFile.map(Path::toString).orElse("none")
        + ", stopTimeout="
        + stopTimeout
        + "]";
  }
}
