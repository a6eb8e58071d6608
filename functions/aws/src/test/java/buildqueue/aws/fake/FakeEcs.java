package buildqueue.aws.fake;

import buildqueue.aws.ecs.EcsClients;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.services.ecs.EcsClient;

/**
 * Amazon ECS at the wire level, for tests of code that uses the real SDK client: an HTTP server
 * speaking the JSON 1.1 protocol ({@code POST /}, {@code X-Amz-Target:
 * AmazonEC2ContainerServiceV20141113.<Operation>}, {@code application/x-amz-json-1.1}; errors as
 * {@code {"__type": ..., "message": ...}} with the HTTP status the service model gives them: 400
 * for client errors, 500 for {@code ServerException}).
 *
 * <p>It implements RunTask, DescribeTasks and StopTask for Fargate with ECS's rules that matter to
 * callers: RunTask's {@code clientToken} idempotency per cluster (same token and parameters: the
 * same tasks again; same token, other parameters: {@code ConflictException} with {@code
 * resourceIds}), the parameter limits (count 10, token 64 characters, startedBy 128, overrides
 * 8,192 characters, containers named in overrides must exist), 100 tasks per DescribeTasks with
 * {@code MISSING} for unknown ones, 255 characters of StopTask reason.
 *
 * <p>RunTask's {@code clientToken} lives as long as ECS keeps it: the lesser of 24 hours and the
 * task's lifetime plus one hour, and a repeat within it replays the first answer, {@code
 * failures[]} included ({@link #tokenExpiresAt}). Requests are throttled by ECS's documented token
 * buckets ({@link EcsThrottling}). Both run on the fake's clock ({@link #useClock}), so tests can
 * move time instead of waiting for it.
 *
 * <p>Tests can read every request as received ({@link #requests(Operation)}), move tasks between
 * statuses ({@link #setLastStatus}, {@link #stopTask}, {@link #forget}), and script answers per
 * operation ({@link #answer}, {@link #answerAlways}): a {@code failures[]} entry, an error with a
 * status, a late answer, a dropped connection, either before or after the operation took effect.
 *
 * <p>Task definitions have revisions, as in ECS: {@value #TASK_DEFINITION} revision 1 with
 * container {@value #CONTAINER} is registered; {@link #registerTaskDefinition} adds families and
 * {@link #registerRevision} revisions, {@link #deregister} makes one INACTIVE. RunTask takes a
 * family (its latest ACTIVE revision), {@code family:revision} or the full ARN, and refuses an
 * INACTIVE revision with {@code InvalidParameterException} "TaskDefinition is inactive", the answer
 * RunTask gave after a deploy replaced a revision (DefangLabs/defang#775); an unknown one with
 * {@code ClientException} "TaskDefinition not found.". A deploy's other windows: {@link
 * #denyRunTaskUntil} answers every RunTask with IAM's {@code AccessDeniedException} until a time on
 * the fake's clock (IAM decides before ECS looks at anything, client token included), and {@link
 * #withoutServiceLinkedRole} answers as an account whose ECS service-linked role does not exist
 * yet.
 */
public final class FakeEcs implements AutoCloseable {
  public static final String REGION = "eu-west-1";
  public static final String ACCOUNT = "111122223333";
  public static final String TARGET_PREFIX = "AmazonEC2ContainerServiceV20141113.";
  public static final String CONTENT_TYPE = "application/x-amz-json-1.1";
  public static final String TASK_DEFINITION = "buildqueue-worker";
  public static final String CONTAINER = "worker";

  private static final Pattern STARTED_BY = Pattern.compile("[A-Za-z0-9_/-]{1,128}");
  private static final int MAX_DESCRIBE = 100;
  private static final int MAX_COUNT = 10;
  private static final int MAX_TOKEN = 64;
  private static final int MAX_OVERRIDES = 8192;
  private static final int MAX_STOP_REASON = 255;

  /** The operations the fake speaks. */
  public enum Operation {
    RUN_TASK("RunTask"),
    DESCRIBE_TASKS("DescribeTasks"),
    STOP_TASK("StopTask");

    public final String wireName;

    Operation(String wireName) {
      this.wireName = wireName;
    }

    static Operation ofTarget(String target) {
      for (Operation o : values()) {
        if ((TARGET_PREFIX + o.wireName).equals(target)) {
          return o;
        }
      }
      return null;
    }
  }

  /** One request as received: target header, all headers (lower-case names) and parsed body. */
  public record Request(
      String target, Operation operation, Map<String, List<String>> headers, JsonNode body) {
    public String header(String name) {
      List<String> v = headers.get(name.toLowerCase(Locale.ROOT));
      return v == null || v.isEmpty() ? null : v.get(0);
    }
  }

  /** One answer as sent: HTTP status and body (nothing for a dropped connection). */
  public record Reply(Operation operation, int status, JsonNode body) {
    /** The error's {@code __type}, or null for a success. */
    public String errorType() {
      return body.has("__type") ? body.get("__type").asText() : null;
    }
  }

  /** How the fake answers one request. */
  public static final class Answer {
    enum Kind {
      NORMAL,
      FAILURE,
      ERROR,
      DELAY,
      DROP
    }

    final Kind kind;
    final String failureReason;
    final String failureDetail;
    final int status;
    final String errorType;
    final String errorMessage;
    final Duration delay;
    final boolean afterWork;

    private Answer(
        Kind kind,
        String failureReason,
        String failureDetail,
        int status,
        String errorType,
        String errorMessage,
        Duration delay,
        boolean afterWork) {
      this.kind = kind;
      this.failureReason = failureReason;
      this.failureDetail = failureDetail;
      this.status = status;
      this.errorType = errorType;
      this.errorMessage = errorMessage;
      this.delay = delay;
      this.afterWork = afterWork;
    }

    /** The operation as ECS does it. */
    public static Answer normal() {
      return new Answer(Kind.NORMAL, null, null, 200, null, null, null, false);
    }

    /**
     * RunTask only: HTTP 200 with no task and one {@code failures[]} entry (no arn, as Fargate
     * sends).
     */
    public static Answer failure(String reason) {
      return failure(reason, null);
    }

    public static Answer failure(String reason, String detail) {
      return new Answer(Kind.FAILURE, reason, detail, 200, null, null, null, false);
    }

    /**
     * An error answer, e.g. {@code error(400, "ClientException", "...")}; nothing happens first.
     */
    public static Answer error(int status, String type, String message) {
      return new Answer(Kind.ERROR, null, null, status, type, message, null, false);
    }

    /** {@code ServerException}, HTTP 500. */
    public static Answer serverError() {
      return error(500, "ServerException", "Service Unavailable. Please try again later.");
    }

    /** {@code ThrottlingException}, HTTP 400, as ECS sends it ("Rate exceeded"). */
    public static Answer throttled() {
      return error(400, "ThrottlingException", "Rate exceeded");
    }

    /**
     * RunTask refused with {@code InvalidParameterException} when ECS's own calls to EC2 were
     * throttled: throttling under a 4xx that is not {@code ThrottlingException}. The message is the
     * one dask/dask-cloudprovider#56 quotes from a burst of Fargate launches (the same error in
     * AllenInstitute/neuron_morphology#155); nothing is created.
     */
    public static Answer requestLimitExceeded() {
      return error(
          400,
          "InvalidParameterException",
          "Error retrieving security group information for [sg-0ccc]: Request limit exceeded. (ErrorCode: RequestLimitExceeded)");
    }

    /** The operation takes effect, and the answer comes after {@code delay}. */
    public static Answer delay(Duration delay) {
      return new Answer(Kind.DELAY, null, null, 200, null, null, delay, true);
    }

    /** The connection is closed with no answer at all; nothing happens first. */
    public static Answer drop() {
      return new Answer(Kind.DROP, null, null, 0, null, null, null, false);
    }

    /** The same answer, given after the operation took effect (a task started, a task stopped). */
    public Answer afterWork() {
      return new Answer(
          kind, failureReason, failureDetail, status, errorType, errorMessage, delay, true);
    }
  }

  /** A task as the fake holds it, copied out for assertions. */
  public record TaskView(
      String arn,
      String cluster,
      String taskDefinitionArn,
      String lastStatus,
      String desiredStatus,
      String startedBy,
      String clientToken,
      JsonNode overrides,
      String stopCode,
      String stoppedReason,
      long version) {

    /** The environment overrides of one container, in order. */
    public Map<String, String> environment(String container) {
      Map<String, String> env = new LinkedHashMap<>();
      for (JsonNode c : overrides.path("containerOverrides")) {
        if (container.equals(c.path("name").asText())) {
          c.path("environment")
              .forEach(e -> env.put(e.path("name").asText(), e.path("value").asText()));
        }
      }
      return env;
    }
  }

  private final HttpServer server;
  private final ExecutorService executor;
  private final ObjectMapper json = new ObjectMapper();
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private final List<Reply> replies = new CopyOnWriteArrayList<>();
  private final Map<Operation, Deque<Answer>> scripted = new EnumMap<>(Operation.class);
  private final Map<Operation, Answer> always = new EnumMap<>(Operation.class);
  private final Map<String, FakeTask> tasks = new LinkedHashMap<>();
  private final Map<String, TokenUse> tokens = new HashMap<>();
  private final Map<String, String> containerByFamily = new HashMap<>();

  /** Each family's revisions in order (revision n at index n - 1): true while ACTIVE. */
  private final Map<String, List<Boolean>> revisions = new HashMap<>();

  private Instant deniedUntil;
  private final java.util.Set<String> clusterProviders =
      new java.util.LinkedHashSet<>(List.of("FARGATE", "FARGATE_SPOT"));
  private boolean spotCapacity = true;
  private final List<java.util.function.Consumer<TaskView>> sigtermListeners =
      new CopyOnWriteArrayList<>();
  private boolean serviceLinkedRole = true;
  private final AtomicLong taskCounter = new AtomicLong();
  private String initialStatus = "PROVISIONING";
  private volatile Supplier<Instant> clock = Instant::now;
  private final EcsThrottling throttling = new EcsThrottling();

  /**
   * The request rates this fake enforces ({@link EcsThrottling}), as a client that starts one task
   * a call must pace itself to stay under them: what the queue's tick should be told.
   */
  public static buildqueue.platform.CallRates enforcedRates() {
    return EcsThrottling.paced();
  }

  private FakeEcs() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    executor =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "fake-ecs");
              t.setDaemon(true);
              return t;
            });
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    containerByFamily.put(TASK_DEFINITION, CONTAINER);
    revisions.put(TASK_DEFINITION, new ArrayList<>(List.of(true)));
    server.start();
  }

  public static FakeEcs start() {
    try {
      return new FakeEcs();
    } catch (IOException e) {
      throw new IllegalStateException("fake ECS could not start", e);
    }
  }

  /** Where the SDK client should send its requests ({@code endpointOverride}). */
  public URI endpoint() {
    return URI.create(
        "http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort());
  }

  /**
   * Client settings for this fake: its endpoint, its region, short timeouts (1 s per attempt, 2
   * attempts) so that timeout tests stay quick.
   */
  public EcsClients.Settings clientSettings() {
    return EcsClients.Settings.defaults(REGION)
        .withEndpoint(endpoint())
        .withTimeouts(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(5))
        .withMaxAttempts(2);
  }

  /** A real SDK client on this fake, built the production way ({@link EcsClients}). */
  public EcsClient newClient() {
    return newClient(clientSettings());
  }

  public EcsClient newClient(EcsClients.Settings settings) {
    return EcsClients.create(
        settings,
        StaticCredentialsProvider.create(
            AwsBasicCredentials.create("AKIAFAKEFAKEFAKE", "fake-secret-key")));
  }

  /** A cluster's ARN in the fake's account and region. */
  public static String clusterArn(String cluster) {
    return "arn:aws:ecs:" + REGION + ":" + ACCOUNT + ":cluster/" + cluster;
  }

  // ---- scripting --------------------------------------------------------------------------

  /**
   * The next requests of {@code operation} get these answers, one each, in order; then normal ones.
   */
  public synchronized FakeEcs answer(Operation operation, Answer... next) {
    scripted.computeIfAbsent(operation, o -> new ArrayDeque<>()).addAll(List.of(next));
    return this;
  }

  /**
   * Every request of {@code operation} gets this answer (after scripted ones) until {@link
   * #answerNormally}.
   */
  public synchronized FakeEcs answerAlways(Operation operation, Answer answer) {
    always.put(operation, answer);
    return this;
  }

  public synchronized FakeEcs answerNormally(Operation operation) {
    always.remove(operation);
    Deque<Answer> queue = scripted.get(operation);
    if (queue != null) {
      queue.clear();
    }
    return this;
  }

  /**
   * Adds a task definition family (revision 1, ACTIVE) and its container (the default one is always
   * there).
   */
  public synchronized FakeEcs registerTaskDefinition(String family, String container) {
    containerByFamily.put(family, container);
    revisions.computeIfAbsent(family, f -> new ArrayList<>(List.of(true)));
    return this;
  }

  /**
   * Registers the family's next revision, ACTIVE, as a deploy that changes the task definition
   * does; its number.
   */
  public synchronized int registerRevision(String family) {
    List<Boolean> of = revisionsOrFail(family);
    of.add(true);
    return of.size();
  }

  /**
   * Deregisters a revision: it is INACTIVE from now on (ECS may take up to 10 minutes; the fake
   * does it at once).
   */
  public synchronized FakeEcs deregister(String family, int revision) {
    List<Boolean> of = revisionsOrFail(family);
    if (revision < 1 || revision > of.size()) {
      throw new AssertionError("fake ECS has no revision " + family + ":" + revision);
    }
    of.set(revision - 1, false);
    return this;
  }

  /** The ARN of a revision, as ECS names it. */
  public static String taskDefinitionArn(String family, int revision) {
    return "arn:aws:ecs:" + REGION + ":" + ACCOUNT + ":task-definition/" + family + ":" + revision;
  }

  private List<Boolean> revisionsOrFail(String family) {
    List<Boolean> of = revisions.get(family);
    if (of == null) {
      throw new AssertionError("fake ECS has no task definition family " + family);
    }
    return of;
  }

  /**
   * IAM denies every RunTask until {@code until} on the fake's clock (exclusive), as while a
   * deploy's rewritten policy has not yet reached the caller: {@code AccessDeniedException}, HTTP
   * 400, worded as IAM words it, naming the revision the request resolved to (ECS resolves the
   * revision before authorizing, since March 2024). Nothing else happens: no task, the client token
   * not even looked at. Null ends the window.
   */
  public synchronized FakeEcs denyRunTaskUntil(Instant until) {
    deniedUntil = until;
    return this;
  }

  /**
   * The account has no ECS service-linked role (a fresh account): RunTask answers {@code
   * InvalidParameterException} "Unable to assume the service linked role. Please verify that the
   * ECS service linked role exists." until {@link #createServiceLinkedRole}.
   */
  public synchronized FakeEcs withoutServiceLinkedRole() {
    serviceLinkedRole = false;
    return this;
  }

  public synchronized FakeEcs createServiceLinkedRole() {
    serviceLinkedRole = true;
    return this;
  }

  /** The lastStatus new tasks start in (default PROVISIONING, as RunTask usually answers). */
  public synchronized FakeEcs startTasksAs(String lastStatus) {
    initialStatus = lastStatus;
    return this;
  }

  /**
   * The fake's time from now on: task timestamps, client-token lifetimes and the throttling
   * buckets' refill all read it. Default: the system clock. Tests pass a settable clock (often the
   * queue's own) and move it.
   */
  public FakeEcs useClock(Supplier<Instant> clock) {
    this.clock = clock;
    return this;
  }

  Instant now() {
    return clock.get();
  }

  // ---- requests ---------------------------------------------------------------------------

  public List<Request> requests() {
    return List.copyOf(requests);
  }

  public List<Request> requests(Operation operation) {
    return requests.stream().filter(r -> r.operation() == operation).toList();
  }

  /** Answers sent, in order; a dropped connection or an answer still delayed has none yet. */
  public List<Reply> replies(Operation operation) {
    return replies.stream().filter(r -> r.operation() == operation).toList();
  }

  public int count(Operation operation) {
    return requests(operation).size();
  }

  /** The body of the last request of {@code operation}. */
  public JsonNode last(Operation operation) {
    List<Request> of = requests(operation);
    if (of.isEmpty()) {
      throw new AssertionError("no " + operation.wireName + " request was made");
    }
    return of.get(of.size() - 1).body();
  }

  // ---- tasks ------------------------------------------------------------------------------

  public synchronized List<TaskView> tasks() {
    return tasks.values().stream().map(FakeTask::view).toList();
  }

  public synchronized TaskView task(String arn) {
    return taskOrFail(arn).view();
  }

  /** A task created directly (not through RunTask), e.g. for DescribeTasks tests. */
  public synchronized String addTask(String cluster, String lastStatus) {
    FakeTask t = newTask(cluster, TASK_DEFINITION, 1, null, null, json.createObjectNode());
    t.lastStatus = lastStatus;
    return t.arn;
  }

  /** The capacity providers at most a RunTask strategy may contain. */
  static final int MAX_STRATEGY_PROVIDERS = 20;

  /**
   * ECS's answer in {@code failures[]} when Fargate (on-demand or Spot) has no capacity for a task
   * (AWS re:Post knowledge center, ecs-fargate-runtask-capacity).
   */
  public static final String NO_CAPACITY =
      "Capacity is unavailable at this time. Please try again later or in a different availability zone";

  /** ECS's stop code and stopped reason for a reclaimed Fargate Spot task. */
  public static final String SPOT_INTERRUPTION = "SpotInterruption";

  public static final String SPOT_INTERRUPTED_REASON = "Your Spot Task was interrupted.";

  /**
   * The capacity providers the cluster is associated with (by default FARGATE and FARGATE_SPOT, as
   * the stack's template associates them); a RunTask strategy naming another is refused.
   */
  public synchronized void associateCapacityProviders(String... providers) {
    clusterProviders.clear();
    clusterProviders.addAll(List.of(providers));
  }

  /**
   * Whether Fargate Spot has capacity: without, a RunTask on FARGATE_SPOT answers one {@code
   * failures[]} entry, {@link #NO_CAPACITY}, and starts nothing (on-demand is unaffected).
   */
  public synchronized void spotCapacity(boolean available) {
    spotCapacity = available;
  }

  /** The capacity provider the task runs on, or null for a {@code launchType} FARGATE task. */
  public synchronized String capacityProviderOf(String arn) {
    return taskOrFail(arn).capacityProvider;
  }

  /** Called with the task when it gets its SIGTERM (a reclaim's two-minute warning). */
  public void onSigterm(java.util.function.Consumer<TaskView> listener) {
    sigtermListeners.add(listener);
  }

  /**
   * AWS reclaims a Fargate Spot task: the task gets SIGTERM (the {@link #onSigterm} listeners run:
   * the two-minute warning), then stops with stop code {@value #SPOT_INTERRUPTION} and stopped
   * reason {@value #SPOT_INTERRUPTED_REASON}, its container exiting 143 (killed by SIGTERM). Only a
   * running task on FARGATE_SPOT can be reclaimed. Returns the "ECS Task State Change" event ECS
   * sends to EventBridge for the stop ({@link #stateChangeEvent}).
   */
  public ObjectNode reclaim(String arn) {
    TaskView before;
    synchronized (this) {
      FakeTask t = taskOrFail(arn);
      if (!"FARGATE_SPOT".equals(t.capacityProvider) || "STOPPED".equals(t.lastStatus)) {
        throw new AssertionError(
            "only a live task on FARGATE_SPOT can be reclaimed: "
                + arn
                + " runs on "
                + t.capacityProvider
                + ", "
                + t.lastStatus);
      }
      t.desiredStatus = "STOPPED";
      t.stopCode = SPOT_INTERRUPTION;
      t.stoppedReason = SPOT_INTERRUPTED_REASON;
      t.version++;
      before = t.view();
    }
    sigtermListeners.forEach(l -> l.accept(before));
    stopTask(arn, SPOT_INTERRUPTION, SPOT_INTERRUPTED_REASON, 143, null);
    return stateChangeEvent(arn);
  }

  /**
   * The EventBridge event ECS sends for the task's current state: {@code detail-type} "ECS Task
   * State Change", {@code source} "aws.ecs", the task ARN in {@code resources}, and the task itself
   * as {@code detail} (ECS Developer Guide, Amazon ECS task state change events).
   */
  public synchronized ObjectNode stateChangeEvent(String arn) {
    FakeTask t = taskOrFail(arn);
    ObjectNode e = json.createObjectNode();
    e.put("version", "0");
    e.put("id", UUID.randomUUID().toString());
    e.put("detail-type", "ECS Task State Change");
    e.put("source", "aws.ecs");
    e.put("account", ACCOUNT);
    e.put("time", now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString());
    e.put("region", REGION);
    e.putArray("resources").add(arn);
    ObjectNode detail = t.toJson();
    // Events write times as ISO-8601 text, DescribeTasks as epoch seconds.
    for (String time : List.of("createdAt", "stoppedAt")) {
      if (detail.has(time)) {
        detail.put(
            time, Instant.ofEpochMilli((long) (detail.get(time).asDouble() * 1000)).toString());
      }
    }
    e.set("detail", detail);
    return e;
  }

  /** Moves a task to another lastStatus (PROVISIONING, PENDING, RUNNING, DEPROVISIONING, ...). */
  public synchronized void setLastStatus(String arn, String lastStatus) {
    FakeTask t = taskOrFail(arn);
    t.lastStatus = lastStatus;
    t.version++;
  }

  /**
   * The task stops as ECS reports it: stop code, stopped reason, the container's exit code and
   * reason.
   */
  public synchronized void stopTask(
      String arn, String stopCode, String stoppedReason, Integer exitCode, String containerReason) {
    FakeTask t = taskOrFail(arn);
    t.lastStatus = "STOPPED";
    t.desiredStatus = "STOPPED";
    t.stopCode = stopCode;
    t.stoppedReason = stoppedReason;
    t.exitCode = exitCode;
    t.containerReason = containerReason;
    t.stoppedAt = now();
    t.version++;
  }

  /**
   * ECS forgets the task (as it does about an hour after it stopped): DescribeTasks says MISSING.
   */
  public synchronized void forget(String arn) {
    taskOrFail(arn).forgotten = true;
  }

  private FakeTask taskOrFail(String arn) {
    FakeTask t = tasks.get(arn);
    if (t == null) {
      throw new AssertionError("fake ECS has no task " + arn);
    }
    return t;
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }

  // ---- the wire ---------------------------------------------------------------------------

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] raw;
      try (InputStream in = exchange.getRequestBody()) {
        raw = in.readAllBytes();
      }
      Map<String, List<String>> headers = new LinkedHashMap<>();
      exchange
          .getRequestHeaders()
          .forEach((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), List.copyOf(v)));
      String target = exchange.getRequestHeaders().getFirst("X-Amz-Target");
      Operation op = Operation.ofTarget(target);
      JsonNode body;
      try {
        body = raw.length == 0 ? json.createObjectNode() : json.readTree(raw);
      } catch (IOException e) {
        requests.add(new Request(target, op, headers, json.createObjectNode()));
        send(exchange, op, 400, error("SerializationException", "request body is not JSON"));
        return;
      }
      requests.add(new Request(target, op, headers, body));
      if (!"POST".equals(exchange.getRequestMethod()) || op == null) {
        send(exchange, op, 400, error("UnknownOperationException", "unknown operation " + target));
        return;
      }
      String contentType = exchange.getRequestHeaders().getFirst("Content-Type");
      if (contentType == null || !contentType.startsWith(CONTENT_TYPE)) {
        send(
            exchange,
            op,
            400,
            error("SerializationException", "expected content type " + CONTENT_TYPE));
        return;
      }
      if (!throttling.admit(op, body, now())) {
        send(exchange, op, 400, error("ThrottlingException", "Rate exceeded"));
        return;
      }
      answer(exchange, op, body, nextAnswer(op));
    }
  }

  private synchronized Answer nextAnswer(Operation op) {
    Deque<Answer> queue = scripted.get(op);
    if (queue != null && !queue.isEmpty()) {
      return queue.poll();
    }
    return always.getOrDefault(op, Answer.normal());
  }

  private void answer(HttpExchange exchange, Operation op, JsonNode body, Answer answer)
      throws IOException {
    if (!answer.afterWork) {
      switch (answer.kind) {
        case ERROR:
          send(exchange, op, answer.status, error(answer.errorType, answer.errorMessage));
          return;
        case DROP:
          return; // closing the exchange with no response headers closes the connection
        case FAILURE:
          send(exchange, op, 200, rememberFailures(body, failures(answer)));
          return;
        default:
          break;
      }
    }
    int status;
    ObjectNode result;
    try {
      result = perform(op, body);
      status = 200;
    } catch (Refusal r) {
      result = r.body;
      status = r.status;
    }
    switch (answer.kind) {
      case ERROR:
        send(exchange, op, answer.status, error(answer.errorType, answer.errorMessage));
        return;
      case DROP:
        return;
      case DELAY:
        try {
          Thread.sleep(answer.delay.toMillis());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
        send(exchange, op, status, result);
        return;
      default:
        send(exchange, op, status, result);
    }
  }

  private void send(HttpExchange exchange, Operation op, int status, ObjectNode body)
      throws IOException {
    replies.add(new Reply(op, status, body.deepCopy()));
    byte[] bytes = json.writeValueAsBytes(body);
    exchange.getResponseHeaders().set("Content-Type", CONTENT_TYPE);
    exchange.getResponseHeaders().set("x-amzn-RequestId", UUID.randomUUID().toString());
    try {
      exchange.sendResponseHeaders(status, bytes.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    } catch (IOException clientGone) {
      // The client timed out and closed the connection: nothing to tell it.
    }
  }

  private ObjectNode error(String type, String message) {
    ObjectNode e = json.createObjectNode();
    e.put("__type", type);
    e.put("message", message);
    return e;
  }

  private ObjectNode failures(Answer answer) {
    ObjectNode r = json.createObjectNode();
    r.putArray("tasks");
    ObjectNode f = r.putArray("failures").addObject();
    f.put("reason", answer.failureReason);
    if (answer.failureDetail != null) {
      f.put("detail", answer.failureDetail);
    }
    return r;
  }

  /** An error answer of the operation itself (validation, not-found, conflict). */
  private static final class Refusal extends RuntimeException {
    final int status;
    final ObjectNode body;

    Refusal(int status, ObjectNode body) {
      super(body.path("message").asText(), null, false, false);
      this.status = status;
      this.body = body;
    }
  }

  private Refusal refuse(String type, String message) {
    return new Refusal(400, error(type, message));
  }

  private synchronized ObjectNode perform(Operation op, JsonNode body) {
    switch (op) {
      case RUN_TASK:
        return runTask(body);
      case DESCRIBE_TASKS:
        return describeTasks(body);
      default:
        return stopTaskOperation(body);
    }
  }

  // ---- operations -------------------------------------------------------------------------

  /**
   * A client token's first answer: the tasks it started, or the {@code failures[]} answer it got.
   */
  private record TokenUse(
      JsonNode parameters, List<String> taskArns, ObjectNode failures, Instant firstUse) {}

  /** How long ECS keeps a RunTask client token at most, whatever its task does. */
  static final Duration TOKEN_MAX_LIFETIME = Duration.ofHours(24);

  /** How long ECS keeps a client token after its task's lifetime ended. */
  static final Duration TOKEN_AFTER_TASK = Duration.ofHours(1);

  /**
   * When ECS forgets a client token: "the lesser of 24 hours and the task's lifetime plus one hour"
   * (ECS API Reference, Ensuring idempotency, RunTask), read here as: 24 h after its first use, or
   * one hour after the last of its tasks stopped, whichever comes first. A token whose answer was
   * {@code failures[]} started no task; AWS does not say how long such a token lives, and the fake
   * gives it one hour (a task lifetime of zero plus one hour).
   */
  private Instant tokenExpiresAt(TokenUse use) {
    Instant cap = use.firstUse().plus(TOKEN_MAX_LIFETIME);
    if (use.taskArns().isEmpty()) {
      return min(cap, use.firstUse().plus(TOKEN_AFTER_TASK));
    }
    Instant lastStop = null;
    for (String arn : use.taskArns()) {
      Instant stopped = tasks.get(arn).stoppedAt;
      if (stopped == null) {
        return cap;
      }
      lastStop = lastStop == null || stopped.isAfter(lastStop) ? stopped : lastStop;
    }
    return min(cap, lastStop.plus(TOKEN_AFTER_TASK));
  }

  private static Instant min(Instant a, Instant b) {
    return a.isBefore(b) ? a : b;
  }

  /** The token's first answer while ECS still keeps it, else null (and it is forgotten). */
  private TokenUse liveToken(String key) {
    TokenUse used = tokens.get(key);
    if (used != null && !now().isBefore(tokenExpiresAt(used))) {
      tokens.remove(key);
      return null;
    }
    return used;
  }

  /**
   * A scripted {@code failures[]} answer to RunTask is ECS's first answer for its token, so a
   * repeat of the request within the token's lifetime gets the same failures, not a task.
   */
  private synchronized ObjectNode rememberFailures(JsonNode body, ObjectNode answer) {
    String token = body.path("clientToken").asText(null);
    if (token != null && liveToken(tokenKey(body, token)) == null) {
      tokens.put(
          tokenKey(body, token),
          new TokenUse(parametersOf(body), List.of(), answer.deepCopy(), now()));
    }
    return answer;
  }

  private static String tokenKey(JsonNode body, String token) {
    return clusterName(body.path("cluster").asText(null)) + "|" + token;
  }

  private static ObjectNode parametersOf(JsonNode body) {
    ObjectNode parameters = body.deepCopy();
    parameters.remove("clientToken");
    return parameters;
  }

  private ObjectNode runTask(JsonNode body) {
    String cluster = clusterName(body.path("cluster").asText(null));
    String taskDefinition = body.path("taskDefinition").asText(null);
    if (taskDefinition == null || taskDefinition.isBlank()) {
      throw refuse("InvalidParameterException", "taskDefinition can not be blank.");
    }
    String family = family(taskDefinition);
    String container = containerByFamily.get(family);
    int revision = revision(family, taskDefinition);
    if (container == null || revision < 1) {
      throw refuse("ClientException", "TaskDefinition not found.");
    }
    if (deniedUntil != null && now().isBefore(deniedUntil)) {
      throw new Refusal(
          400,
          error(
              "AccessDeniedException",
              "User: arn:aws:sts::"
                  + ACCOUNT
                  + ":assumed-role/buildqueue-tick-role/buildqueue-tick is not authorized to"
                  + " perform: ecs:RunTask on resource: "
                  + taskDefinitionArn(family, revision)
                  + " because no identity-based policy allows the ecs:RunTask action"));
    }
    if (!revisions.get(family).get(revision - 1)) {
      throw refuse("InvalidParameterException", "TaskDefinition is inactive");
    }
    if (!serviceLinkedRole) {
      throw refuse(
          "InvalidParameterException",
          "Unable to assume the service linked role. Please verify that the ECS service linked role exists.");
    }
    int count = body.path("count").asInt(1);
    if (count < 1 || count > MAX_COUNT) {
      throw refuse("InvalidParameterException", "count must be between 1 and " + MAX_COUNT + ".");
    }
    JsonNode subnets =
        body.path("networkConfiguration").path("awsvpcConfiguration").path("subnets");
    if (!subnets.isArray() || subnets.isEmpty()) {
      throw refuse(
          "InvalidParameterException",
          "Network Configuration must be provided when networkMode 'awsvpc' is specified.");
    }
    String token = body.path("clientToken").asText(null);
    if (token != null
        && (token.isEmpty()
            || token.length() > MAX_TOKEN
            || !token.chars().allMatch(ch -> ch >= 33 && ch <= 126))) {
      throw refuse(
          "InvalidParameterException",
          "clientToken must be 1 to " + MAX_TOKEN + " ASCII characters in the range 33-126.");
    }
    String startedBy = body.path("startedBy").asText(null);
    if (startedBy != null && !STARTED_BY.matcher(startedBy).matches()) {
      throw refuse(
          "InvalidParameterException",
          "startedBy must be up to 128 letters, numbers, hyphens, slashes and underscores.");
    }
    String provider = capacityProvider(body);
    JsonNode overrides = body.path("overrides");
    if (overrides.isMissingNode()) {
      overrides = json.createObjectNode();
    }
    if (overrides.toString().length() > MAX_OVERRIDES) {
      throw refuse(
          "InvalidParameterException",
          "Container Overrides length must be at most " + MAX_OVERRIDES);
    }
    for (JsonNode c : overrides.path("containerOverrides")) {
      if (!container.equals(c.path("name").asText())) {
        throw refuse(
            "InvalidParameterException",
            "Override for container named "
                + c.path("name").asText()
                + " is not a container in the TaskDefinition.");
      }
    }
    ObjectNode parameters = parametersOf(body);
    if (token != null) {
      TokenUse used = liveToken(tokenKey(body, token));
      if (used != null && used.parameters().equals(parameters)) {
        return used.failures() != null
            ? used.failures().deepCopy()
            : tasksResponse(used.taskArns());
      }
      if (used != null) {
        ObjectNode conflict =
            error(
                "ConflictException",
                "The specified client token has already been used in a request with different parameters.");
        ArrayNode ids = conflict.putArray("resourceIds");
        used.taskArns().forEach(ids::add);
        throw new Refusal(400, conflict);
      }
    }
    if (!throttling.launch(count, now())) {
      throw refuse("ThrottlingException", "Rate exceeded");
    }
    if ("FARGATE_SPOT".equals(provider) && !spotCapacity) {
      ObjectNode failures = json.createObjectNode();
      failures.putArray("tasks");
      failures.putArray("failures").addObject().put("reason", NO_CAPACITY);
      if (token != null) {
        tokens.put(
            tokenKey(body, token), new TokenUse(parameters, List.of(), failures.deepCopy(), now()));
      }
      return failures;
    }
    List<String> arns = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      FakeTask t = newTask(cluster, family, revision, token, startedBy, overrides);
      t.capacityProvider = provider;
      arns.add(t.arn);
    }
    if (token != null) {
      tokens.put(tokenKey(body, token), new TokenUse(parameters, List.copyOf(arns), null, now()));
    }
    return tasksResponse(arns);
  }

  /**
   * The capacity provider a RunTask runs its task on, checked as ECS checks the request: a {@code
   * launchType} beside a {@code capacityProviderStrategy} is refused, as is a strategy of more than
   * {@value #MAX_STRATEGY_PROVIDERS} providers, a weight outside 0 to 1,000, or a provider the
   * cluster is not associated with. Null for a {@code launchType} FARGATE task. Of a strategy, the
   * fake places every task on its first provider with a positive weight (it runs one at a time).
   */
  private String capacityProvider(JsonNode body) {
    JsonNode strategy = body.path("capacityProviderStrategy");
    if (strategy.isMissingNode() || strategy.isNull() || strategy.isEmpty()) {
      return null;
    }
    if (body.hasNonNull("launchType")) {
      throw refuse(
          "InvalidParameterException",
          "Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.");
    }
    if (strategy.size() > MAX_STRATEGY_PROVIDERS) {
      throw refuse(
          "InvalidParameterException",
          "A capacity provider strategy can contain a maximum of "
              + MAX_STRATEGY_PROVIDERS
              + " capacity providers.");
    }
    String first = null;
    for (JsonNode item : strategy) {
      String name = item.path("capacityProvider").asText("");
      int weight = item.path("weight").asInt(0);
      if (weight < 0 || weight > 1000) {
        throw refuse(
            "InvalidParameterException",
            "The capacity provider strategy weight must be between 0 and 1000.");
      }
      if (!clusterProviders.contains(name)) {
        throw refuse(
            "InvalidParameterException",
            "The specified capacity provider strategy cannot contain a capacity provider that is not"
                + " associated with the cluster. Associate the capacity provider with the cluster or"
                + " specify a valid capacity provider and try again.");
      }
      if (first == null && weight > 0) {
        first = name;
      }
    }
    return first == null ? strategy.get(0).path("capacityProvider").asText() : first;
  }

  private ObjectNode tasksResponse(List<String> arns) {
    ObjectNode r = json.createObjectNode();
    ArrayNode list = r.putArray("tasks");
    arns.forEach(a -> list.add(tasks.get(a).toJson()));
    r.putArray("failures");
    return r;
  }

  private ObjectNode describeTasks(JsonNode body) {
    String cluster = clusterName(body.path("cluster").asText(null));
    JsonNode ids = body.path("tasks");
    if (!ids.isArray() || ids.isEmpty()) {
      throw refuse("InvalidParameterException", "Tasks cannot be empty.");
    }
    if (ids.size() > MAX_DESCRIBE) {
      throw refuse(
          "InvalidParameterException",
          "Tasks cannot have more than " + MAX_DESCRIBE + " elements.");
    }
    ObjectNode r = json.createObjectNode();
    ArrayNode found = r.putArray("tasks");
    ArrayNode failures = r.putArray("failures");
    for (JsonNode id : ids) {
      FakeTask t = find(cluster, id.asText());
      if (t == null) {
        failures.addObject().put("arn", id.asText()).put("reason", "MISSING");
      } else {
        found.add(t.toJson());
      }
    }
    return r;
  }

  private ObjectNode stopTaskOperation(JsonNode body) {
    String cluster = clusterName(body.path("cluster").asText(null));
    FakeTask t = find(cluster, body.path("task").asText(""));
    if (t == null) {
      throw refuse("InvalidParameterException", "The referenced task was not found.");
    }
    String reason = body.path("reason").asText(null);
    if (reason != null && reason.length() > MAX_STOP_REASON) {
      throw refuse(
          "InvalidParameterException",
          "reason must be at most " + MAX_STOP_REASON + " characters.");
    }
    if (!"STOPPED".equals(t.lastStatus)) {
      stopTask(t.arn, "UserInitiated", reason == null ? "Task stopped by user" : reason, 143, null);
    }
    ObjectNode r = json.createObjectNode();
    r.set("task", t.toJson());
    return r;
  }

  private FakeTask find(String cluster, String id) {
    for (FakeTask t : tasks.values()) {
      if (!t.forgotten
          && t.cluster.equals(cluster)
          && (t.arn.equals(id) || t.arn.endsWith("/" + id))) {
        return t;
      }
    }
    return null;
  }

  private FakeTask newTask(
      String cluster,
      String family,
      int revision,
      String token,
      String startedBy,
      JsonNode overrides) {
    String id = String.format("%032x", taskCounter.incrementAndGet());
    FakeTask t =
        new FakeTask(
            "arn:aws:ecs:" + REGION + ":" + ACCOUNT + ":task/" + cluster + "/" + id,
            cluster,
            family,
            revision,
            token,
            startedBy,
            overrides.deepCopy());
    t.lastStatus = initialStatus;
    tasks.put(t.arn, t);
    return t;
  }

  private static String clusterName(String cluster) {
    if (cluster == null || cluster.isBlank()) {
      return "default";
    }
    int slash = cluster.indexOf(":cluster/");
    return slash >= 0 ? cluster.substring(slash + ":cluster/".length()) : cluster;
  }

  private static String family(String taskDefinition) {
    String td = taskDefinition;
    int slash = td.indexOf(":task-definition/");
    if (slash >= 0) {
      td = td.substring(slash + ":task-definition/".length());
    }
    int colon = td.indexOf(':');
    return colon >= 0 ? td.substring(0, colon) : td;
  }

  /**
   * The revision a RunTask names: the one after the colon, else the family's latest ACTIVE one; 0
   * if there is none (an unknown family or revision, a family with no ACTIVE revision left).
   */
  private int revision(String family, String taskDefinition) {
    List<Boolean> of = revisions.get(family);
    if (of == null) {
      return 0;
    }
    String td = taskDefinition.substring(taskDefinition.lastIndexOf('/') + 1);
    int colon = td.indexOf(':');
    if (colon < 0) {
      return of.lastIndexOf(true) + 1;
    }
    try {
      int n = Integer.parseInt(td.substring(colon + 1));
      return n >= 1 && n <= of.size() ? n : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private final class FakeTask {
    final String arn;
    final String cluster;
    final String family;
    final int revision;
    final String clientToken;
    final String startedBy;
    final JsonNode overrides;
    final Instant createdAt = now();
    String lastStatus;
    String desiredStatus = "RUNNING";
    String stopCode;
    String stoppedReason;
    String capacityProvider;
    Integer exitCode;
    String containerReason;
    Instant stoppedAt;
    long version = 1;
    boolean forgotten;

    FakeTask(
        String arn,
        String cluster,
        String family,
        int revision,
        String clientToken,
        String startedBy,
        JsonNode overrides) {
      this.arn = arn;
      this.cluster = cluster;
      this.family = family;
      this.revision = revision;
      this.clientToken = clientToken;
      this.startedBy = startedBy;
      this.overrides = overrides;
    }

    String taskDefinitionArn() {
      return FakeEcs.taskDefinitionArn(family, revision);
    }

    TaskView view() {
      return new TaskView(
          arn,
          cluster,
          taskDefinitionArn(),
          lastStatus,
          desiredStatus,
          startedBy,
          clientToken,
          overrides.deepCopy(),
          stopCode,
          stoppedReason,
          version);
    }

    ObjectNode toJson() {
      ObjectNode t = json.createObjectNode();
      t.put("taskArn", arn);
      t.put("clusterArn", clusterArn(cluster));
      t.put("taskDefinitionArn", taskDefinitionArn());
      t.put("lastStatus", lastStatus);
      t.put("desiredStatus", desiredStatus);
      t.put("launchType", "FARGATE");
      if (capacityProvider != null) {
        t.put("capacityProviderName", capacityProvider);
      }
      t.put("platformVersion", "1.4.0");
      t.put("cpu", "1024");
      t.put("memory", "2048");
      t.put("group", "family:" + family);
      t.put("version", version);
      // JSON 1.1 timestamps are epoch seconds.
      t.put("createdAt", createdAt.toEpochMilli() / 1000.0);
      if (startedBy != null) {
        t.put("startedBy", startedBy);
      }
      t.set("overrides", overrides.deepCopy());
      if (stopCode != null) {
        t.put("stopCode", stopCode);
      }
      if (stoppedReason != null) {
        t.put("stoppedReason", stoppedReason);
      }
      if (stoppedAt != null) {
        t.put("stoppedAt", stoppedAt.toEpochMilli() / 1000.0);
      }
      ArrayNode containers = t.putArray("containers");
      boolean failedToStart = "TaskFailedToStart".equals(stopCode);
      if (!failedToStart) {
        ObjectNode c = containers.addObject();
        c.put(
            "containerArn",
            "arn:aws:ecs:"
                + REGION
                + ":"
                + ACCOUNT
                + ":container/"
                + cluster
                + "/"
                + arn.substring(arn.lastIndexOf('/') + 1)
                + "/"
                + UUID.nameUUIDFromBytes(arn.getBytes(StandardCharsets.UTF_8)));
        c.put("taskArn", arn);
        c.put("name", containerByFamily.getOrDefault(family, CONTAINER));
        c.put(
            "lastStatus",
            "STOPPED".equals(lastStatus)
                ? "STOPPED"
                : "RUNNING".equals(lastStatus) ? "RUNNING" : "PENDING");
        if (exitCode != null) {
          c.put("exitCode", exitCode);
        }
        if (containerReason != null) {
          c.put("reason", containerReason);
        }
      }
      return t;
    }
  }
}
