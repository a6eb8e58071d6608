package buildqueue.api;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link HttpApi} answers: a status, headers (names in their usual capitalisation; look them
 * up with {@link #header}), and the body bytes. An adapter writes them out unchanged. A body too
 * large to hold (a local artifact's download) is a file instead ({@code bodyFile}, with {@code
 * body} empty), which the adapter streams.
 */
public record ApiResponse(int status, Map<String, String> headers, byte[] body, Path bodyFile) {

  public ApiResponse {
    headers =
        Collections.unmodifiableMap(new LinkedHashMap<>(headers == null ? Map.of() : headers));
    body = body == null ? new byte[0] : body;
  }

  public ApiResponse(int status, Map<String, String> headers, byte[] body) {
    this(status, headers, body, null);
  }

  /** A body the adapter streams from {@code file}. */
  static ApiResponse ofFile(int status, Map<String, String> headers, Path file) {
    return new ApiResponse(status, headers, new byte[0], file);
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
    return new ApiResponse(status, copy, body, bodyFile);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ApiResponse r
        && status == r.status
        && headers.equals(r.headers)
        && java.util.Arrays.equals(body, r.body)
        && Objects.equals(bodyFile, r.bodyFile);
  }

  @Override
  public int hashCode() {
    return Objects.hash(status, headers, java.util.Arrays.hashCode(body), bodyFile);
  }

  @Override
  public String toString() {
    return status
        + " "
        + headers
        + (bodyFile == null ? " (" + body.length + " bytes)" : " (file " + bodyFile + ")");
  }
}
