package buildqueue.testing;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntUnaryOperator;

/**
 * A webhook endpoint for tests: an HTTP server on the loopback that records every request and
 * answers the status {@code answers} gives for the request's number (0 for the first).
 */
public final class WebhookReceiver implements AutoCloseable {
  /** One request as it arrived; header names lower-cased. */
  public record Received(int number, Map<String, String> headers, byte[] body, int answered) {
    public String header(String name) {
      return headers.get(name.toLowerCase());
    }

    public String bodyText() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  private final HttpServer server;
  private final List<Received> received = new ArrayList<>();
  private final AtomicInteger count = new AtomicInteger();

  public WebhookReceiver(IntUnaryOperator answers) {
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext(
        "/",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          Map<String, String> headers = new TreeMap<>();
          exchange.getRequestHeaders().forEach((k, v) -> headers.put(k.toLowerCase(), v.get(0)));
          int n = count.getAndIncrement();
          int status = answers.applyAsInt(n);
          synchronized (received) {
            received.add(new Received(n, headers, body, status));
          }
          if (status >= 300 && status < 400) {
            exchange.getResponseHeaders().add("Location", "http://127.0.0.1:1/elsewhere");
          }
          byte[] out = ("answer " + status).getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(status, out.length);
          exchange.getResponseBody().write(out);
          exchange.close();
        });
    server.start();
  }

  /** Answers 200 to every request. */
  public static WebhookReceiver acknowledging() {
    return new WebhookReceiver(n -> 200);
  }

  public int port() {
    return server.getAddress().getPort();
  }

  public String url(String path) {
    return "http://127.0.0.1:" + port() + path;
  }

  public List<Received> received() {
    synchronized (received) {
      return List.copyOf(received);
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
