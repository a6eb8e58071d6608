package buildqueue.api;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.NoArtifactStore;
import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.kinds.KindRegistry;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The HTTP API (docs/architecture.md §8; its contract is openapi.json) as plain code: a request in,
 * a response out, no server. The API Gateway Lambda and the local server both call {@link #handle},
 * so they share every route, every validation and every error.
 *
 * <p>Guarantees: bad input is answered with a 4xx {@code application/problem+json} whose {@code
 * detail} says what to change, and writes nothing; authentication is the caller's job (a null
 * {@link Caller} is an unauthenticated request); another user's job is "not found", never
 * "forbidden", so ids leak nothing; an unexpected failure is a 500 whose body carries an incident
 * id that is also logged, and never the exception's text. Thread-safe and stateless.
 *
 * <p>Routes, one class per resource: {@link SiteRoutes} ({@code GET /}, the dashboard page, {@code
 * GET /health}, {@code GET /openapi.json}, no token needed), {@link JobSubmission} ({@code POST
 * /jobs}), {@link JobRoutes} ({@code GET /jobs}, {@code GET /jobs/{id}}, {@code GET
 * /jobs/{id}/events}, {@code POST /jobs/{id}/cancel}), {@link OperatorRoutes} ({@code POST
 * /jobs/cancel}, admin; {@code POST /jobs/{id}/retry}), {@link JobLogRoute} ({@code GET
 * /jobs/{id}/log}), {@link LaneRoutes} ({@code GET /lanes}, admin), {@link UserRoutes} ({@code PUT
 * /users/{userId}}, admin), {@link WebhookRoutes} ({@code /webhooks/...}, admin), {@link
 * WorkerRoutes} ({@code POST /workers/{id}/reclaim}, admin, the local server's only: {@link
 * #withSpotReclaims}). This class is the router: it matches a route, authenticates the caller for
 * the route's {@link Route.Access}, refuses every write to a read-only caller, checks the query and
 * the body's size, and maps every failure to a problem response, so a handler does none of that. A
 * new resource is one class implementing {@link Route.Resource}, listed in the constructor.
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

  /** The largest per-user quota an admin may set. */
  public static final int MAX_QUOTA = 1_000_000;

  /** What a 429 asks a client to wait before it tries again, in seconds. */
  public static final int QUEUE_FULL_RETRY_AFTER_SECONDS = 60;

  /** The header that says how many bytes of output the job has written in all. */
  public static final String LOG_TOTAL_BYTES = "Buildqueue-Log-Total-Bytes";

  /** The header that says the job's status, so a follower knows when its log is complete. */
  public static final String JOB_STATUS = "Buildqueue-Job-Status";

  /** The header that says how many bytes before the tail are not kept here. */
  public static final String LOG_SKIPPED_BYTES = "Buildqueue-Log-Skipped-Bytes";

  private static final String PROBLEM_JSON = "application/problem+json";

  private static final String HEAD = "HEAD";

  private final List<Route> routes;

  /**
   * @param queue the writes: enqueue, cancel, dedicated workers
   * @param queries the reads: jobs, events, lanes, the health check
   * @param kinds the job kinds {@code POST /jobs} accepts, and their payload validation
   */
  public HttpApi(BuildQueue queue, JobQueries queries, KindRegistry kinds) {
    this(queue, queries, kinds, NoArtifactStore.NONE);
  }

  /**
   * As {@link #HttpApi(BuildQueue, JobQueries, KindRegistry)}, with the store the artifact routes
   * download from (docs/architecture.md, Artifacts): a directory locally, S3 on AWS. The
   * three-argument constructor uses {@link NoArtifactStore#NONE}: jobs list their artifacts, and a
   * download answers 404.
   */
  public HttpApi(
      BuildQueue queue, JobQueries queries, KindRegistry kinds, ArtifactStore artifacts) {
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(artifacts, "artifacts");
    Objects.requireNonNull(queries, "queries");
    Objects.requireNonNull(kinds, "kinds");
    JobAnswers answers = new JobAnswers(queries);
    List<Route.Resource> resources =
        List.of(
            new SiteRoutes(queries),
            new JobSubmission(queue, kinds, answers),
            new JobRoutes(queue, queries, answers),
            new OperatorRoutes(queue, kinds, answers),
            new JobLogRoute(queries),
            new ArtifactRoutes(queries, artifacts),
            new LaneRoutes(queue, queries),
            new UserRoutes(queue),
            new UsageRoutes(queries),
            new WebhookRoutes(queue));
    this.routes = resources.stream().flatMap(r -> r.routes().stream()).toList();
  }

  private HttpApi(List<Route> routes) {
    this.routes = List.copyOf(routes);
  }

  /**
   * This API and {@code POST /workers/{id}/reclaim} (admins), which simulates a Fargate Spot
   * reclaim ({@link WorkerRoutes}): the local server's alone. On AWS a reclaim is AWS's doing, so
   * the deployed API is built without it and answers that path as any unknown one (404).
   */
  public HttpApi withSpotReclaims(buildqueue.platform.SpotReclaims reclaims) {
    Objects.requireNonNull(reclaims, "reclaims");
    List<Route> all = new ArrayList<>(routes);
    all.addAll(new WorkerRoutes(reclaims).routes());
    return new HttpApi(all);
  }

  /** Answers one request. Never throws: every failure becomes a problem response. */
  public ApiResponse handle(ApiRequest request) {
    ApiResponse response = answer(request);
    return HEAD.equals(request.method())
        ? new ApiResponse(response.status(), response.headers(), new byte[0], null)
        : response;
  }

  private ApiResponse answer(ApiRequest request) {
    try {
      return route(request);
    } catch (ApiProblem p) {
      return problem(p, request.path());
    } catch (RuntimeException e) {
      String incident = UUID.randomUUID().toString();
      LOG.log(Level.ERROR, "incident " + incident + ": " + request + " failed", e);
      return problem(
          new ApiProblem(
              ApiProblem.Type.INTERNAL,
              "The server failed to answer this request (incident "
                  + incident
                  + "). Retry it; if it fails again, "
                  + "report the incident id to the operator."),
          request.path());
    }
  }

  /**
   * Each route as "METHOD /template", in the order they are matched: what openapi.json must
   * describe.
   */
  public List<String> routes() {
    return routes.stream().map(Route::operation).toList();
  }

  private ApiResponse route(ApiRequest request) {
    List<String> segments = segments(request.path());
    Map<String, String> params = new LinkedHashMap<>();
    Route matched = null;
    Set<String> allowed = new LinkedHashSet<>();
    // HEAD is GET without the body (RFC 9110, section 9.3.2): the same handler answers, and each
    // adapter
    // leaves the body out, so the headers are exactly GET's.
    String method = HEAD.equals(request.method()) ? "GET" : request.method();
    for (Route r : routes) {
      Map<String, String> p = r.match(segments);
      if (p != null) {
        allowed.add(r.method());
        if (r.method().equals("GET")) {
          allowed.add(HEAD);
        }
        if (r.method().equals(method)) {
          matched = r;
          params = p;
        }
      }
    }
    if (matched == null && allowed.isEmpty()) {
      throw ApiProblem.notFound(
          "There is no route "
              + JsonBodies.printable(request.path())
              + ". The routes are: "
              + routes.stream().map(Route::operation).collect(Collectors.joining(", "))
              + ".");
    }
    if (matched == null) {
      String allow = String.join(", ", allowed);
      throw new ApiProblem(
          ApiProblem.Type.METHOD_NOT_ALLOWED,
          JsonBodies.printable(request.method())
              + " is not allowed on "
              + JsonBodies.printable(request.path())
              + "; use "
              + allow
              + ".",
          Map.of("Allow", allow));
    }
    Caller caller = authorize(matched.access(), request.caller(), request.tokenRefusal());
    refuseWritesOfReadOnly(matched, caller);
    Map<String, List<String>> query = query(request, matched);
    if (request.body().length > MAX_BODY_BYTES) {
      throw new ApiProblem(
          ApiProblem.Type.PAYLOAD_TOO_LARGE,
          "The request body is "
              + request.body().length
              + " bytes; the limit is "
              + MAX_BODY_BYTES
              + " bytes (256 KiB). Keep large inputs elsewhere (e.g. object storage) and pass a reference in the "
              + "payload.");
    }
    return matched.handler().handle(new Call(request, caller, params, query));
  }

  private static Caller authorize(Route.Access access, Caller caller, String tokenRefusal) {
    if (access == Route.Access.ANYONE) {
      return caller;
    }
    if (caller == null && tokenRefusal != null) {
      throw new ApiProblem(
          ApiProblem.Type.UNAUTHORIZED,
          tokenRefusal,
          Map.of("WWW-Authenticate", "Bearer realm=\"buildqueue\", error=\"invalid_token\""));
    }
    if (caller == null) {
      throw new ApiProblem(
          ApiProblem.Type.UNAUTHORIZED,
          "This route needs a token: send the header Authorization: Bearer <JWT>.",
          Map.of("WWW-Authenticate", "Bearer realm=\"buildqueue\""));
    }
    if (!Ids.usable(caller.userId())) {
      throw new ApiProblem(
          ApiProblem.Type.UNAUTHORIZED,
          "The token's sub claim is not a usable user id (1 to "
              + MAX_KEY_CHARS
              + " characters, no control characters); get a token for a proper user.",
          Map.of("WWW-Authenticate", "Bearer realm=\"buildqueue\", error=\"invalid_token\""));
    }
    if (access == Route.Access.ADMIN && !caller.admin()) {
      throw new ApiProblem(
          ApiProblem.Type.FORBIDDEN,
          "This route is for admins: it needs a token with the scope " + Caller.ADMIN_SCOPE + ".");
    }
    return caller;
  }

  /**
   * The one place a read-only admin ({@link Caller#READ_ONLY_ADMIN_SCOPE}) is held to reading:
   * every route but GET and HEAD is refused before its handler runs, so a route added later is
   * covered without a word of its own.
   */
  private static void refuseWritesOfReadOnly(Route route, Caller caller) {
    if (caller != null && caller.readOnly() && !READS.contains(route.method())) {
      throw new ApiProblem(
          ApiProblem.Type.FORBIDDEN,
          "Your token is read-only (scope "
              + Caller.READ_ONLY_ADMIN_SCOPE
              + "): it may see everything an admin sees but change nothing, so "
              + route.operation()
              + " is refused and nothing was written. Ask an operator to do it, or use a token with"
              + " the scope "
              + Caller.ADMIN_SCOPE
              + ".");
    }
  }

  /** The methods that change nothing: all a read-only caller may use. */
  private static final Set<String> READS = Set.of("GET", "HEAD");

  private static Map<String, List<String>> query(ApiRequest request, Route route) {
    Map<String, List<String>> query;
    try {
      query = request.queryParameters();
    } catch (IllegalArgumentException e) {
      throw ApiProblem.invalid("The query string is malformed: " + e.getMessage() + ".");
    }
    if (route.queryParams() == null) {
      return query;
    }
    for (Map.Entry<String, List<String>> p : query.entrySet()) {
      if (!route.queryParams().contains(p.getKey())) {
        throw ApiProblem.invalid(
            "Unknown query parameter \""
                + JsonBodies.printable(p.getKey())
                + "\" for "
                + route.operation()
                + (route.queryParams().isEmpty()
                    ? "; it takes none."
                    : "; it takes: "
                        + String.join(", ", new TreeSet<>(route.queryParams()))
                        + "."));
      }
      if (p.getValue().size() > 1 && !p.getKey().equals("status")) {
        throw ApiProblem.invalid(
            "Query parameter \""
                + p.getKey()
                + "\" is given "
                + p.getValue().size()
                + " times; give it once.");
      }
    }
    return query;
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
}
