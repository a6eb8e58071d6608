package buildqueue.api;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.core.JobQueries.CurrentJob;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobQueries.SlotView;
import buildqueue.core.JobQueries.Waiting;
import buildqueue.core.JobQueries.WorkerView;
import buildqueue.core.JobStatus;
import buildqueue.core.JobTransitions;
import buildqueue.core.PayloadTooLargeException;
import buildqueue.core.QueueFullException;
import buildqueue.core.RowLimits;
import buildqueue.db.Json;
import buildqueue.kinds.KindRegistry;
import buildqueue.kinds.PayloadSchema;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The HTTP API (docs/architecture.md §8; its contract is openapi.json) as plain code: a request in, a response out, no server. The API
 * Gateway Lambda and the local server both call {@link #handle}, so they share every route, every
 * validation and every error.
 *
 * <p>Guarantees: bad input is answered with a 4xx {@code application/problem+json} whose {@code
 * detail} says what to change, and writes nothing; authentication is the caller's job (a null
 * {@link Caller} is an unauthenticated request); another user's job is "not found", never
 * "forbidden", so ids leak nothing; an unexpected failure is a 500 whose body carries an incident
 * id that is also logged, and never the exception's text. Thread-safe and stateless.
 *
 * <p>Routes: {@code GET /} (the dashboard page, no token needed), {@code GET /health}, {@code GET
 * /openapi.json} (this API's contract, no token needed), {@code POST /jobs}, {@code GET /jobs}, {@code GET /jobs/{id}}, {@code GET /jobs/{id}/events}, {@code POST
 * /jobs/{id}/cancel}, {@code GET /lanes} (admin), {@code PUT /users/{userId}} (admin).
 */
public final class HttpApi {
  private static final System.Logger LOG = System.getLogger(HttpApi.class.getName());

  /** The largest request body accepted (256 KiB); longer ones get 413. */
  public static final int MAX_BODY_BYTES = 256 * 1024;
  /** The longest idempotency key or user id, in characters. */
  public static final int MAX_KEY_CHARS = 200;
  public static final int DEFAULT_LIST_LIMIT = 50;
  public static final int MAX_LIST_LIMIT = 200;
  public static final int DEFAULT_QUEUED_LIMIT = 20;

  static final String JSON = "application/json";
  static final String PROBLEM_JSON = "application/problem+json";
  private static final String SUBMIT_EXAMPLE =
      "{\"kind\": \"demo\", \"payload\": {\"steps\": 5}, \"idempotencyKey\": \"build-1234\"}";
  private static final String USER_EXAMPLE = "{\"dedicatedWorker\": true, \"maxQueuedJobs\": 5000}";
  /** The largest per-user quota an admin may set. */
  public static final int MAX_QUOTA = 1_000_000;
  /** What a 429 asks a client to wait before it tries again, in seconds. */
  public static final int QUEUE_FULL_RETRY_AFTER_SECONDS = 60;
  private static final Pattern JOB_ID = Pattern.compile("[0-9]{1,18}");
  private static final Pattern WHOLE_NUMBER = Pattern.compile("[0-9]{1,9}");

  private final BuildQueue queue;
  private final JobQueries queries;
  private final KindRegistry kinds;
  private final List<Route> routes;

  /**
   * @param queue the writes: enqueue, cancel, dedicated workers
   * @param queries the reads: jobs, events, lanes, the health check
   * @param kinds the job kinds {@code POST /jobs} accepts, and their payload validation
   */
  public HttpApi(BuildQueue queue, JobQueries queries, KindRegistry kinds) {
    this.queue = Objects.requireNonNull(queue, "queue");
    this.queries = Objects.requireNonNull(queries, "queries");
    this.kinds = Objects.requireNonNull(kinds, "kinds");
    this.routes = List.of(
        new Route("GET", "/", Access.ANYONE, null, c -> Dashboard.page()),
        new Route("GET", "/health", Access.ANYONE, Set.of(), c -> health()),
        new Route("GET", "/openapi.json", Access.ANYONE, Set.of(), c -> OpenApiDocument.response()),
        new Route("POST", "/jobs", Access.USER, Set.of(), this::submit),
        new Route("GET", "/jobs", Access.USER, Set.of("status", "limit", "userId", "before"), this::listJobs),
        new Route("GET", "/jobs/{id}", Access.USER, Set.of(), this::getJob),
        new Route("GET", "/jobs/{id}/events", Access.USER, Set.of("after"), this::events),
        new Route("GET", "/jobs/{id}/log", Access.USER, Set.of("since"), this::log),
        new Route("POST", "/jobs/{id}/cancel", Access.USER, Set.of(), this::cancel),
        new Route("GET", "/lanes", Access.ADMIN, Set.of("queuedLimit", "after"), this::lanes),
        new Route("PUT", "/users/{userId}", Access.ADMIN, Set.of(), this::putUser));
  }

  /** Answers one request. Never throws: every failure becomes a problem response. */
  public ApiResponse handle(ApiRequest request) {
    try {
      return route(request);
    } catch (ApiProblem p) {
      return problem(p, request.path());
    } catch (RuntimeException e) {
      String incident = UUID.randomUUID().toString();
      LOG.log(Level.ERROR, "incident " + incident + ": " + request + " failed", e);
      return problem(new ApiProblem(ApiProblem.Type.INTERNAL,
          "The server failed to answer this request (incident " + incident + "). Retry it; if it fails again, "
              + "report the incident id to the operator."), request.path());
    }
  }

  /** Each route as "METHOD /template", in the order they are matched: what openapi.json must describe. */
  public List<String> routes() {
    return routes.stream().map(r -> r.method + " " + r.template).toList();
  }

  private ApiResponse route(ApiRequest request) {
    List<String> segments = segments(request.path());
    Map<String, String> params = new LinkedHashMap<>();
    Route matched = null;
    Set<String> allowed = new LinkedHashSet<>();
    for (Route r : routes) {
      Map<String, String> p = r.match(segments);
      if (p != null) {
        allowed.add(r.method);
        if (r.method.equals(request.method())) {
          matched = r;
          params = p;
        }
      }
    }
    if (matched == null && allowed.isEmpty()) {
      throw ApiProblem.notFound("There is no route " + JsonBodies.printable(request.path()) + ". The routes are: "
          + routes.stream().map(r -> r.method + " " + r.template).collect(Collectors.joining(", ")) + ".");
    }
    if (matched == null) {
      String allow = String.join(", ", allowed);
      throw new ApiProblem(ApiProblem.Type.METHOD_NOT_ALLOWED,
          JsonBodies.printable(request.method()) + " is not allowed on " + JsonBodies.printable(request.path())
              + "; use " + allow + ".",
          Map.of("Allow", allow));
    }
    Caller caller = authorize(matched.access, request.caller());
    Map<String, List<String>> query = query(request, matched);
    if (request.body().length > MAX_BODY_BYTES) {
      throw new ApiProblem(ApiProblem.Type.PAYLOAD_TOO_LARGE,
          "The request body is " + request.body().length + " bytes; the limit is " + MAX_BODY_BYTES
              + " bytes (256 KiB). Keep large inputs elsewhere (e.g. object storage) and pass a reference in the "
              + "payload.");
    }
    return matched.handler.handle(new Call(request, caller, params, query));
  }

  private static Caller authorize(Access access, Caller caller) {
    if (access == Access.ANYONE) {
      return caller;
    }
    if (caller == null) {
      throw new ApiProblem(ApiProblem.Type.UNAUTHORIZED,
          "This route needs a token: send the header Authorization: Bearer <JWT>.",
          Map.of("WWW-Authenticate", "Bearer realm=\"buildqueue\""));
    }
    if (!isUsableId(caller.userId())) {
      throw new ApiProblem(ApiProblem.Type.UNAUTHORIZED,
          "The token's sub claim is not a usable user id (1 to " + MAX_KEY_CHARS
              + " characters, no control characters); get a token for a proper user.",
          Map.of("WWW-Authenticate", "Bearer realm=\"buildqueue\", error=\"invalid_token\""));
    }
    if (access == Access.ADMIN && !caller.admin()) {
      throw new ApiProblem(ApiProblem.Type.FORBIDDEN,
          "This route is for admins: it needs a token with the scope " + Caller.ADMIN_SCOPE + ".");
    }
    return caller;
  }

  private static Map<String, List<String>> query(ApiRequest request, Route route) {
    Map<String, List<String>> query;
    try {
      query = request.queryParameters();
    } catch (IllegalArgumentException e) {
      throw ApiProblem.invalid("The query string is malformed: " + e.getMessage() + ".");
    }
    if (route.queryParams == null) {
      return query;
    }
    for (Map.Entry<String, List<String>> p : query.entrySet()) {
      if (!route.queryParams.contains(p.getKey())) {
        throw ApiProblem.invalid("Unknown query parameter \"" + JsonBodies.printable(p.getKey()) + "\" for "
            + route.method + " " + route.template + (route.queryParams.isEmpty()
                ? "; it takes none."
                : "; it takes: " + String.join(", ", new java.util.TreeSet<>(route.queryParams)) + "."));
      }
      if (p.getValue().size() > 1 && !p.getKey().equals("status")) {
        throw ApiProblem.invalid("Query parameter \"" + p.getKey() + "\" is given " + p.getValue().size()
            + " times; give it once.");
      }
    }
    return query;
  }

  // ---- routes

  private ApiResponse health() {
    try {
      queries.ping();
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "health check: the database did not answer: " + e.getClass().getName());
      throw new ApiProblem(ApiProblem.Type.UNAVAILABLE,
          "The database did not answer \"select 1\"; check that it is running and reachable.",
          Map.of("Retry-After", "5"));
    }
    ObjectNode up = ApiJson.object();
    up.put("status", "up");
    return json(200, up);
  }

  private ApiResponse submit(Call call) {
    ObjectNode body = JsonBodies.object(call.request, SUBMIT_EXAMPLE);
    JsonBodies.onlyFields(body, new LinkedHashSet<>(List.of("kind", "payload", "idempotencyKey", "supersedeKey")),
        "POST /jobs");
    JsonNode kindNode = body.get("kind");
    if (kindNode == null || kindNode.isNull()) {
      throw ApiProblem.invalid("The field \"kind\" is missing; send one of the known kinds ("
          + knownKinds() + "), e.g. " + SUBMIT_EXAMPLE + ".");
    }
    if (!kindNode.isTextual()) {
      throw ApiProblem.invalid("The field \"kind\" must be a string naming a job kind (" + knownKinds()
          + "), not " + JsonBodies.kindOf(kindNode) + ".");
    }
    String kind = kindNode.textValue();
    PayloadSchema schema = kinds.payloadSchema(kind).orElseThrow(() -> ApiProblem.invalid(
        "Unknown kind \"" + JsonBodies.printable(kind) + "\"; the known kinds are: " + knownKinds() + "."));

    JsonNode payload = body.get("payload");
    if (payload == null || payload.isNull()) {
      payload = ApiJson.object();
    } else if (!payload.isObject()) {
      throw ApiProblem.invalid("The field \"payload\" must be a JSON object (or left out), not "
          + JsonBodies.kindOf(payload) + ".");
    }
    JsonBodies.requireStorable(payload, "payload");
    try {
      schema.check(payload.deepCopy());
    } catch (IllegalArgumentException e) {
      throw ApiProblem.invalid("The payload is not valid for kind \"" + kind + "\": "
          + (e.getMessage() == null ? "the kind's validation refused it without saying why" : e.getMessage()));
    }

    String key = key(body.get("idempotencyKey"), "idempotencyKey");
    String supersedeKey = key(body.get("supersedeKey"), "supersedeKey");
    String payloadText;
    try {
      payloadText = ApiJson.MAPPER.writeValueAsString(payload);
    } catch (JsonProcessingException e) {
      throw ApiProblem.invalid("The payload could not be stored as JSON: " + e.getOriginalMessage());
    }

    JobTransitions.Enqueued enqueued;
    try {
      enqueued = queue.enqueue(call.caller.userId(), kind, new Json(payloadText), key, supersedeKey);
    } catch (PayloadTooLargeException e) {
      throw payloadTooLarge(e.storedBytes());
    } catch (QueueFullException e) {
      throw queueFull(e);
    }
    JobView job = queries.job(enqueued.jobId()).orElseThrow(() -> new IllegalStateException(
        "job " + enqueued.jobId() + " was enqueued but cannot be read back"));
    if (!enqueued.created() && !sameRequest(job, kind, payload)) {
      throw new ApiProblem(ApiProblem.Type.CONFLICT,
          "The idempotency key \"" + JsonBodies.printable(key) + "\" was already used for job " + job.id()
              + " with a different kind or payload; use a new key for a new job, or resend job " + job.id()
              + "'s exact request.",
          Map.of("Location", "/jobs/" + job.id()));
    }
    ObjectNode out = jobJson(job, call.caller);
    if (supersedeKey != null && enqueued.created()) {
      ObjectNode superseded = out.putObject("superseded");
      superseded.put("cancelledCount", enqueued.supersededCount());
      ArrayNode cancelled = superseded.putArray("cancelled");
      enqueued.superseded().forEach(cancelled::add);
      ArrayNode requested = superseded.putArray("cancelRequested");
      enqueued.cancelRequested().forEach(requested::add);
    }
    return json(enqueued.created() ? 201 : 200, out).withHeader("Location", "/jobs/" + job.id());
  }

  /** The enqueue statement counted the user's queued jobs against their quota and wrote nothing. */
  private static ApiProblem queueFull(QueueFullException e) {
    return new ApiProblem(ApiProblem.Type.TOO_MANY_QUEUED_JOBS,
        "You have " + (e.moreThanCounted() ? "more than " + e.limit() + " queued jobs"
            : e.queued() + (e.queued() == 1 ? " queued job" : " queued jobs"))
            + "; the limit is " + e.limit() + " per user. Nothing was written. Submit again when some"
            + " of them have started, cancel some (POST /jobs/{id}/cancel), or submit with a supersedeKey to"
            + " replace queued jobs with the same key.",
        Map.of("Retry-After", Integer.toString(QUEUE_FULL_RETRY_AFTER_SECONDS)));
  }

  /** The enqueue statement measured the payload as stored and wrote nothing. */
  private static ApiProblem payloadTooLarge(long storedBytes) {
    return new ApiProblem(ApiProblem.Type.PAYLOAD_TOO_LARGE,
        "The payload takes " + storedBytes + " bytes as stored (JSON as the database writes it: a space after each"
            + " ':' and ',', numbers in full); the limit is " + RowLimits.MAX_PAYLOAD_BYTES + " bytes, so that a"
            + " worker can read its job back in one row of the RDS Data API (64 KB). Nothing was written. Keep large"
            + " inputs in object storage (e.g. S3) and pass a reference in the payload.");
  }

  private static String key(JsonNode node, String field) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isTextual()) {
      throw ApiProblem.invalid("The field \"" + field + "\" must be a string of 1 to " + MAX_KEY_CHARS
          + " characters, not " + JsonBodies.kindOf(node) + ".");
    }
    String key = node.textValue();
    if (!isUsableId(key)) {
      throw ApiProblem.invalid("The field \"" + field + "\" must be 1 to " + MAX_KEY_CHARS
          + " characters without control characters; it has " + key.codePointCount(0, key.length())
          + " characters" + (hasControl(key) ? ", some of them control characters" : "") + ".");
    }
    return key;
  }

  private static boolean sameRequest(JobView job, String kind, JsonNode payload) {
    return job.kind().equals(kind) && ApiJson.parse(job.payload()).equals(NUMBERS_BY_VALUE, payload);
  }

  /** Compares numbers by value, as {@code jsonb} does: 1.0, 1.00 and 1E+0 are one number. */
  private static final java.util.Comparator<JsonNode> NUMBERS_BY_VALUE = (a, b) -> {
    if (a.isNumber() && b.isNumber()) {
      return a.decimalValue().compareTo(b.decimalValue());
    }
    return a.equals(b) ? 0 : 1;
  };

  private ApiResponse listJobs(Call call) {
    String userId = call.caller.userId();
    Optional<String> asked = single(call.query, "userId");
    if (asked.isPresent()) {
      if (!call.caller.admin() && !asked.get().equals(userId)) {
        throw new ApiProblem(ApiProblem.Type.FORBIDDEN,
            "Only admins may list another user's jobs; leave out userId to list yours.");
      }
      userId = asked.get();
    } else if (call.caller.admin()) {
      userId = null;
    }
    Set<JobStatus> statuses = statuses(call.query.getOrDefault("status", List.of()));
    int limit = wholeNumber(call.query, "limit", DEFAULT_LIST_LIMIT, 1, MAX_LIST_LIMIT);
    Long before = single(call.query, "before").map(raw -> cursorId(raw, "before", "a job id")).orElse(null);
    JobQueries.JobPage page = queries.jobs(userId, statuses, limit, before);
    Map<Long, Waiting> waiting = queries.waiting(page.jobs());
    ObjectNode out = ApiJson.object();
    ArrayNode list = out.putArray("jobs");
    page.jobs().forEach(j ->
        list.add(ApiJson.job(j, Optional.ofNullable(waiting.get(j.id())).map(w -> redact(w, call.caller)))));
    out.put("next", page.nextBefore().map(next -> nextJobsPage(statuses, asked, limit, next)).orElse(null));
    return json(200, out);
  }

  /** A page cursor: the id a previous page's {@code next} link names. */
  private static long cursorId(String raw, String name, String what) {
    if (!JOB_ID.matcher(raw).matches()) {
      throw ApiProblem.invalid("Query parameter \"" + name + "\" must be " + what + " (a whole number), as in the "
          + "\"next\" link of the previous page, not \"" + JsonBodies.printable(raw) + "\".");
    }
    return Long.parseLong(raw);
  }

  /** The same list, from the job after the last one on this page. */
  private static String nextJobsPage(Set<JobStatus> statuses, Optional<String> userId, int limit, long before) {
    StringBuilder next = new StringBuilder("/jobs?");
    if (!statuses.isEmpty()) {
      next.append("status=").append(statuses.stream().map(JobStatus::sql).sorted().collect(Collectors.joining(",")))
          .append('&');
    }
    userId.ifPresent(u -> next.append("userId=").append(QueryString.encode(u)).append('&'));
    return next.append("limit=").append(limit).append("&before=").append(before).toString();
  }

  private ApiResponse getJob(Call call) {
    return json(200, jobJson(visibleJob(call), call.caller));
  }

  private ApiResponse events(Call call) {
    JobView job = visibleJob(call);
    ObjectNode out = ApiJson.object();
    out.put("jobId", job.id());
    ArrayNode list = out.putArray("events");
    Long after = single(call.query, "after").map(raw -> cursorId(raw, "after", "an event id")).orElse(null);
    JobQueries.EventPage page = queries.events(job.id(), after);
    page.events().forEach(e -> list.add(ApiJson.event(e)));
    out.put("next", page.nextAfter().map(next -> "/jobs/" + job.id() + "/events?after=" + next).orElse(null));
    return json(200, out);
  }

  /** The header that says how many bytes of output the job has written in all. */
  public static final String LOG_TOTAL_BYTES = "Buildqueue-Log-Total-Bytes";
  /** The header that says the job's status, so a follower knows when its log is complete. */
  public static final String JOB_STATUS = "Buildqueue-Job-Status";
  /** The header that says how many bytes before the tail are not kept here. */
  public static final String LOG_SKIPPED_BYTES = "Buildqueue-Log-Skipped-Bytes";

  /**
   * The job's output as the queue keeps it, as text: its last part. With {@code since} (a byte
   * count from an earlier answer's {@value #LOG_TOTAL_BYTES}), only what came after it, so a
   * client can follow a running job; a {@code since} beyond the total means the job started a new
   * attempt, whose output starts over.
   */
  private ApiResponse log(Call call) {
    long id = jobId(call);
    JobQueries.JobLogView log = queries.log(id)
        .filter(l -> call.caller.admin() || l.userId().equals(call.caller.userId()))
        .orElseThrow(() -> jobNotFound(id));
    long since = byteOffset(call.query, "since");
    byte[] tail = log.tail().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    long tailStart = log.totalBytes() - tail.length;
    int from;
    long skipped = 0;
    if (since > log.totalBytes() || since <= tailStart) {
      from = 0;
      skipped = since > log.totalBytes() ? tailStart : tailStart - since;
    } else {
      from = (int) (since - tailStart);
      while (from < tail.length && (tail[from] & 0xC0) == 0x80) {
        from++; // never start inside a character
      }
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", "text/plain; charset=utf-8");
    headers.put("Cache-Control", "no-store");
    headers.put("X-Content-Type-Options", "nosniff");
    headers.put(LOG_TOTAL_BYTES, Long.toString(log.totalBytes()));
    headers.put(JOB_STATUS, log.status().sql());
    if (skipped > 0) {
      headers.put(LOG_SKIPPED_BYTES, Long.toString(skipped));
    }
    return new ApiResponse(200, headers, Arrays.copyOfRange(tail, from, tail.length));
  }

  private static long byteOffset(Map<String, List<String>> query, String name) {
    Optional<String> raw = single(query, name);
    if (raw.isEmpty()) {
      return 0;
    }
    if (!raw.get().matches("[0-9]{1,18}")) {
      throw ApiProblem.invalid("Query parameter \"" + name + "\" must be a whole number of bytes, as the header "
          + LOG_TOTAL_BYTES + " of an earlier answer gave it, not \"" + JsonBodies.printable(raw.get()) + "\".");
    }
    return Long.parseLong(raw.get());
  }

  private ApiResponse cancel(Call call) {
    long id = jobId(call);
    JobTransitions.Cancelled result = queue.cancel(id, call.caller.admin() ? null : call.caller.userId());
    if (result instanceof JobTransitions.Cancelled.NotFound) {
      throw jobNotFound(id);
    }
    JobView job = queries.job(id).orElseThrow(() -> jobNotFound(id));
    if (result instanceof JobTransitions.Cancelled.Unchanged u && u.status().finished()) {
      throw new ApiProblem(ApiProblem.Type.CONFLICT,
          "Job " + id + " has already " + (u.status() == JobStatus.CANCELLED ? "been cancelled" : u.status().sql())
              + (job.finishedAt() == null ? "" : " (at " + ApiJson.time(job.finishedAt()) + ")")
              + "; there is nothing to cancel. Submit a new job to run it again.");
    }
    return json(200, jobJson(job, call.caller));
  }

  private ApiResponse lanes(Call call) {
    int limit = wholeNumber(call.query, "queuedLimit", DEFAULT_QUEUED_LIMIT, 0, MAX_LIST_LIMIT);
    String after = single(call.query, "after").map(HttpApi::laneCursor).orElse(null);
    JobQueries.LanePage page = queries.lanes(after, limit);
    ObjectNode out = ApiJson.object();
    ArrayNode list = out.putArray("lanes");
    page.lanes().forEach(l -> list.add(ApiJson.lane(l)));
    out.put("next", page.nextAfter()
        .map(next -> "/lanes?queuedLimit=" + limit + "&after=" + QueryString.encode(next)).orElse(null));
    return json(200, out);
  }

  /** A lanes page cursor: a lane name, as a previous page's {@code next} link names it. */
  private static String laneCursor(String raw) {
    String user = raw.startsWith("user:") ? raw.substring("user:".length()) : raw;
    if (!raw.equals("shared") && !(raw.startsWith("user:") && isUsableId(user))) {
      throw ApiProblem.invalid("Query parameter \"after\" must be a lane (\"shared\" or \"user:\" and a user id), "
          + "as in the \"next\" link of the previous page, not \"" + JsonBodies.printable(raw) + "\".");
    }
    return raw;
  }

  private ApiResponse putUser(Call call) {
    String userId = call.params.get("userId");
    if (!isUsableId(userId)) {
      throw ApiProblem.invalid("The user id in the path must be 1 to " + MAX_KEY_CHARS
          + " characters without control characters.");
    }
    ObjectNode body = JsonBodies.object(call.request, USER_EXAMPLE);
    JsonBodies.onlyFields(body, new LinkedHashSet<>(List.of("dedicatedWorker", "maxQueuedJobs")), "PUT /users/{userId}");
    if (!body.has("dedicatedWorker") && !body.has("maxQueuedJobs")) {
      throw ApiProblem.invalid("Send \"dedicatedWorker\", \"maxQueuedJobs\" or both, e.g. " + USER_EXAMPLE + ".");
    }
    JsonNode dedicated = body.get("dedicatedWorker");
    if (dedicated != null && !dedicated.isBoolean()) {
      throw ApiProblem.invalid("The field \"dedicatedWorker\" must be true or false, not " + JsonBodies.kindOf(dedicated)
          + "; send e.g. " + USER_EXAMPLE + ".");
    }
    Optional<java.util.OptionalInt> quota = Optional.empty();
    if (body.has("maxQueuedJobs")) {
      JsonNode max = body.get("maxQueuedJobs");
      if (max.isNull()) {
        quota = Optional.of(java.util.OptionalInt.empty());
      } else if (max.canConvertToInt() && max.isIntegralNumber() && max.intValue() >= 1 && max.intValue() <= MAX_QUOTA) {
        quota = Optional.of(java.util.OptionalInt.of(max.intValue()));
      } else {
        throw ApiProblem.invalid("The field \"maxQueuedJobs\" must be a whole number from 1 to " + MAX_QUOTA
            + " (the user's own limit on queued jobs), or null for the queue's default ("
            + queue.config().maxQueuedJobs() + "), not " + JsonBodies.printable(max.toString()) + ".");
      }
    }
    JobTransitions.LaneChange change = queue.updateUser(userId,
        new JobTransitions.UserChange(Optional.ofNullable(dedicated).map(JsonNode::booleanValue), quota));
    ObjectNode out = ApiJson.object();
    out.put("userId", change.userId());
    out.put("dedicatedWorker", change.dedicatedWorker());
    out.put("lane", change.lane());
    out.put("maxQueuedJobs", change.maxQueuedJobs());
    out.put("maxQueuedJobsIsDefault", !change.ownMaxQueuedJobs());
    out.put("movedCount", change.movedCount());
    ArrayNode moved = out.putArray("movedJobs");
    change.movedJobs().forEach(moved::add);
    return json(200, out);
  }

  // ---- helpers

  private JobView visibleJob(Call call) {
    long id = jobId(call);
    return queries.job(id)
        .filter(j -> call.caller.admin() || j.userId().equals(call.caller.userId()))
        .orElseThrow(() -> jobNotFound(id));
  }

  private ObjectNode jobJson(JobView job, Caller caller) {
    return ApiJson.job(job, queries.waiting(job).map(w -> redact(w, caller)));
  }

  /**
   * Who else is using the queue is an admin's business: a user sees which slot holds their lane,
   * its worker and the job it runs, but another user's id only as null ("another user").
   */
  private static Waiting redact(Waiting w, Caller caller) {
    if (caller.admin()) {
      return w;
    }
    List<SlotView> slots = w.slots().stream()
        .map(s -> new SlotView(s.slot(), s.worker().map(worker -> new WorkerView(worker.id(), worker.lane(),
            worker.slot(), worker.status(), worker.taskId(), worker.leaseLeftSeconds(), worker.launchedAt(),
            worker.startedAt(), worker.job().map(j -> j.userId().equals(caller.userId()) ? j
                : new CurrentJob(j.id(), null, j.kind(), j.status(), j.progress(), j.payloadSteps()))))))
        .toList();
    return new Waiting(w.lane(), w.capacity(), w.jobsAhead(), slots, w.notBefore(), w.turns());
  }

  private static long jobId(Call call) {
    String raw = call.params.get("id");
    if (!JOB_ID.matcher(raw).matches()) {
      throw ApiProblem.notFound("There is no job \"" + JsonBodies.printable(raw)
          + "\": job ids are whole numbers, as returned by POST /jobs.");
    }
    return Long.parseLong(raw);
  }

  private static ApiProblem jobNotFound(long id) {
    return ApiProblem.notFound("There is no job " + id + " of yours: it does not exist, was deleted after its "
        + "retention period, or belongs to another user. List yours with GET /jobs.");
  }

  private String knownKinds() {
    return String.join(", ", kinds.kinds());
  }

  private static Set<JobStatus> statuses(List<String> values) {
    Set<JobStatus> statuses = EnumSet.noneOf(JobStatus.class);
    for (String value : values) {
      for (String name : value.split(",", -1)) {
        String trimmed = name.trim();
        if (trimmed.isEmpty()) {
          continue;
        }
        JobStatus status = Arrays.stream(JobStatus.values())
            .filter(s -> s.sql().equals(trimmed))
            .findFirst()
            .orElseThrow(() -> ApiProblem.invalid("Unknown status \"" + JsonBodies.printable(trimmed)
                + "\"; use one or more (comma-separated) of: " + Arrays.stream(JobStatus.values())
                    .map(JobStatus::sql).collect(Collectors.joining(", ")) + "."));
        statuses.add(status);
      }
    }
    return statuses;
  }

  /** A parameter's value; an empty one ({@code ?limit=}, as forms send it) counts as absent. */
  private static Optional<String> single(Map<String, List<String>> query, String name) {
    List<String> values = query.get(name);
    return values == null || values.isEmpty() || values.get(0).isEmpty() ? Optional.empty() : Optional.of(values.get(0));
  }

  private static int wholeNumber(Map<String, List<String>> query, String name, int fallback, int min, int max) {
    Optional<String> raw = single(query, name);
    if (raw.isEmpty()) {
      return fallback;
    }
    if (!WHOLE_NUMBER.matcher(raw.get()).matches()
        || Integer.parseInt(raw.get()) < min || Integer.parseInt(raw.get()) > max) {
      throw ApiProblem.invalid("Query parameter \"" + name + "\" must be a whole number from " + min + " to " + max
          + ", not \"" + JsonBodies.printable(raw.get()) + "\" (default " + fallback + ").");
    }
    return Integer.parseInt(raw.get());
  }

  static boolean isUsableId(String id) {
    if (id == null || id.isEmpty() || id.codePointCount(0, id.length()) > MAX_KEY_CHARS || hasControl(id)) {
      return false;
    }
    try {
      JsonBodies.requireStorableText(id, "id");
      return true;
    } catch (ApiProblem p) {
      return false;
    }
  }

  private static boolean hasControl(String s) {
    return s.codePoints().anyMatch(Character::isISOControl);
  }

  /**
   * The path's segments, percent-decoded: {@code /jobs/42} → [jobs, 42], {@code /} → []. An empty
   * segment ({@code //}, a trailing slash) is kept, so such paths match no route.
   */
  private static List<String> segments(String path) {
    if (!path.startsWith("/")) {
      throw ApiProblem.notFound("The path must start with /.");
    }
    if (path.equals("/")) {
      return List.of();
    }
    List<String> segments = new ArrayList<>();
    for (String raw : path.substring(1).split("/", -1)) {
      try {
        segments.add(QueryString.decodeSegment(raw));
      } catch (IllegalArgumentException e) {
        throw ApiProblem.invalid("The path is malformed: " + e.getMessage() + ".");
      }
    }
    return segments;
  }

  static ApiResponse json(int status, JsonNode body) {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", JSON);
    headers.put("Cache-Control", "no-store");
    headers.put("X-Content-Type-Options", "nosniff");
    return new ApiResponse(status, headers, ApiJson.bytes(body));
  }

  static ApiResponse problem(ApiProblem p, String instance) {
    ObjectNode body = ApiJson.object();
    body.put("type", p.type().uri());
    body.put("title", p.type().title());
    body.put("status", p.type().status());
    body.put("detail", p.detail());
    body.put("instance", instance);
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", PROBLEM_JSON);
    headers.put("Cache-Control", "no-store");
    headers.put("X-Content-Type-Options", "nosniff");
    headers.putAll(p.headers());
    return new ApiResponse(p.type().status(), headers, ApiJson.bytes(body));
  }

  private enum Access {
    ANYONE,
    USER,
    ADMIN
  }

  /** What a route handler gets: the request, its authorized caller, path and query parameters. */
  private record Call(
      ApiRequest request, Caller caller, Map<String, String> params, Map<String, List<String>> query) {}

  @FunctionalInterface
  private interface Handler {
    ApiResponse handle(Call call);
  }

  /**
   * @param queryParams the query parameters the route takes; null takes any (the static page)
   */
  private record Route(String method, String template, Access access, Set<String> queryParams, Handler handler) {
    /** The path parameters when {@code segments} fit this route's template, else null. */
    Map<String, String> match(List<String> segments) {
      List<String> parts = template.equals("/") ? List.of() : List.of(template.substring(1).split("/"));
      if (parts.size() != segments.size()) {
        return null;
      }
      Map<String, String> params = new LinkedHashMap<>();
      for (int i = 0; i < parts.size(); i++) {
        String part = parts.get(i);
        if (part.startsWith("{") && part.endsWith("}")) {
          if (segments.get(i).isEmpty()) {
            return null;
          }
          params.put(part.substring(1, part.length() - 1), segments.get(i));
        } else if (!part.equals(segments.get(i))) {
          return null;
        }
      }
      return params;
    }
  }
}
