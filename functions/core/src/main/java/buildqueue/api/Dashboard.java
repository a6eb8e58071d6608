package buildqueue.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The dashboard: one static HTML page with its CSS and script inline, and no data in it (it reads
 * everything through the API with the user's token), so it is served without a token. Its
 * Content-Security-Policy allows exactly its own inline script and style, by hash, and network
 * calls to this origin only: injected markup could neither run nor send the token elsewhere.
 */
final class Dashboard {
  static final String RESOURCE = "/buildqueue/api/dashboard.html";

  private Dashboard() {}

  private static final class Page {
    static final byte[] HTML = load();
    static final String CSP = contentSecurityPolicy(new String(HTML, StandardCharsets.UTF_8));
  }

  static ApiResponse page() {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", "text/html; charset=utf-8");
    headers.put("Cache-Control", "no-cache");
    headers.put("Content-Security-Policy", Page.CSP);
    headers.put("X-Content-Type-Options", "nosniff");
    headers.put("Referrer-Policy", "no-referrer");
    headers.put("X-Frame-Options", "DENY");
    return new ApiResponse(200, headers, Page.HTML.clone());
  }

  static String contentSecurityPolicy(String html) {
    return "default-src 'none'; script-src '"
        + hashOf(html, "script")
        + "'; style-src '"
        + hashOf(html, "style")
        + "'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  }

  /** The CSP source for the page's one inline {@code <tag>} element: its content's SHA-256. */
  static String hashOf(String html, String tag) {
    String open = "<" + tag + ">";
    String close = "</" + tag + ">";
    int start = html.indexOf(open);
    int end = html.indexOf(close, start + 1);
    if (start < 0 || end < 0 || start != html.lastIndexOf(open) || end != html.lastIndexOf(close)) {
      throw new IllegalStateException(
          RESOURCE + " must have exactly one plain " + open + " element");
    }
    String content = html.substring(start + open.length(), end);
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(content.getBytes(StandardCharsets.UTF_8));
      return "sha256-" + Base64.getEncoder().encodeToString(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JVM", e);
    }
  }

  private static byte[] load() {
    try (InputStream in = Dashboard.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the classpath");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + RESOURCE, e);
    }
  }
}
