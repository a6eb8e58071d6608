package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/** The CLI's side of the HTTP API: one bearer token, JSON in and out. */
final class ApiClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The server answered; {@code json} is its body parsed (missing when it was not JSON). */
  record Reply(int status, JsonNode json, String text, HttpHeaders headers) {
    boolean ok() {
      return status >= 200 && status < 300;
    }

    Optional<String> header(String name) {
      return headers.firstValue(name);
    }
  }

  /** No server answered at the address. */
  static final class UnreachableException extends RuntimeException {
    UnreachableException(String message) {
      super(message);
    }
  }

  private final URI base;
  private final String token;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  ApiClient(URI base, String token) {
    this.base = base;
    this.token = token;
  }

  URI base() {
    return base;
  }

  Reply get(String path) {
    return send("GET", path, null);
  }

  Reply post(String path, JsonNode body) {
    return send("POST", path, body);
  }

  Reply put(String path, JsonNode body) {
    return send("PUT", path, body);
  }

  private Reply send(String method, String path, JsonNode body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
        .timeout(Duration.ofSeconds(60))
        .header("Authorization", "Bearer " + token)
        .header("Accept", "application/json");
    if (body == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body.toString()));
    }
    HttpResponse<String> response;
    try {
      response = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException e) {
      throw new UnreachableException("no buildqueue server answers at " + base
          + "; start one with: java -jar buildqueue-local.jar serve (or pass --port)");
    } catch (IOException e) {
      throw new UnreachableException("the request to " + base + " failed: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException("interrupted while waiting for " + base);
    }
    JsonNode json;
    try {
      json = response.body().isEmpty() ? MissingNode.getInstance() : JSON.readTree(response.body());
    } catch (IOException e) {
      json = MissingNode.getInstance();
    }
    return new Reply(response.statusCode(), json, response.body(), response.headers());
  }
}
