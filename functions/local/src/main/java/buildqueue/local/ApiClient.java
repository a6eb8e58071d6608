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
import java.util.function.Consumer;

/**
 * The CLI's side of the HTTP API: one bearer token, JSON in and out.
 *
 * <p>On AWS, API Gateway answers HTTP 500 {@code {"message":"Internal Server Error"}} when Lambda
 * refuses to invoke the API's function, as it does ({@code SnapStartNotReadyException}) for a
 * SnapStart version not invoked for 14 days while it re-initialises it. The function never ran, so
 * an idempotent request (GET, PUT, a submission with an idempotency key) is sent again, at most
 * {@link NotReadyRetry#attempts} times with doubling waits; any other request is not, and the
 * command says why ({@link NotReadyException}). The API's own errors are problem+json, never this
 * shape, so they are never retried.
 */
final class ApiClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** How often, and after what waits, a request refused before the function ran is sent again. */
  record NotReadyRetry(int attempts, Duration firstWait, Duration maxWait) {
    static final NotReadyRetry STANDARD =
        new NotReadyRetry(6, Duration.ofSeconds(1), Duration.ofSeconds(8));

    Duration waitBefore(int attempt) {
      Duration wait = firstWait.multipliedBy(1L << Math.min(attempt - 2, 20));
      return wait.compareTo(maxWait) > 0 ? maxWait : wait;
    }
  }

  /** Waits between attempts (a test's records them instead). */
  interface Pause {
    void pause(Duration d) throws InterruptedException;
  }

  /** The API's function could not be invoked, and the request was not (or no longer) retried. */
  static final class NotReadyException extends UnreachableException {
    NotReadyException(String message) {
      super(message);
    }
  }

  /**
   * API Gateway's answer when Lambda refused the invocation (HTTP API: 500 with exactly this body;
   * Lambda developer guide, services-apigateway-errors and snapstart-troubleshooting).
   */
  static boolean notInvoked(Reply reply) {
    JsonNode json = reply.json();
    return reply.status() == 500
        && json.isObject()
        && json.size() == 1
        && "internal server error".equalsIgnoreCase(json.path("message").asText());
  }

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
  static class UnreachableException extends RuntimeException {
    UnreachableException(String message) {
      super(message);
    }
  }

  private final URI base;
  private final String token;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private final NotReadyRetry retry;
  private final Pause pause;
  private final Consumer<String> notices;

  ApiClient(URI base, String token) {
    this(base, token, NotReadyRetry.STANDARD, d -> Thread.sleep(d.toMillis()), notice -> {});
  }

  /**
   * @param notices told each time a request is sent again, and why
   */
  ApiClient(URI base, String token, NotReadyRetry retry, Pause pause, Consumer<String> notices) {
    this.base = base;
    this.token = token;
    this.retry = retry;
    this.pause = pause;
    this.notices = notices;
  }

  URI base() {
    return base;
  }

  Reply get(String path) {
    return send("GET", path, null, true);
  }

  /** A POST the API does not make idempotent: never sent twice. */
  Reply post(String path, JsonNode body) {
    return send("POST", path, body, false);
  }

  /** A POST the API makes idempotent (a submission with an {@code idempotencyKey}). */
  Reply postIdempotent(String path, JsonNode body) {
    return send("POST", path, body, true);
  }

  Reply put(String path, JsonNode body) {
    return send("PUT", path, body, true);
  }

  /** A PATCH that sets a value: sending it twice changes nothing more. */
  Reply patch(String path, JsonNode body) {
    return send("PATCH", path, body, true);
  }

  private Reply send(String method, String path, JsonNode body, boolean idempotent) {
    Duration waited = Duration.ZERO;
    for (int attempt = 1; ; attempt++) {
      Reply reply = sendOnce(method, path, body);
      if (!notInvoked(reply)) {
        return reply;
      }
      String what =
          method
              + " /"
              + path
              + " answered HTTP 500 {\"message\":\"Internal Server Error\"}: API Gateway"
              + " could not invoke the API's function (on AWS, a SnapStart version not invoked for 14 days answers"
              + " this while Lambda re-initialises it)";
      if (!idempotent) {
        throw new NotReadyException(
            what
                + ". Not sent again: the API does not make this request idempotent."
                + " The function did not run, so nothing changed; run the command again in a minute"
                + (method.equals("POST") && path.equals("jobs")
                    ? " (with --key, a submission is retried by itself)"
                    : ""));
      }
      if (attempt >= retry.attempts()) {
        throw new NotReadyException(
            what
                + "; still so after "
                + attempt
                + " attempts over "
                + waited.toSeconds()
                + " s. Try again in a minute.");
      }
      Duration wait = retry.waitBefore(attempt + 1);
      notices.accept(what + "; sending it again in " + wait.toMillis() + " ms");
      try {
        pause.pause(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new UnreachableException("interrupted while waiting for " + base);
      }
      waited = waited.plus(wait);
    }
  }

  /**
   * Downloads a file the API serves (an artifact) into {@code out}: the body itself, or, for a
   * redirect (a presigned S3 URL), the body at its {@code Location}, fetched without our token.
   * Answers the API's reply when it refused (nothing is written), else null.
   */
  Reply download(String path, java.nio.file.Path out) {
    HttpRequest request =
        HttpRequest.newBuilder(base.resolve(path))
            .timeout(Duration.ofMinutes(30))
            .header("Authorization", "Bearer " + token)
            .GET()
            .build();
    try {
      HttpResponse<java.io.InputStream> response =
          http.send(request, HttpResponse.BodyHandlers.ofInputStream());
      if (response.statusCode() == 302) {
        response.body().close();
        String location =
            response
                .headers()
                .firstValue("Location")
                .orElseThrow(() -> new IOException("a redirect without a Location"));
        response =
            http.send(
                HttpRequest.newBuilder(base.resolve(location))
                    .timeout(Duration.ofMinutes(30))
                    .GET()
                    .build(),
                HttpResponse.BodyHandlers.ofInputStream());
      }
      if (response.statusCode() != 200) {
        String text;
        try (java.io.InputStream in = response.body()) {
          text = new String(in.readNBytes(64 * 1024), java.nio.charset.StandardCharsets.UTF_8);
        }
        JsonNode json;
        try {
          json = JSON.readTree(text);
        } catch (IOException e) {
          json = MissingNode.getInstance();
        }
        return new Reply(response.statusCode(), json, text, response.headers());
      }
      try (java.io.InputStream in = response.body()) {
        java.nio.file.Files.copy(in, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
      return null;
    } catch (ConnectException e) {
      throw new UnreachableException("no buildqueue server answers at " + base);
    } catch (IOException e) {
      throw new UnreachableException("the download from " + base + " failed: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException("interrupted while waiting for " + base);
    }
  }

  private Reply sendOnce(String method, String path, JsonNode body) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve(path))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + token)
            .header("Accept", "application/json");
    if (body == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body.toString()));
    }
    HttpResponse<String> response;
    try {
      response = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException e) {
      throw new UnreachableException(
          "no buildqueue server answers at "
              + base
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
