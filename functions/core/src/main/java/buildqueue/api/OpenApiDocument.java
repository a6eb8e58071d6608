package buildqueue.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The API's contract, {@code openapi.json} (OpenAPI 3.1), served as it ships in the jar at {@code
 * GET /openapi.json}. It is written by hand, not generated from the code; the route tests hold
 * every response they receive to it, so it cannot drift from what {@link HttpApi} answers.
 *
 * <p>Served without a token: it describes routes, not data, and a client generator needs it before
 * anyone has a token.
 */
final class OpenApiDocument {
  static final String RESOURCE = "/buildqueue/api/openapi.json";

  private OpenApiDocument() {}

  private static final class Holder {
    static final byte[] JSON = load();
  }

  static ApiResponse response() {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", ApiJson.MEDIA_TYPE);
    headers.put("Cache-Control", "no-cache");
    headers.put("X-Content-Type-Options", "nosniff");
    return new ApiResponse(200, headers, Holder.JSON.clone());
  }

  private static byte[] load() {
    try (InputStream in = OpenApiDocument.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the classpath");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + RESOURCE, e);
    }
  }
}
