package buildqueue.aws.fake;

import buildqueue.aws.db.DataApiClients;
import buildqueue.aws.db.DataApiSettings;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.Base64;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.util.PGobject;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * A stand-in for the RDS Data API that the real SDK client talks to over HTTP: the rest-json
 * protocol of {@code rds-data} 2018-08-01 ({@code POST /Execute}, {@code /BeginTransaction}, {@code
 * /CommitTransaction}, {@code /RollbackTransaction}), errors as an {@code x-amzn-ErrorType} header
 * plus a {@code {"message": ...}} body. Statements run over JDBC on the databases registered with
 * {@link #serve} (the tests' embedded PostgreSQL), in a UTC session as on Aurora.
 *
 * <p>What it reproduces: typed parameters and type hints (a TIMESTAMP must be {@code YYYY-MM-DD
 * HH:MM:SS[.FFF]}; a plain string is a {@code varchar}, so it will not go into a timestamp or uuid
 * column uncast); records as lists of fields with {@code columnMetadata} carrying {@code typeName};
 * timestamps returned as strings without offset, in UTC; uuid and json as strings; one statement
 * per call; transactions held open by id on their own connection, dropped on the first SQL error
 * (later calls get {@code TransactionNotFoundException}) and refused a second concurrent call; SQL
 * errors as {@code DatabaseErrorException} with the PostgreSQL message and {@code SQLState}; the 45
 * s statement limit and {@code continueAfterTimeout} ({@link #statementLimit}); the 64 KB row and 1
 * MiB answer limits ({@link ResultSizeLimits}), always on. What it does not: the 3-minute idle
 * timeout, {@code formatRecordsAs}, {@code BatchExecuteStatement}, AWS authentication (only that a
 * SigV4 header is there).
 *
 * <p>The database login: a secret served with a {@link DataSource} logs in as that pool does (the
 * pool's fixed user and password); a secret served with {@link #serve(String, String,
 * SecretsManagerFake, String)} logs in with what the secret's {@code AWSCURRENT} version holds at
 * each connection, as the Data API reads the secret, and a refused login is {@code
 * BadRequestException} with PostgreSQL's message.
 *
 * <p>For fault tests: {@link #inject} a {@link Fault} (or use {@link #resumingForNextCalls} /
 * {@link #resumingFor}); {@link #calls} counts every call received, faulted or not.
 */
public final class DataApiFake implements AutoCloseable {
  public static final String REGION = "eu-west-1";
  public static final String RESOURCE_ARN =
      "arn:aws:rds:eu-west-1:111122223333:cluster:buildqueue-test";
  public static final String SECRET_ARN =
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:buildqueue-test-AbCdEf";

  /** The worker role's secret: statements sent with it run as that role, as on AWS. */
  public static final String WORKER_SECRET_ARN =
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:buildqueue-test-worker-GhIjKl";

  /** The calls the fake answers, by request path. */
  public enum Operation {
    EXECUTE("/Execute"),
    BEGIN("/BeginTransaction"),
    COMMIT("/CommitTransaction"),
    ROLLBACK("/RollbackTransaction");

    final String path;

    Operation(String path) {
      this.path = path;
    }

    static Optional<Operation> ofPath(String path) {
      for (Operation op : values()) {
        if (op.path.equals(path)) {
          return Optional.of(op);
        }
      }
      return Optional.empty();
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern TIMESTAMP =
      Pattern.compile("\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?");
  private static final DateTimeFormatter TIMESTAMP_IN =
      new DateTimeFormatterBuilder()
          .appendPattern("uuuu-MM-dd HH:mm:ss")
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 1, 3, true)
          .optionalEnd()
          .toFormatter();
  private static final SecureRandom RANDOM = new SecureRandom();

  private final HttpServer server;
  private final ExecutorService executor;
  private final Clock clock;

  /**
   * By secret ARN, then database name: the Data API connects with the credentials the request's
   * secret holds, so each secret is served by a pool that logs in as the secret's user.
   */
  private final Map<String, Map<String, DataSource>> databases = new ConcurrentHashMap<>();

  private final Map<String, Tx> transactions = new ConcurrentHashMap<>();
  private final Map<Operation, AtomicLong> counts = new EnumMap<>(Operation.class);
  private final List<Fault> faults = new CopyOnWriteArrayList<>();

  /** The Data API's statement limit (data-api-timeouts). */
  public static final Duration STATEMENT_LIMIT = Duration.ofSeconds(45);

  private volatile Duration statementLimit = STATEMENT_LIMIT;
  private final ExecutorService statements =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "data-api-fake-statement");
            t.setDaemon(true);
            return t;
          });
  private final Map<String, Future<JsonNode>> continuing = new ConcurrentHashMap<>();
  private final AtomicLong continuedPastLimit = new AtomicLong();
  private final AtomicLong continueAfterTimeoutCalls = new AtomicLong();

  private DataApiFake(HttpServer server, ExecutorService executor, Clock clock) {
    this.server = server;
    this.executor = executor;
    this.clock = clock;
    for (Operation op : Operation.values()) {
      counts.put(op, new AtomicLong());
    }
  }

  /** Starts on a free loopback port. */
  public static DataApiFake start() {
    // Headers and body leave in separate writes; without TCP_NODELAY the client's delayed ACK
    // adds ~40 ms to every call. Read once, when the JVM's first server is made, so this counts
    // only
    // if the fake is the first: the aws tests set it for the whole JVM (pom), the benchmark in
    // BenchMain.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    try {
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      ExecutorService executor =
          Executors.newCachedThreadPool(
              r -> {
                Thread t = new Thread(r, "data-api-fake");
                t.setDaemon(true);
                return t;
              });
      DataApiFake fake = new DataApiFake(server, executor, Clock.systemUTC());
      server.createContext("/", fake::handle);
      server.setExecutor(executor);
      server.start();
      return fake;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start the Data API fake", e);
    }
  }

  /**
   * Makes {@code database} (the request's {@code database} field) run on {@code dataSource} for
   * requests that name the master secret.
   */
  public DataApiFake serve(String database, DataSource dataSource) {
    return serve(database, SECRET_ARN, dataSource);
  }

  /**
   * Makes {@code database} run on {@code dataSource} for requests that name {@code secretArn}: the
   * pool must log in as that secret's user (the worker role's, for {@link #WORKER_SECRET_ARN}).
   */
  public DataApiFake serve(String database, String secretArn, DataSource dataSource) {
    databases.computeIfAbsent(secretArn, k -> new ConcurrentHashMap<>()).put(database, dataSource);
    return this;
  }

  /**
   * Makes {@code database} (at {@code jdbcUrl}, which must name no user) run for requests that name
   * {@code secretArn} with the login that secret's {@code AWSCURRENT} version holds in {@code
   * secrets}, read at every new connection as the Data API reads the secret: rotate the secret
   * without changing the role's password and the next statement fails to log in ({@code
   * BadRequestException} "FATAL: password authentication failed ...", as Aurora's Data API
   * answers). Unpooled: each statement outside a transaction logs in anew.
   */
  public DataApiFake serve(
      String database, String secretArn, SecretsManagerFake secrets, String jdbcUrl) {
    return serve(
        database,
        secretArn,
        new SecretLoginDataSource(jdbcUrl, () -> secrets.currentLogin(secretArn)));
  }

  public URI endpoint() {
    return URI.create(
        "http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort());
  }

  /** Settings that point the adapter at this fake and {@code database}. */
  public DataApiSettings settings(String database) {
    return DataApiSettings.of(REGION, RESOURCE_ARN, SECRET_ARN, database)
        .withEndpointOverride(endpoint());
  }

  /** As {@link #settings}, with the worker role's secret, as a worker task has. */
  public DataApiSettings workerSettings(String database) {
    return DataApiSettings.of(REGION, RESOURCE_ARN, WORKER_SECRET_ARN, database)
        .withEndpointOverride(endpoint());
  }

  /** A real SDK client, built by the production factory, pointed at this fake. Close it. */
  public RdsDataClient newClient() {
    return DataApiClients.create(
        settings("unused"),
        StaticCredentialsProvider.create(AwsBasicCredentials.create("AKIDFAKE", "fake-secret")));
  }

  /**
   * How long a statement may run before the fake answers {@code StatementTimeoutException}: 45 s,
   * as on AWS, unless a test shortens it to keep a slow statement quick.
   */
  public DataApiFake statementLimit(Duration limit) {
    this.statementLimit = limit;
    return this;
  }

  /** Statements sent with {@code continueAfterTimeout} that ran past the limit (and on). */
  public long continuedPastLimit() {
    return continuedPastLimit.get();
  }

  /** Execute calls that carried {@code continueAfterTimeout: true}. */
  public long continueAfterTimeoutCalls() {
    return continueAfterTimeoutCalls.get();
  }

  public void inject(Fault fault) {
    fault.armed(clock.instant());
    faults.add(fault);
  }

  /** The next {@code n} calls, whatever they are, answer {@code DatabaseResumingException}. */
  public void resumingForNextCalls(int n) {
    inject(Fault.resuming().times(n));
  }

  /** Every call answers {@code DatabaseResumingException} until {@code window} has passed. */
  public void resumingFor(Duration window) {
    inject(Fault.resuming().during(window));
  }

  public void clearFaults() {
    faults.clear();
  }

  /** Calls of one kind received since start or {@link #resetCounts}, faulted ones included. */
  public long calls(Operation op) {
    return counts.get(op).get();
  }

  public long calls() {
    return counts.values().stream().mapToLong(AtomicLong::get).sum();
  }

  public void resetCounts() {
    counts.values().forEach(c -> c.set(0));
    continueAfterTimeoutCalls.set(0);
    continuedPastLimit.set(0);
  }

  /** Transactions begun and not yet committed, rolled back or dropped: a leak check. */
  public int openTransactions() {
    return transactions.size();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
    statements.shutdownNow();
    for (Tx tx : List.copyOf(transactions.values())) {
      drop(tx);
    }
  }

  // ---- HTTP ----

  private void handle(HttpExchange exchange) {
    try (exchange) {
      Reply reply;
      try {
        reply = answer(exchange);
      } catch (ApiError e) {
        reply = Reply.error(e);
      } catch (RuntimeException e) {
        reply =
            Reply.error(new ApiError(500, "InternalServerErrorException", "fake failure: " + e));
      }
      send(exchange, reply);
    } catch (IOException clientWentAway) {
      // The client timed out or closed the connection; whatever ran has run, as on AWS.
    }
  }

  private Reply answer(HttpExchange exchange) throws IOException {
    Operation op =
        Operation.ofPath(exchange.getRequestURI().getPath())
            .orElseThrow(
                () ->
                    new ApiError(
                        404,
                        "UnknownOperationException",
                        "no operation at " + exchange.getRequestURI()));
    if (!"POST".equals(exchange.getRequestMethod())) {
      throw new ApiError(405, "MethodNotAllowedException", op.path + " takes POST");
    }
    counts.get(op).incrementAndGet();
    String authorization = exchange.getRequestHeaders().getFirst("Authorization");
    if (authorization == null || !authorization.startsWith("AWS4-HMAC-SHA256 ")) {
      throw new ApiError(403, "ForbiddenException", "Missing Authentication Token");
    }
    JsonNode request = JSON.readTree(exchange.getRequestBody().readAllBytes());
    if (request == null || !request.isObject()) {
      throw new ApiError(400, "BadRequestException", "the request body must be a JSON object");
    }
    Fault fault = fault(op, request.path("sql").asText(null));
    if (fault != null && fault.delay != null) {
      sleep(fault.delay);
      fault = null;
    }
    if (fault != null && !fault.afterApplying) {
      throw new ApiError(fault.status, fault.errorType, fault.message);
    }
    checkTarget(request);
    JsonNode body =
        switch (op) {
          case EXECUTE -> execute(request);
          case BEGIN -> begin(request);
          case COMMIT -> commit(request);
          case ROLLBACK -> rollback(request);
        };
    if (fault != null) {
      throw new ApiError(fault.status, fault.errorType, fault.message);
    }
    return new Reply(200, null, JSON.writeValueAsBytes(body));
  }

  private Fault fault(Operation op, String sql) {
    Instant now = clock.instant();
    faults.removeIf(f -> f.expired(now));
    for (Fault f : faults) {
      if (f.fire(op, sql, now)) {
        return f;
      }
    }
    return null;
  }

  private static void send(HttpExchange exchange, Reply reply) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.getResponseHeaders().set("x-amzn-RequestId", UUID.randomUUID().toString());
    if (reply.errorType != null) {
      // The shape AWS rest-json services answer with; the SDK reads the code from this header.
      exchange
          .getResponseHeaders()
          .set(
              "x-amzn-ErrorType",
              reply.errorType + ":http://internal.amazon.com/coral/com.amazon.rdsdataservice/");
    }
    exchange.sendResponseHeaders(reply.status, reply.body.length);
    exchange.getResponseBody().write(reply.body);
  }

  private record Reply(int status, String errorType, byte[] body) {
    static Reply error(ApiError e) {
      ObjectNode body = JSON.createObjectNode().put("message", e.getMessage());
      try {
        return new Reply(e.status, e.type, JSON.writeValueAsBytes(body));
      } catch (IOException impossible) {
        throw new UncheckedIOException(impossible);
      }
    }
  }

  /** An error answer: HTTP status, the model's error shape name, and its message. */
  static final class ApiError extends RuntimeException {
    final int status;
    final String type;

    ApiError(int status, String type, String message) {
      super(message, null, false, false);
      this.status = status;
      this.type = type;
    }
  }

  // ---- operations ----

  private void checkTarget(JsonNode request) {
    if (!RESOURCE_ARN.equals(request.path("resourceArn").asText(null))) {
      throw new ApiError(
          400,
          "BadRequestException",
          "Invalid resourceArn: " + request.path("resourceArn").asText(""));
    }
    String secretArn = request.path("secretArn").asText("");
    if (!SECRET_ARN.equals(secretArn) && !databases.containsKey(secretArn)) {
      throw new ApiError(400, "BadRequestException", "Invalid secretArn");
    }
  }

  private JsonNode begin(JsonNode request) {
    DataSource ds = dataSource(request);
    Connection c = null;
    try {
      c = ds.getConnection();
      utcSession(c);
      c.setAutoCommit(false);
      String id = newTransactionId();
      transactions.put(id, new Tx(id, c));
      return JSON.createObjectNode().put("transactionId", id);
    } catch (SQLException e) {
      closeQuietly(c);
      throw sqlError(e);
    }
  }

  private JsonNode commit(JsonNode request) {
    Tx tx = claim(request);
    try {
      tx.connection.commit();
      return JSON.createObjectNode().put("transactionStatus", "Transaction Committed");
    } catch (SQLException e) {
      throw sqlError(e);
    } finally {
      drop(tx);
    }
  }

  private JsonNode rollback(JsonNode request) {
    Tx tx = claim(request);
    drop(tx);
    return JSON.createObjectNode().put("transactionStatus", "Rollback Complete");
  }

  /** Takes a transaction out of the table for commit or rollback; it is ended either way. */
  private Tx claim(JsonNode request) {
    Tx tx = liveTransaction(request.path("transactionId").asText(null));
    refuseWhileContinuing(tx);
    if (!tx.lock.tryLock()) {
      throw new ApiError(400, "DatabaseErrorException", "Transaction is still running a query");
    }
    transactions.remove(tx.id);
    return tx;
  }

  private JsonNode execute(JsonNode request) {
    String sql = request.path("sql").asText(null);
    if (sql == null || sql.isBlank()) {
      throw new ApiError(400, "BadRequestException", "sql is required");
    }
    if (request.hasNonNull("formatRecordsAs")
        && !"NONE".equals(request.get("formatRecordsAs").asText())) {
      throw new ApiError(400, "BadRequestException", "the fake does not implement formatRecordsAs");
    }
    boolean withMetadata = request.path("includeResultMetadata").asBoolean(false);
    Map<String, JsonNode> parameters = parameters(request.path("parameters"));
    String transactionId = request.path("transactionId").asText(null);
    boolean continueAfterTimeout = continueAfterTimeout(request);
    if (continueAfterTimeout) {
      continueAfterTimeoutCalls.incrementAndGet();
    }
    if (transactionId == null) {
      return autocommitWithinLimit(
          dataSource(request), sql, parameters, withMetadata, continueAfterTimeout);
    }
    Tx tx = liveTransaction(transactionId);
    refuseWhileContinuing(tx);
    if (!tx.lock.tryLock()) {
      throw new ApiError(400, "DatabaseErrorException", "Transaction is still running a query");
    }
    try {
      return inTransactionWithinLimit(tx, sql, parameters, withMetadata, continueAfterTimeout);
    } catch (SQLException e) {
      endOnError(tx);
      throw sqlError(e);
    } catch (ApiError e) {
      if (e.type.equals("DatabaseErrorException") || ResultSizeLimits.endsTransaction(e)) {
        endOnError(tx);
      }
      throw e;
    } finally {
      tx.lock.unlock();
    }
  }

  // ---- the 45 s statement limit ----

  /**
   * "By default, the Data API cancels an operation and returns a timeout error if the operation
   * doesn't finish processing within 45 seconds"; with {@code continueAfterTimeout} "your
   * application still receives the timeout error. However, the operation continues running and
   * isn't canceled" (Aurora User Guide, data-api-timeouts). The error is {@code
   * StatementTimeoutException}, HTTP 400. AWS does not say what becomes of a transaction whose
   * statement ran on past the limit; the fake keeps it busy ("still running a query") until the
   * statement ends, then usable, or ended if the statement failed.
   */
  private JsonNode autocommitWithinLimit(
      DataSource ds,
      String sql,
      Map<String, JsonNode> parameters,
      boolean withMetadata,
      boolean continueAfterTimeout) {
    AtomicReference<Connection> running = new AtomicReference<>();
    Future<JsonNode> result =
        statements.submit(
            () -> {
              try (Connection c = ds.getConnection()) {
                utcSession(c);
                running.set(c);
                return run(c, sql, parameters, withMetadata);
              }
            });
    try {
      return withinLimit(result, running::get, continueAfterTimeout);
    } catch (SQLException e) {
      throw sqlError(e);
    }
  }

  private JsonNode inTransactionWithinLimit(
      Tx tx,
      String sql,
      Map<String, JsonNode> parameters,
      boolean withMetadata,
      boolean continueAfterTimeout)
      throws SQLException {
    Future<JsonNode> result =
        statements.submit(() -> run(tx.connection, sql, parameters, withMetadata));
    try {
      return withinLimit(result, () -> tx.connection, continueAfterTimeout);
    } catch (ApiError e) {
      if (e.type.equals("StatementTimeoutException")) {
        if (continueAfterTimeout) {
          continuing.put(tx.id, result);
        } else {
          endOnError(tx);
        }
      }
      throw e;
    }
  }

  private JsonNode withinLimit(
      Future<JsonNode> result, Supplier<Connection> connection, boolean continueAfterTimeout)
      throws SQLException {
    try {
      return result.get(statementLimit.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException pastTheLimit) {
      if (continueAfterTimeout) {
        continuedPastLimit.incrementAndGet();
      } else {
        cancel(result, connection.get());
      }
      throw new ApiError(400, "StatementTimeoutException", "Request timed out");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof SQLException sql) {
        throw sql;
      }
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ApiError(500, "InternalServerErrorException", "fake interrupted");
    }
  }

  /** Cancels the statement as PostgreSQL cancels a query, and waits until it has stopped. */
  private static void cancel(Future<JsonNode> result, Connection c) {
    for (int attempt = 0; attempt < 100 && !result.isDone(); attempt++) {
      try {
        if (c != null) {
          c.unwrap(PGConnection.class).cancelQuery();
        }
        result.get(100, TimeUnit.MILLISECONDS);
      } catch (TimeoutException | ExecutionException | SQLException notYet) {
        // cancelled statements end in an SQLException; a cancel sent before the query may be lost
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** A transaction whose statement runs on past the limit takes no other call until it ends. */
  private void refuseWhileContinuing(Tx tx) {
    Future<JsonNode> statement = continuing.get(tx.id);
    if (statement == null) {
      return;
    }
    if (!statement.isDone()) {
      throw new ApiError(400, "DatabaseErrorException", "Transaction is still running a query");
    }
    continuing.remove(tx.id);
    try {
      statement.get();
    } catch (ExecutionException | InterruptedException | RuntimeException failed) {
      endOnError(tx);
      throw new ApiError(
          404, "TransactionNotFoundException", "Transaction " + tx.id + " is not found");
    }
  }

  private static boolean continueAfterTimeout(JsonNode request) {
    return request.path("continueAfterTimeout").asBoolean(false);
  }

  /** Any SQL error ends a Data API transaction; later calls with its id are "not found". */
  private void endOnError(Tx tx) {
    transactions.remove(tx.id);
    drop(tx);
  }

  private JsonNode run(
      Connection c, String sql, Map<String, JsonNode> parameters, boolean withMetadata)
      throws SQLException {
    FakeSql parsed = FakeSql.parse(sql);
    if (parsed.multipleStatements()) {
      throw new ApiError(
          400, "DatabaseErrorException", "Multistatement transactions are not supported");
    }
    refuseAmbiguousText(sql);
    try (PreparedStatement ps = c.prepareStatement(parsed.jdbcSql())) {
      for (int i = 0; i < parsed.names().size(); i++) {
        String name = parsed.names().get(i);
        JsonNode p = parameters.get(name);
        if (p == null) {
          throw new ApiError(
              400, "DatabaseErrorException", "No value specified for parameter: " + name);
        }
        bind(ps, i + 1, name, p);
      }
      ObjectNode out = JSON.createObjectNode();
      if (ps.execute()) {
        try (ResultSet rs = ps.getResultSet()) {
          out.set("records", FakeRecords.records(rs, new ResultSizeLimits()));
          if (withMetadata) {
            out.set("columnMetadata", FakeRecords.columnMetadata(rs.getMetaData()));
          }
        }
        out.put("numberOfRecordsUpdated", 0);
      } else {
        out.put("numberOfRecordsUpdated", Math.max(0, ps.getUpdateCount()));
        out.putArray("generatedFields");
      }
      return out;
    }
  }

  /**
   * AWS does not document how the Data API reads {@code ;} and {@code :name} inside literals and
   * comments; the fake refuses such text instead of guessing either way (see {@link AmbiguousSql}).
   */
  private static void refuseAmbiguousText(String sql) {
    List<String> problems = AmbiguousSql.problems(sql);
    if (!problems.isEmpty()) {
      throw new ApiError(
          400,
          "BadRequestException",
          "the fake refuses text the Data API's reading of is undocumented: " + problems.get(0));
    }
  }

  private static Map<String, JsonNode> parameters(JsonNode list) {
    Map<String, JsonNode> byName = new HashMap<>();
    if (list.isMissingNode() || list.isNull()) {
      return byName;
    }
    if (!list.isArray()) {
      throw new ApiError(400, "BadRequestException", "parameters must be a list");
    }
    for (JsonNode p : list) {
      String name = p.path("name").asText(null);
      if (name == null || byName.put(name, p) != null) {
        throw new ApiError(
            400, "BadRequestException", "each parameter needs a name, given once: " + name);
      }
    }
    return byName;
  }

  /** Binds one parameter the way the Data API types it: by the field's member and its typeHint. */
  private static void bind(PreparedStatement ps, int index, String name, JsonNode parameter)
      throws SQLException {
    JsonNode value = parameter.path("value");
    if (!value.isObject() || value.size() != 1) {
      throw new ApiError(
          400, "BadRequestException", "parameter " + name + ": a Field has exactly one member set");
    }
    String member = value.fieldNames().next();
    JsonNode v = value.get(member);
    String hint = parameter.path("typeHint").asText(null);
    if (hint != null && !member.equals("stringValue")) {
      throw new ApiError(
          400,
          "BadRequestException",
          "parameter " + name + ": typeHint applies to stringValue only");
    }
    switch (member) {
      case "isNull" -> {
        if (!v.asBoolean()) {
          throw new ApiError(
              400, "BadRequestException", "parameter " + name + ": isNull must be true");
        }
        ps.setNull(index, Types.NULL);
      }
      case "booleanValue" ->
          ps.setBoolean(index, requireType(name, v, v.isBoolean()).booleanValue());
      case "longValue" ->
          ps.setLong(
              index,
              requireType(name, v, v.isIntegralNumber() && v.canConvertToLong()).longValue());
      case "doubleValue" -> ps.setDouble(index, requireType(name, v, v.isNumber()).doubleValue());
      case "stringValue" ->
          bindString(ps, index, name, requireType(name, v, v.isTextual()).textValue(), hint);
      case "blobValue" ->
          ps.setBytes(
              index, Base64.getDecoder().decode(requireType(name, v, v.isTextual()).textValue()));
      case "arrayValue" ->
          throw new ApiError(400, "BadRequestException", "Array parameters are not supported.");
      default ->
          throw new ApiError(
              400, "BadRequestException", "parameter " + name + ": unknown Field member " + member);
    }
  }

  private static JsonNode requireType(String name, JsonNode v, boolean ok) {
    if (!ok) {
      throw new ApiError(
          400, "BadRequestException", "parameter " + name + ": wrong JSON type " + v.getNodeType());
    }
    return v;
  }

  private static void bindString(
      PreparedStatement ps, int index, String name, String s, String hint) throws SQLException {
    try {
      if (hint == null) {
        ps.setString(index, s); // a varchar, as the Data API sends an untyped string
        return;
      }
      switch (hint) {
        case "TIMESTAMP" -> {
          if (!TIMESTAMP.matcher(s).matches()) {
            throw new ApiError(
                400,
                "DatabaseErrorException",
                "parameter "
                    + name
                    + ": TIMESTAMP must look like YYYY-MM-DD HH:MM:SS[.FFF], got "
                    + s);
          }
          ps.setObject(index, LocalDateTime.parse(s, TIMESTAMP_IN));
        }
        case "DATE" -> ps.setObject(index, LocalDate.parse(s));
        case "TIME" -> ps.setObject(index, LocalTime.parse(s));
        case "UUID" -> ps.setObject(index, UUID.fromString(s));
        case "DECIMAL" -> ps.setBigDecimal(index, new BigDecimal(s));
        case "JSON" -> {
          PGobject json = new PGobject();
          json.setType("json");
          json.setValue(s);
          ps.setObject(index, json);
        }
        default ->
            throw new ApiError(
                400, "BadRequestException", "parameter " + name + ": unknown typeHint " + hint);
      }
    } catch (DateTimeParseException | IllegalArgumentException e) {
      throw new ApiError(
          400,
          "DatabaseErrorException",
          "parameter " + name + " is not a valid " + hint + ": " + e.getMessage());
    }
  }

  private static ApiError sqlError(SQLException e) {
    if (e.getSQLState() != null && e.getSQLState().startsWith("28")) {
      // invalid_authorization_specification / invalid_password: the secret's login was refused.
      return new ApiError(400, "BadRequestException", e.getMessage());
    }
    return new ApiError(
        400, "DatabaseErrorException", e.getMessage() + "; SQLState: " + e.getSQLState());
  }

  private DataSource dataSource(JsonNode request) {
    String name = request.path("database").asText(null);
    Map<String, DataSource> ofSecret =
        databases.getOrDefault(request.path("secretArn").asText(""), Map.of());
    if (name == null && ofSecret.size() == 1) {
      return ofSecret.values().iterator().next();
    }
    DataSource ds = name == null ? null : ofSecret.get(name);
    if (ds == null) {
      throw new ApiError(404, "DatabaseNotFoundException", "database " + name + " does not exist");
    }
    return ds;
  }

  private Tx liveTransaction(String id) {
    Tx tx = id == null ? null : transactions.get(id);
    if (tx == null) {
      throw new ApiError(
          404, "TransactionNotFoundException", "Transaction " + id + " is not found");
    }
    return tx;
  }

  private static void drop(Tx tx) {
    try {
      if (!tx.connection.getAutoCommit()) {
        tx.connection.rollback();
      }
    } catch (SQLException ignored) {
      // The connection is broken; closing it below hands it back to be discarded.
    } finally {
      closeQuietly(tx.connection);
    }
  }

  private static void closeQuietly(Connection c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (SQLException ignored) {
      // nothing more to do for a connection we are giving up
    }
  }

  /**
   * Aurora sessions run in UTC; the driver tracks the server's TimeZone, so this rarely costs a
   * trip.
   */
  private static void utcSession(Connection c) throws SQLException {
    if ("UTC".equals(c.unwrap(PGConnection.class).getParameterStatus("TimeZone"))) {
      return;
    }
    try (Statement s = c.createStatement()) {
      s.execute("set time zone 'UTC'");
    }
  }

  private static String newTransactionId() {
    byte[] bytes = new byte[96];
    RANDOM.nextBytes(bytes);
    return Base64.getEncoder().encodeToString(bytes);
  }

  private static void sleep(Duration d) {
    try {
      TimeUnit.MILLISECONDS.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static final class Tx {
    final String id;
    final Connection connection;
    final ReentrantLock lock = new ReentrantLock();

    Tx(String id, Connection connection) {
      this.id = id;
      this.connection = connection;
    }
  }
}
