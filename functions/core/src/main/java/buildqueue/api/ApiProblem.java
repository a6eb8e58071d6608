package buildqueue.api;

import buildqueue.BuildQueueException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A request the API refuses, as an RFC 9457 problem: thrown by validation and route code, turned
 * into an {@code application/problem+json} response by {@link HttpApi}. The {@code detail} says
 * what to change so that the request succeeds.
 */
public final class ApiProblem extends BuildQueueException {
  private final Type type;
  private final String detail;
  private final Map<String, String> headers;

  /** The problems the API knows, each with its status and a fixed title. */
  public enum Type {
    INVALID_REQUEST(400, "invalid-request", "The request is not valid"),
    UNAUTHORIZED(401, "unauthorized", "Authentication required"),
    FORBIDDEN(403, "forbidden", "Not allowed"),
    NOT_FOUND(404, "not-found", "Not found"),
    METHOD_NOT_ALLOWED(405, "method-not-allowed", "Method not allowed"),
    CONFLICT(409, "conflict", "Conflict with the job's current state"),
    PAYLOAD_TOO_LARGE(413, "payload-too-large", "Content too large"),
    UNSUPPORTED_MEDIA_TYPE(415, "unsupported-media-type", "Unsupported media type"),
    TOO_MANY_QUEUED_JOBS(429, "too-many-queued-jobs", "Too many queued jobs"),
    BUDGET_EXCEEDED(429, "budget-exceeded", "Compute budget used up"),
    INTERNAL(500, "internal-error", "Internal server error"),
    UNAVAILABLE(503, "unavailable", "Service unavailable");

    private final int status;
    private final String slug;
    private final String title;

    Type(int status, String slug, String title) {
      this.status = status;
      this.slug = slug;
      this.title = title;
    }

    public int status() {
      return status;
    }

    /** The problem's {@code type} URI. */
    public String uri() {
      return "urn:buildqueue:problem:" + slug;
    }

    public String title() {
      return title;
    }
  }

  public ApiProblem(Type type, String detail) {
    this(type, detail, Map.of());
  }

  public ApiProblem(Type type, String detail, Map<String, String> headers) {
    super(type.status() + " " + type.title() + ": " + detail, null);
    this.type = type;
    this.detail = detail;
    this.headers = Map.copyOf(headers);
  }

  public static ApiProblem invalid(String detail) {
    return new ApiProblem(Type.INVALID_REQUEST, detail);
  }

  public static ApiProblem notFound(String detail) {
    return new ApiProblem(Type.NOT_FOUND, detail);
  }

  public Type type() {
    return type;
  }

  public String detail() {
    return detail;
  }

  /** Headers the response must carry, such as {@code Allow} or {@code WWW-Authenticate}. */
  public Map<String, String> headers() {
    return new LinkedHashMap<>(headers);
  }

  // A refusal is routine: no stack trace to fill in.
  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
