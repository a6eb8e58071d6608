package buildqueue.local;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.HttpApi;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The API on {@code 127.0.0.1} through the JDK's built-in HTTP server: each exchange becomes an
 * {@link ApiRequest} with the caller from its bearer token ({@link LocalTokens}), and the {@link
 * ApiResponse} is written back unchanged. Routing, validation and errors are all the API's, so this
 * server and the API Gateway Lambda answer alike.
 */
final class LocalHttpServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(LocalHttpServer.class.getName());

  /**
   * How much of an over-long body is read and thrown away so that its sender gets the 413: past
   * this the connection is closed unread (and such a sender sees a reset). 32 MiB is more than any
   * client of a 256 KiB API sends by mistake, and costs a loopback reader a few milliseconds.
   */
  static final long MAX_DISCARDED_BYTES = 32L * 1024 * 1024;

  private final HttpServer server;
  private final ExecutorService threads;
  private final LocalTokens tokens;
  private final Function<ApiRequest, ApiResponse> api;

  private LocalHttpServer(
      HttpServer server,
      ExecutorService threads,
      LocalTokens tokens,
      Function<ApiRequest, ApiResponse> api) {
    this.server = server;
    this.threads = threads;
    this.tokens = tokens;
    this.api = api;
  }

  /** Listens on 127.0.0.1 only: the local server is for this machine's users. */
  static LocalHttpServer start(int port, LocalTokens tokens, Function<ApiRequest, ApiResponse> api)
      throws IOException {
    // The JDK's server writes an answer's headers and its body separately; without TCP_NODELAY the
    // body waits for the client's delayed ACK on a kept-alive connection (the dashboard's): 50
    // calls
    // of GET /jobs took 2.4 s, 0.36 s with it. Read once, when the JVM makes its first server.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 64);
    ExecutorService threads =
        Executors.newFixedThreadPool(
            8,
            r -> {
              Thread t = new Thread(r, "buildqueue-http");
              t.setDaemon(true);
              return t;
            });
    LocalHttpServer local = new LocalHttpServer(server, threads, tokens, api);
    server.createContext("/", local::exchange);
    server.setExecutor(threads);
    server.start();
    return local;
  }

  int port() {
    return server.getAddress().getPort();
  }

  private void exchange(HttpExchange exchange) throws IOException {
    try (exchange) {
      ApiResponse response = api.apply(request(exchange));
      write(exchange, response);
    } catch (IOException e) {
      LOG.log(Level.DEBUG, "client went away: " + e.getMessage());
    } catch (RuntimeException e) {
      LOG.log(
          Level.ERROR,
          "request "
              + exchange.getRequestMethod()
              + " "
              + exchange.getRequestURI().getRawPath()
              + " failed outside the API",
          e);
      throw e;
    }
  }

  private ApiRequest request(HttpExchange exchange) throws IOException {
    Map<String, String> headers = new LinkedHashMap<>();
    for (Map.Entry<String, List<String>> h : exchange.getRequestHeaders().entrySet()) {
      headers.put(h.getKey(), String.join(", ", h.getValue()));
    }
    LocalTokens.Check token = tokens.check(exchange.getRequestHeaders().getFirst("Authorization"));
    byte[] body;
    try (InputStream in = exchange.getRequestBody()) {
      // One byte past the limit is enough for the API to answer 413.
      body = in.readNBytes(HttpApi.MAX_BODY_BYTES + 1);
      if (body.length > HttpApi.MAX_BODY_BYTES) {
        discardOverLongBody(exchange, in);
      }
    }
    return new ApiRequest(
        exchange.getRequestMethod(),
        exchange.getRequestURI().getRawPath(),
        exchange.getRequestURI().getRawQuery(),
        headers,
        body,
        token.caller(),
        token.refusal());
  }

  /**
   * Reads what is left of a body over the limit, up to {@link #MAX_DISCARDED_BYTES}, and asks for
   * the connection to be closed after the 413. A client that writes its whole body before it reads
   * (Python's http.client, requests) would otherwise see its connection reset, not its 413: closing
   * a socket with unread data in it makes the kernel send RST, which discards the answer.
   */
  private static void discardOverLongBody(HttpExchange exchange, InputStream in)
      throws IOException {
    exchange.getResponseHeaders().set("Connection", "close");
    long left = MAX_DISCARDED_BYTES;
    byte[] buffer = new byte[64 * 1024];
    int n;
    while (left > 0 && (n = in.read(buffer, 0, (int) Math.min(buffer.length, left))) > 0) {
      left -= n;
    }
  }

  private static void write(HttpExchange exchange, ApiResponse response) throws IOException {
    Headers out = exchange.getResponseHeaders();
    response.headers().forEach(out::set);
    if (response.bodyFile() != null) {
      writeFile(exchange, response);
      return;
    }
    boolean noBody =
        response.body().length == 0
            || "HEAD".equals(exchange.getRequestMethod())
            || response.status() == 204
            || response.status() == 304;
    exchange.sendResponseHeaders(response.status(), noBody ? -1 : response.body().length);
    if (!noBody) {
      try (OutputStream os = exchange.getResponseBody()) {
        os.write(response.body());
      }
    }
  }

  /** A local artifact's download, streamed from its file (it may be larger than memory). */
  private static void writeFile(HttpExchange exchange, ApiResponse response) throws IOException {
    java.nio.file.Path file = response.bodyFile();
    long size = java.nio.file.Files.size(file);
    if ("HEAD".equals(exchange.getRequestMethod())) {
      exchange.getResponseHeaders().set("Content-Length", Long.toString(size));
      exchange.sendResponseHeaders(response.status(), -1);
      return;
    }
    exchange.sendResponseHeaders(response.status(), size == 0 ? -1 : size);
    if (size > 0) {
      try (OutputStream os = exchange.getResponseBody()) {
        java.nio.file.Files.copy(file, os);
      }
    }
  }

  /** Stops accepting connections, lets requests in flight finish for up to {@code grace}. */
  void close(Duration grace) {
    server.stop((int) Math.max(0, grace.toSeconds()));
    threads.shutdown();
    try {
      threads.awaitTermination(grace.toMillis() + 1000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(1));
  }
}
