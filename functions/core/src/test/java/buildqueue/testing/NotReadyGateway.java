package buildqueue.testing;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A local server that plays API Gateway's HTTP API in front of a function Lambda would not invoke
 * (a SnapStart version idle for 14 days answers {@code SnapStartNotReadyException} once, then is
 * ready): the next {@link #notReadyFor n} requests get API Gateway's answer for that, HTTP 500
 * {@value #NOT_INVOKED}; the others the function's answer ({@link #answer}). Records every request.
 */
public final class NotReadyGateway implements AutoCloseable {
  /** What API Gateway's HTTP API sends when the Lambda invoke is refused. */
  public static final String NOT_INVOKED = "{\"message\":\"Internal Server Error\"}";

  /** A request as it arrived: its method, its URI (path and query) and its Authorization header. */
  public record Request(String method, URI uri, String authorization) {}

  private final HttpServer server;
  private final AtomicInteger notReadyLeft = new AtomicInteger();
  private final List<Request> requests = Collections.synchronizedList(new ArrayList<>());
  private volatile int okStatus;
  private volatile String okBody;

  private NotReadyGateway(int okStatus, String okBody) {
    answer(okStatus, okBody);
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext(
        "/",
        exchange -> {
          try (exchange) {
            exchange.getRequestBody().readAllBytes();
            requests.add(
                new Request(
                    exchange.getRequestMethod(),
                    exchange.getRequestURI(),
                    exchange.getRequestHeaders().getFirst("Authorization")));
            boolean notReady = notReadyLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
            byte[] body = (notReady ? NOT_INVOKED : this.okBody).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(notReady ? 500 : this.okStatus, body.length);
            exchange.getResponseBody().write(body);
          }
        });
    server.start();
  }

  /**
   * A gateway on a free loopback port whose function answers {@code okStatus} with the JSON {@code
   * okBody}.
   */
  public static NotReadyGateway start(int okStatus, String okBody) {
    return new NotReadyGateway(okStatus, okBody);
  }

  /** The next {@code requests} requests are answered as an invoke Lambda refused. */
  public void notReadyFor(int requests) {
    notReadyLeft.set(requests);
  }

  /** What the function answers from now on. */
  public void answer(int status, String jsonBody) {
    this.okStatus = status;
    this.okBody = jsonBody;
  }

  /** The requests so far, in the order they came. */
  public List<Request> requests() {
    synchronized (requests) {
      return List.copyOf(requests);
    }
  }

  /** {@code http://127.0.0.1:<port>/}. */
  public URI base() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
