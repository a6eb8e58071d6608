package buildqueue.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * A webhook request over HTTP/1.1, written on a socket this class connects itself, so that the
 * address it checks is the address it connects to: the host is resolved once, every address is
 * checked, and the socket is opened to the checked address (a DNS answer that changes between a
 * check and a connect, "DNS rebinding", cannot slip a private address in). Unless {@code
 * allowPrivateTargets}, an address that is loopback, private (10/8, 172.16/12, 192.168/16,
 * 100.64/10), link-local (169.254/16 with the cloud metadata address, fe80::/10), unique-local IPv6
 * (fc00::/7, with AWS's fd00:ec2::254), unspecified or multicast is refused before any byte is
 * sent. TLS checks the certificate against the URL's host name. A redirect is an answer like any
 * other non-2xx: never followed. The whole request, connect to last byte read, is bounded by {@code
 * timeout}, and at most {@link #MAX_READ_BYTES} of the answer are read.
 */
public final class WebhookHttp implements WebhookTransport {
  /** How much of an answer is read: the status line, headers and the start of the body. */
  public static final int MAX_READ_BYTES = 8 * 1024;

  /** The default bound on one request, connect to answer. */
  public static final Duration TIMEOUT = Duration.ofSeconds(10);

  private static final int ERROR_CHARS = 300;

  /** Resolves a host name to its addresses; a test's stand-in plays a DNS answer. */
  @FunctionalInterface
  public interface Resolver {
    InetAddress[] resolve(String host) throws UnknownHostException;
  }

  private final boolean allowPrivateTargets;
  private final Duration timeout;
  private final Resolver resolver;

  public WebhookHttp(boolean allowPrivateTargets) {
    this(allowPrivateTargets, TIMEOUT, InetAddress::getAllByName);
  }

  public WebhookHttp(boolean allowPrivateTargets, Duration timeout, Resolver resolver) {
    this.allowPrivateTargets = allowPrivateTargets;
    this.timeout = timeout;
    this.resolver = resolver;
  }

  @Override
  public Answer post(URI url, Map<String, String> headers, byte[] body) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase();
    if (!scheme.equals("http") && !scheme.equals("https")) {
      return Answer.failed(0, "refused: only http and https URLs are delivered to");
    }
    String host = url.getHost();
    if (host == null || host.isEmpty()) {
      return Answer.failed(0, "refused: the URL has no host");
    }
    String bareHost = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    int port = url.getPort() != -1 ? url.getPort() : scheme.equals("https") ? 443 : 80;
    InetAddress target;
    try {
      Optional<InetAddress> allowed = choose(resolver.resolve(bareHost));
      if (allowed.isEmpty()) {
        return Answer.failed(
            0,
            "refused: "
                + host
                + " is a private, loopback or link-local address (or resolves only to such); the"
                + " operator's setting to allow private webhook targets is off");
      }
      target = allowed.get();
    } catch (UnknownHostException e) {
      return Answer.failed(0, "the host " + host + " could not be resolved");
    }
    try (Socket plain = new Socket()) {
      plain.connect(new InetSocketAddress(target, port), remainingMillis(deadline));
      Socket socket = scheme.equals("https") ? tls(plain, bareHost, port) : plain;
      socket.setSoTimeout(remainingMillis(deadline));
      OutputStream out = socket.getOutputStream();
      out.write(head(url, host, port, scheme, headers, body.length));
      out.write(body);
      out.flush();
      return read(socket, deadline);
    } catch (SocketTimeoutException e) {
      return Answer.failed(0, "no answer within " + timeout.toMillis() + " ms");
    } catch (IOException e) {
      return Answer.failed(0, "could not deliver: " + cut(String.valueOf(e.getMessage())));
    }
  }

  /** The first address that may be connected to, if any. */
  private Optional<InetAddress> choose(InetAddress[] addresses) {
    for (InetAddress a : addresses) {
      if (allowPrivateTargets || !isPrivate(a)) {
        return Optional.of(a);
      }
    }
    return Optional.empty();
  }

  /**
   * Whether {@code a} is an address a webhook must not reach unless the operator allows it:
   * loopback, unspecified, link-local (with 169.254.169.254), private IPv4 (with the shared
   * 100.64/10), unique-local IPv6 (fc00::/7), site-local IPv6, multicast.
   */
  public static boolean isPrivate(InetAddress a) {
    if (a.isLoopbackAddress()
        || a.isAnyLocalAddress()
        || a.isLinkLocalAddress()
        || a.isSiteLocalAddress()
        || a.isMulticastAddress()) {
      return true;
    }
    byte[] b = a.getAddress();
    if (a instanceof Inet4Address) {
      int first = b[0] & 0xff;
      int second = b[1] & 0xff;
      return first == 0 || (first == 100 && second >= 64 && second < 128);
    }
    if (a instanceof Inet6Address) {
      return (b[0] & 0xfe) == 0xfc;
    }
    return false;
  }

  private static Socket tls(Socket plain, String host, int port) throws IOException {
    try {
      SSLSocket ssl =
          (SSLSocket)
              SSLContext.getDefault().getSocketFactory().createSocket(plain, host, port, true);
      SSLParameters p = ssl.getSSLParameters();
      p.setEndpointIdentificationAlgorithm("HTTPS");
      if (!host.contains(":") && !host.matches("[0-9.]+")) {
        p.setServerNames(List.of(new SNIHostName(host)));
      }
      ssl.setSSLParameters(p);
      ssl.startHandshake();
      return ssl;
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IOException("no TLS in this JVM", e);
    }
  }

  private static byte[] head(
      URI url, String host, int port, String scheme, Map<String, String> headers, int length) {
    String path = url.getRawPath() == null || url.getRawPath().isEmpty() ? "/" : url.getRawPath();
    if (url.getRawQuery() != null) {
      path += "?" + url.getRawQuery();
    }
    boolean defaultPort = port == (scheme.equals("https") ? 443 : 80);
    StringBuilder b = new StringBuilder();
    b.append("POST ").append(path).append(" HTTP/1.1\r\n");
    b.append("Host: ").append(defaultPort ? host : host + ":" + port).append("\r\n");
    b.append("Content-Length: ").append(length).append("\r\n");
    b.append("Connection: close\r\n");
    headers.forEach((k, v) -> b.append(k).append(": ").append(v).append("\r\n"));
    b.append("\r\n");
    return b.toString().getBytes(StandardCharsets.ISO_8859_1);
  }

  /** The status line and as much of the rest as fits {@link #MAX_READ_BYTES}, by the deadline. */
  private static Answer read(Socket socket, long deadline) throws IOException {
    InputStream in = socket.getInputStream();
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    byte[] buf = new byte[1024];
    while (got.size() < MAX_READ_BYTES) {
      socket.setSoTimeout(remainingMillis(deadline));
      int n = in.read(buf, 0, Math.min(buf.length, MAX_READ_BYTES - got.size()));
      if (n < 0) {
        break;
      }
      got.write(buf, 0, n);
      if (statusOf(got.toString(StandardCharsets.ISO_8859_1)) > 0 && headersDone(got)) {
        break;
      }
    }
    String text = got.toString(StandardCharsets.ISO_8859_1);
    int status = statusOf(text);
    if (status <= 0) {
      return Answer.failed(0, "the endpoint did not answer HTTP");
    }
    if (status >= 200 && status < 300) {
      return Answer.acknowledged(status);
    }
    if (status >= 300 && status < 400) {
      return Answer.failed(status, "answered " + status + ": redirects are not followed");
    }
    int bodyAt = text.indexOf("\r\n\r\n");
    String snippet = bodyAt < 0 ? "" : text.substring(bodyAt + 4);
    return Answer.failed(
        status, "answered " + status + (snippet.isBlank() ? "" : ": " + cut(snippet.strip())));
  }

  private static boolean headersDone(ByteArrayOutputStream got) {
    return got.toString(StandardCharsets.ISO_8859_1).contains("\r\n\r\n");
  }

  private static int statusOf(String text) {
    int eol = text.indexOf("\r\n");
    if (eol < 0 || !text.startsWith("HTTP/1.")) {
      return -1;
    }
    String[] parts = text.substring(0, eol).split(" ", 3);
    try {
      return parts.length >= 2 ? Integer.parseInt(parts[1]) : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static int remainingMillis(long deadline) throws SocketTimeoutException {
    long left = (deadline - System.nanoTime()) / 1_000_000;
    if (left <= 0) {
      throw new SocketTimeoutException("deadline passed");
    }
    return (int) Math.min(Integer.MAX_VALUE, left);
  }

  private static String cut(String s) {
    String flat = s.replaceAll("\\p{Cntrl}", " ");
    return flat.length() <= ERROR_CHARS ? flat : flat.substring(0, ERROR_CHARS) + "…";
  }
}
