package buildqueue.aws;

import buildqueue.BuildQueueException;
import buildqueue.aws.db.DataApiSettings;
import buildqueue.aws.ecs.EcsSettings;
import buildqueue.aws.ecs.EcsWorkerPlatform;
import buildqueue.core.QueueConfig;
import buildqueue.kinds.KindCatalogue;
import buildqueue.kinds.KindCatalogueException;
import buildqueue.platform.Capacity;
import buildqueue.worker.QueueKindLimits;
import buildqueue.worker.WorkerEnvironment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * Every environment variable the AWS code reads, read in one place, once, when a component starts.
 * Each {@link Component} reads only what it uses; a missing or malformed variable fails at once
 * with a message that names it. Immutable. The SAM template sets these (a test checks that every
 * variable a function reads is set for it).
 *
 * <table>
 *   <caption>Variables</caption>
 *   <tr><th>variable</th><th>read by</th><th>default</th></tr>
 *   <tr><td>{@value #DB_CLUSTER_ARN}, {@value #DB_SECRET_ARN}</td><td>all (worker: unless
 *       {@value #JDBC_URL})</td><td>required</td></tr>
 *   <tr><td>{@value #WORKER_DB_SECRET_ARN}</td><td>migrate, worker secret rotation</td><td>required:
 *       the worker role's secret, whose password the migration gives the role (and the only secret
 *       the rotation function rotates)</td></tr>
 *   <tr><td>{@value #DB_NAME}</td><td>as above</td><td>{@code buildqueue}</td></tr>
 *   <tr><td>{@value #JDBC_URL}</td><td>worker</td><td>unset: the Data API</td></tr>
 *   <tr><td>{@value #ECS_CLUSTER}, {@value #TASK_DEFINITION}, {@value #SUBNETS}</td><td>the
 *       three queue functions</td><td>required</td></tr>
 *   <tr><td>{@value #SECURITY_GROUPS}</td><td>as above</td><td>none</td></tr>
 *   <tr><td>{@value #ASSIGN_PUBLIC_IP}</td><td>as above</td><td>{@code false}</td></tr>
 *   <tr><td>{@value #CONTAINER_NAME}</td><td>as above</td><td>{@code worker}</td></tr>
 *   <tr><td>{@value #EVENT_BUS}</td><td>as above</td><td>{@code default}</td></tr>
 *   <tr><td>{@value #SHARED_SLOTS}</td><td>queue functions, worker</td><td>1</td></tr>
 *   <tr><td>{@value #WORKER_LIFETIME_MINUTES}</td><td>as above</td><td>60</td></tr>
 *   <tr><td>{@value #CHAIN_WINDOW_SECONDS}</td><td>as above</td><td>300 (0: one job per
 *       worker)</td></tr>
 *   <tr><td>{@value #SHARED_ORDER}</td><td>as above (the worker chains by it)</td><td>{@code fair}
 *       ({@code fifo}: the oldest job first, whoever submitted it)</td></tr>
 *   <tr><td>{@value #MAX_QUEUED_JOBS}</td><td>enqueue (checks the quota)</td><td>1000 (each user's
 *       queued jobs at most, unless an admin set their own)</td></tr>
 *   <tr><td>{@value #DEFAULT_CAPACITY}</td><td>the three queue functions (they launch
 *       workers)</td><td>{@code on-demand} ({@code spot}, {@code spot-then-on-demand}): what kinds
 *       that name no {@code capacity} run on</td></tr>
 *   <tr><td>{@value #METRICS_NAMESPACE}</td><td>all but migrate and the worker secret
 *       rotation</td><td>{@code buildqueue}</td></tr>
 *   <tr><td>{@value #KINDS_FILE}</td><td>enqueue (the API checks submissions), tick and task
 *       state change (each kind's capacity for the workers they launch), worker (runs
 *       them)</td><td>required: an absolute path to the kind catalogue ({@link #ENQUEUE_KINDS_FILE}
 *       in the functions' jar, {@link #WORKER_KINDS_FILE} in the worker image)</td></tr>
 *   <tr><td>{@value #WORKER_ID}, {@value #WORKER_TOKEN}</td><td>worker (set per task by the
 *       launch's container overrides)</td><td>required</td></tr>
 *   <tr><td>{@value #WEBHOOK_FUNCTION}</td><td>tick</td><td>unset: the tick starts no webhook
 *       delivery (the template sets the delivery function's {@code live} alias)</td></tr>
 *   <tr><td>{@value #ARTIFACTS_BUCKET}</td><td>the three queue functions, worker</td><td>unset or
 *       blank: no artifact store (the stack's template sets its bucket)</td></tr>
 *   <tr><td>{@value #STOP_TIMEOUT_SECONDS}</td><td>worker (the task definition sets it to the
 *       container's {@code StopTimeout})</td><td>30 (ECS's default)</td></tr>
 *   <tr><td>{@value #AWS_REGION}</td><td>all that call AWS (set by Lambda and ECS)</td>
 *       <td>required</td></tr>
 * </table>
 *
 * Credentials come from the SDK's default chain (the function's or the task's role).
 */
public final class AwsSettings {
  public static final String DB_CLUSTER_ARN = "BUILDQUEUE_DB_CLUSTER_ARN";
  public static final String DB_SECRET_ARN = "BUILDQUEUE_DB_SECRET_ARN";
  public static final String DB_NAME = "BUILDQUEUE_DB_NAME";
  public static final String WORKER_DB_SECRET_ARN = "BUILDQUEUE_WORKER_DB_SECRET_ARN";
  public static final String JDBC_URL = "BUILDQUEUE_JDBC_URL";
  public static final String ECS_CLUSTER = "BUILDQUEUE_ECS_CLUSTER";
  public static final String TASK_DEFINITION = "BUILDQUEUE_TASK_DEFINITION";
  public static final String SUBNETS = "BUILDQUEUE_SUBNETS";
  public static final String SECURITY_GROUPS = "BUILDQUEUE_SECURITY_GROUPS";
  public static final String ASSIGN_PUBLIC_IP = "BUILDQUEUE_ASSIGN_PUBLIC_IP";
  public static final String CONTAINER_NAME = "BUILDQUEUE_CONTAINER_NAME";
  public static final String EVENT_BUS = "BUILDQUEUE_EVENT_BUS";

  /**
   * The name of the tick's EventBridge rule (on the default bus), which the queue turns on and off
   * (docs/architecture.md §4.5, "Idle at zero"). Unset: the queue never turns it off.
   */
  public static final String TICK_RULE = "BUILDQUEUE_TICK_RULE";

  /**
   * The S3 bucket of artifacts (docs/architecture.md, artifacts): workers put a succeeding
   * attempt's files there, the API presigns their downloads, the tick and the stop handler remove
   * abandoned ones. Unset or blank: no artifact store.
   */
  public static final String ARTIFACTS_BUCKET = "BUILDQUEUE_ARTIFACTS_BUCKET";

  /**
   * The webhook delivery function the tick invokes, asynchronously, when its survey finds
   * deliveries due (docs/architecture.md §4.11): a name or ARN, with its alias. Unset or blank: the
   * tick starts no delivery.
   */
  public static final String WEBHOOK_FUNCTION = "BUILDQUEUE_WEBHOOK_FUNCTION";

  public static final String SHARED_SLOTS = "BUILDQUEUE_SHARED_SLOTS";
  public static final String WORKER_LIFETIME_MINUTES = "BUILDQUEUE_WORKER_LIFETIME_MINUTES";
  public static final String CHAIN_WINDOW_SECONDS = "BUILDQUEUE_CHAIN_WINDOW_SECONDS";

  /** The worker reads the same variable when it runs outside AWS ({@link WorkerEnvironment}). */
  public static final String SHARED_ORDER = WorkerEnvironment.SHARED_ORDER;

  public static final String MAX_QUEUED_JOBS = "BUILDQUEUE_MAX_QUEUED_JOBS";

  /**
   * What the workers of kinds that name no {@code capacity} run on ({@link Capacity}): the stack's
   * {@code DefaultCapacity}.
   */
  public static final String DEFAULT_CAPACITY = "BUILDQUEUE_DEFAULT_CAPACITY";

  /** A worker task's Fargate CPU units (1,024 a vCPU) and memory in MiB: the ledger's sizes. */
  public static final String WORKER_CPU = "BUILDQUEUE_WORKER_CPU";

  public static final String WORKER_MEMORY = "BUILDQUEUE_WORKER_MEMORY";

  /**
   * Prices as {@code <dollars per vCPU-hour>,<dollars per GB-hour>} (docs/architecture.md §4.8).
   */
  public static final String PRICES_ON_DEMAND = "BUILDQUEUE_PRICES_ON_DEMAND";

  public static final String PRICES_SPOT = "BUILDQUEUE_PRICES_SPOT";

  /** Every user's budget in vCPU-seconds per period, unless an admin set their own; unset: none. */
  public static final String BUDGET_VCPU_SECONDS = "BUILDQUEUE_BUDGET_VCPU_SECONDS";

  public static final String BUDGET_PERIOD = "BUILDQUEUE_BUDGET_PERIOD";
  public static final String METRICS_NAMESPACE = "BUILDQUEUE_METRICS_NAMESPACE";
  public static final String KINDS_FILE = KindCatalogue.FILE_VARIABLE;

  /**
   * Where the API function finds the catalogue: the build copies {@code infra/kinds/kinds.json} to
   * the root of the functions' jar, which Lambda unpacks into {@code /var/task}.
   */
  public static final String ENQUEUE_KINDS_FILE = "/var/task/kinds.json";

  /** Where the worker image holds the catalogue: {@code infra/Dockerfile} copies it there. */
  public static final String WORKER_KINDS_FILE = "/etc/buildqueue/kinds.json";

  /** Set per task by the launch ({@link EcsWorkerPlatform} writes the container overrides). */
  public static final String WORKER_ID = EcsWorkerPlatform.WORKER_ID_VARIABLE;

  public static final String WORKER_TOKEN = EcsWorkerPlatform.WORKER_TOKEN_VARIABLE;

  /**
   * How long ECS waits after SIGTERM before SIGKILL: the worker container's {@code StopTimeout}.
   */
  public static final String STOP_TIMEOUT_SECONDS = WorkerEnvironment.STOP_TIMEOUT_SECONDS;

  /** Set by Lambda and by ECS on Fargate; never by the template. */
  public static final String AWS_REGION = "AWS_REGION";

  /** The parts of the stack, each with its own needs. */
  public enum Component {
    /** The HTTP API function: enqueues and dispatches. */
    ENQUEUE,
    /** The scheduled tick. */
    TICK,
    /** The ECS STOPPED event handler. */
    TASK_STATE_CHANGE,
    /**
     * The webhook delivery function, invoked by the tick when deliveries are due; outside any VPC.
     */
    WEBHOOK_DELIVERY,
    /** The deploy-time schema migration (a CloudFormation custom resource). */
    MIGRATE,
    /** The worker role secret's rotation function (invoked by Secrets Manager). */
    WORKER_SECRET_ROTATION,
    /** The Fargate task. */
    WORKER;

    /** The name metrics and logs carry, e.g. {@code task-state-change}. */
    public String label() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    boolean runsTheQueue() {
      return this == ENQUEUE || this == TICK || this == TASK_STATE_CHANGE;
    }

    /**
     * The parts that must know the job kinds: the API checks submissions, the worker runs them, and
     * every part that launches workers (the API, the tick, the stop handler) reads each kind's
     * {@code capacity}.
     */
    public boolean needsKinds() {
      return this == ENQUEUE || this == TICK || this == TASK_STATE_CHANGE || this == WORKER;
    }

    /** The parts that run no queue work: they change the schema or the worker role's login. */
    boolean administers() {
      return this == MIGRATE || this == WORKER_SECRET_ROTATION;
    }
  }

  /** Where the queue's PostgreSQL is. */
  public sealed interface DatabaseSettings {}

  /** Aurora through the RDS Data API. */
  public record DataApi(String clusterArn, String secretArn, String database)
      implements DatabaseSettings {}

  /**
   * A PostgreSQL reached over JDBC (a self-hosted worker). The URL may hold credentials: never log
   * it.
   */
  public record Jdbc(String url) implements DatabaseSettings {
    @Override
    public String toString() {
      return "Jdbc[url=<redacted>]";
    }
  }

  /** The worker this Fargate task is, from its launch's container overrides. */
  public record WorkerIdentity(long workerId, UUID token) {
    @Override
    public String toString() {
      return "WorkerIdentity[workerId=" + workerId + ", token=<redacted>]";
    }
  }

  private final Component component;
  private final DatabaseSettings database;
  private final Optional<String> region;
  private final Optional<EcsSettings> ecs;
  private final Optional<String> eventBus;
  private final Optional<String> tickRule;
  private final Optional<Capacity> defaultCapacity;
  private final Optional<QueueConfig> queue;
  private final Optional<String> metricsNamespace;
  private final Optional<WorkerIdentity> worker;
  private final Optional<Duration> stopTimeout;
  private final Optional<Path> kindsFile;
  private final Optional<String> workerSecretArn;
  private final Optional<String> artifactsBucket;
  private final Optional<String> webhookFunction;

  private AwsSettings(Component component, Function<String, String> env) {
    EnvironmentReader r = new EnvironmentReader(env);
    this.component = component;
    this.database =
        component == Component.WORKER && r.optional(JDBC_URL).isPresent()
            ? new Jdbc(r.required(JDBC_URL))
            : new DataApi(
                r.required(DB_CLUSTER_ARN), r.required(DB_SECRET_ARN), r.or(DB_NAME, "buildqueue"));
    this.region =
        database instanceof DataApi
                || component != Component.WORKER
                || r.optional(ARTIFACTS_BUCKET).isPresent()
            ? Optional.of(r.required(AWS_REGION))
            : Optional.empty();
    if (database instanceof DataApi) {
      dataApiSettings(); // fails now, not at the first statement
    }
    boolean queueFunction = component.runsTheQueue();
    this.ecs = queueFunction ? Optional.of(QueueVariables.ecs(r)) : Optional.empty();
    this.eventBus = queueFunction ? Optional.of(r.or(EVENT_BUS, "default")) : Optional.empty();
    this.tickRule = queueFunction ? r.optional(TICK_RULE) : Optional.empty();
    this.defaultCapacity = queueFunction ? Optional.of(defaultCapacity(r)) : Optional.empty();
    this.queue =
        component.administers() ? Optional.empty() : Optional.of(QueueVariables.queueConfig(r));
    this.metricsNamespace =
        component.administers()
            ? Optional.empty()
            : Optional.of(r.or(METRICS_NAMESPACE, "buildqueue"));
    this.worker =
        component == Component.WORKER
            ? Optional.of(new WorkerIdentity(r.positiveLong(WORKER_ID), r.uuid(WORKER_TOKEN)))
            : Optional.empty();
    this.stopTimeout =
        component == Component.WORKER
            ? Optional.of(
                WorkerEnvironment.stopTimeout(r.optional(STOP_TIMEOUT_SECONDS).orElse(null)))
            : Optional.empty();
    this.kindsFile =
        component.needsKinds() ? Optional.of(r.absolutePath(KINDS_FILE)) : Optional.empty();
    this.workerSecretArn =
        component.administers() ? Optional.of(r.required(WORKER_DB_SECRET_ARN)) : Optional.empty();
    this.artifactsBucket =
        queueFunction || component == Component.WORKER
            ? r.optional(ARTIFACTS_BUCKET)
            : Optional.empty();
    this.webhookFunction =
        component == Component.TICK ? r.optional(WEBHOOK_FUNCTION) : Optional.empty();
  }

  /**
   * The webhook delivery function the tick starts ({@value #WEBHOOK_FUNCTION}); empty when unset or
   * blank, and for every part but the tick.
   */
  public Optional<String> webhookFunction() {
    return webhookFunction;
  }

  /**
   * The artifacts bucket ({@value #ARTIFACTS_BUCKET}); empty when unset or blank, or for a part
   * that never stores artifacts (migrate, the secret's rotation): no artifact store.
   */
  public Optional<String> artifactsBucket() {
    return artifactsBucket;
  }

  /**
   * The worker role's secret (migrate and its rotation only): the password the role logs in with.
   */
  public String workerSecretArn() {
    return workerSecretArn.orElseThrow(
        () -> new IllegalStateException(component + " has no worker secret"));
  }

  private static Capacity defaultCapacity(EnvironmentReader r) {
    String label = r.or(DEFAULT_CAPACITY, Capacity.ON_DEMAND.label());
    try {
      return Capacity.ofLabel(label);
    } catch (IllegalArgumentException e) {
      throw new BuildQueueException(
          DEFAULT_CAPACITY
              + " must be one of "
              + Capacity.labels()
              + " (the stack parameter DefaultCapacity), was \""
              + label
              + "\"");
    }
  }

  /**
   * What the workers of kinds that name no {@code capacity} run on (the three queue functions
   * only): with the catalogue's kinds, {@link buildqueue.core.Capacities}.
   */
  public Capacity defaultCapacity() {
    return defaultCapacity.orElseThrow(
        () -> new IllegalStateException(component + " launches no workers"));
  }

  /** Reads the variables {@code component} needs from the process environment. */
  public static AwsSettings fromEnvironment(Component component) {
    return load(component, System::getenv);
  }

  /** Reads the variables {@code component} needs; {@code env} returns null for an unset one. */
  public static AwsSettings load(Component component, Function<String, String> env) {
    return new AwsSettings(component, env);
  }

  public Component component() {
    return component;
  }

  public DatabaseSettings database() {
    return database;
  }

  /** The Data API settings; only a worker configured with a JDBC URL has none. */
  public DataApi dataApi() {
    if (database instanceof DataApi d) {
      return d;
    }
    throw new BuildQueueException(
        component.label() + " is configured with " + JDBC_URL + ", not the Data API");
  }

  /** The Data API adapter's settings, checked. */
  public DataApiSettings dataApiSettings() {
    DataApi d = dataApi();
    try {
      return DataApiSettings.of(region(), d.clusterArn(), d.secretArn(), d.database()).validate();
    } catch (IllegalArgumentException e) {
      throw new BuildQueueException(
          e.getMessage() + " (from " + DB_CLUSTER_ARN + ", " + DB_SECRET_ARN + ", " + DB_NAME + ")",
          e);
    }
  }

  public EcsSettings ecs() {
    return ecs.orElseThrow(() -> notRead("the ECS settings"));
  }

  /** The AWS region the SDK clients talk to. */
  public String region() {
    return region.orElseThrow(() -> notRead(AWS_REGION));
  }

  public String eventBus() {
    return eventBus.orElseThrow(() -> notRead(EVENT_BUS));
  }

  /** The tick's rule, when the queue turns it on and off; empty: the tick always runs. */
  public Optional<String> tickRule() {
    return tickRule;
  }

  public QueueConfig queue() {
    return queue.orElseThrow(() -> notRead("the queue settings"));
  }

  public String metricsNamespace() {
    return metricsNamespace.orElseThrow(() -> notRead(METRICS_NAMESPACE));
  }

  public WorkerIdentity worker() {
    return worker.orElseThrow(() -> notRead(WORKER_ID + "/" + WORKER_TOKEN));
  }

  /** The worker's time from SIGTERM to SIGKILL ({@value #STOP_TIMEOUT_SECONDS}). */
  public Duration stopTimeout() {
    return stopTimeout.orElseThrow(() -> notRead(STOP_TIMEOUT_SECONDS));
  }

  /** The kind catalogue's path, as {@value #KINDS_FILE} gives it. */
  public Path kindsFile() {
    return kindsFile.orElseThrow(() -> notRead(KINDS_FILE));
  }

  /**
   * Loads the kind catalogue {@value #KINDS_FILE} names, checked against this part's queue
   * settings. A missing or bad file fails the start with a message naming the variable, the path
   * and, for a missing file, how it gets there.
   */
  public KindCatalogue kindCatalogue() {
    Path file = kindsFile();
    try {
      return KindCatalogue.load(file, QueueKindLimits.of(queue()));
    } catch (KindCatalogueException e) {
      String origin =
          component == Component.WORKER
              ? "The worker image copies infra/kinds/kinds.json to "
                  + WORKER_KINDS_FILE
                  + " (infra/Dockerfile)."
              : "The functions' jar carries infra/kinds/kinds.json, which Lambda unpacks to "
                  + ENQUEUE_KINDS_FILE
                  + " (mvn package builds it in; README: Deploying and redeploying).";
      throw new KindCatalogueException(
          "the kind catalogue that environment variable "
              + KINDS_FILE
              + " names ("
              + file
              + ") cannot be used: "
              + e.getMessage()
              + ". "
              + origin,
          e);
    }
  }

  private IllegalStateException notRead(String what) {
    return new IllegalStateException(component.label() + " does not read " + what);
  }

  /**
   * The longest lease a worker may have on ECS. A relaunch reuses the worker's token as RunTask's
   * {@code clientToken}, which ECS keeps at most 24 hours from its first use; every relaunch
   * happens before the lease ends, so a lease shorter than that always finds the first task while
   * it may still run. An hour is left for clocks and for ECS's accounting, which AWS does not give
   * to the second.
   */
  public static final Duration MAX_LEASE = Duration.ofHours(23);

  @Override
  public String toString() {
    return "AwsSettings["
        + component.label()
        + ", "
        + region
        + ", "
        + database
        + ", "
        + ecs
        + ", eventBus="
        + eventBus
        + ", tickRule="
        + tickRule
        + ", defaultCapacity="
        + defaultCapacity.map(Capacity::label)
        + ", "
        + queue
        + ", "
        + worker
        + ", kindsFile="
        + kindsFile
        + ", artifactsBucket="
        + artifactsBucket
        + ", webhookFunction="
        + webhookFunction
        + "]";
  }
}
