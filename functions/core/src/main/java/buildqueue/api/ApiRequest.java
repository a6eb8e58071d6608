package buildqueue.api;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * One HTTP request as {@link HttpApi} sees it, whatever carried it (API Gateway, the local server,
 * a test).
 *
 * @param method the HTTP method, e.g. {@code GET} (compared case-sensitively, as HTTP does)
 * @param path the raw path, still percent-encoded, without the query: {@code /jobs/42}
 * @param query the raw query string without {@code ?}, still percent-encoded; empty or null when
 *     there is none. {@link HttpApi} parses it, so every adapter rejects a malformed one the same
 *     way; {@link #queryParameters()} gives it decoded
 * @param headers request headers; names are matched case-insensitively. An adapter joins repeated
 *     headers with {@code ", "}
 * @param body the body bytes; empty when there is none. Adapters should stop reading after {@link
 *     HttpApi#MAX_BODY_BYTES} + 1 bytes: the API answers 413 to anything longer
 * @param caller the authenticated caller, or null when the request carried no valid token
 * @param tokenRefusal why the adapter refused the request's token (e.g. it has no {@code exp}), for
 *     the 401's detail; null when the token was accepted or there was none
 */
public record ApiRequest(
    String method,
    String path,
    String query,
    Map<String, String> headers,
    byte[] body,
    Caller caller,
    String tokenRefusal) {

  public ApiRequest {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(path, "path");
    query = query == null ? "" : query;
    headers = caseInsensitive(headers == null ? Map.of() : headers);
    body = body == null ? new byte[0] : body;
  }

  /** A request whose token, if any, was accepted. */
  public ApiRequest(
      String method,
      String path,
      String query,
      Map<String, String> headers,
      byte[] body,
      Caller caller) {
    this(method, path, query, headers, body, caller, null);
  }

  /**
   * A request from a request target such as {@code /jobs?status=queued}, as it appears on an HTTP
   * request line.
   */
  public static ApiRequest of(
      String method, String target, Map<String, String> headers, byte[] body, Caller caller) {
    int q = target.indexOf('?');
    String path = q < 0 ? target : target.substring(0, q);
    String query = q < 0 ? "" : target.substring(q + 1);
    return new ApiRequest(method, path, query, headers, body, caller);
  }

  /** A request with a UTF-8 JSON body and {@code Content-Type: application/json}. */
  public static ApiRequest json(String method, String target, String json, Caller caller) {
    return of(
        method,
        target,
        Map.of("Content-Type", "application/json"),
        json.getBytes(StandardCharsets.UTF_8),
        caller);
  }

  /** A request without a body. */
  public static ApiRequest of(String method, String target, Caller caller) {
    return of(method, target, Map.of(), new byte[0], caller);
  }

  /** A header's value, matched case-insensitively. */
  public Optional<String> header(String name) {
    return Optional.ofNullable(headers.get(name));
  }

  /**
   * The query decoded into parameters, in order; a repeated name keeps every value.
   *
   * @throws IllegalArgumentException when the query is not valid percent-encoded UTF-8
   */
  public Map<String, java.util.List<String>> queryParameters() {
    return QueryString.parse(query);
  }

  private static Map<String, String> caseInsensitive(Map<String, String> headers) {
    TreeMap<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    headers.forEach(
        (name, value) -> {
          if (name != null && value != null) {
            map.merge(name, value, (a, b) -> a + ", " + b);
          }
        });
    return Collections.unmodifiableMap(map);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ApiRequest r
        && method.equals(r.method)
        && path.equals(r.path)
        && query.equals(r.query)
        && headers.equals(r.headers)
        && java.util.Arrays.equals(body, r.body)
        && Objects.equals(caller, r.caller)
        && Objects.equals(tokenRefusal, r.tokenRefusal);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        method, path, query, headers, java.util.Arrays.hashCode(body), caller, tokenRefusal);
  }

  /** Leaves out header values and the body: they may carry tokens and payloads. */
  @Override
  public String toString() {
    return method
        + " "
        + path
        + (query.isEmpty() ? "" : "?" + query)
        + " ("
        + body.length
        + " bytes, caller "
        + (caller == null ? "none" : caller.userId() + (caller.admin() ? " [admin]" : ""))
        + ")";
  }
}
