package buildqueue.api;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link HttpApi} answers: a status, headers (names in their usual capitalisation; look them
 * up with {@link #header}), and the body bytes. An adapter writes them out unchanged.
 */
public record ApiResponse(int status, Map<String, String> headers, byte[] body) {

  public ApiResponse {
    headers =
        Collections.unmodifiableMap(new LinkedHashMap<>(headers == null ? Map.of() : headers));
    body = body == null ? new byte[0] : body;
  }

  /** A header's value, matched case-insensitively. */
  public Optional<String> header(String name) {
    return headers.entrySet().stream()
        .filter(e -> e.getKey().equalsIgnoreCase(name))
        .map(Map.Entry::getValue)
        .findFirst();
  }

  /** The body as UTF-8 text. */
  public String bodyText() {
    return new String(body, StandardCharsets.UTF_8);
  }

  /** A copy with one more header (replacing one of the same name). */
  public ApiResponse withHeader(String name, String value) {
    Map<String, String> copy = new LinkedHashMap<>();
    headers.forEach(
        (k, v) -> {
          if (!k.equalsIgnoreCase(name)) {
            copy.put(k, v);
          }
        });
    copy.put(name, value);
    return new ApiResponse(status, copy, body);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ApiResponse r
        && status == r.status
        && headers.equals(r.headers)
        && java.util.Arrays.equals(body, r.body);
  }

  @Override
  public int hashCode() {
    return Objects.hash(status, headers, java.util.Arrays.hashCode(body));
  }

  @Override
  public String toString() {
    return status + " " + headers + " (" + body.length + " bytes)";
  }
}
