package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.auth0.jwt.algorithms.Algorithm;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP as clients other than ours speak it, against the real local server: a client that writes a
 * whole over-long body before it reads, tokens that never expire, HEAD.
 */
@ExtendWith(PostgresExtension.class)
class LocalHttpDetailsTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @TempDir java.nio.file.Path dataDir;
  private TestServer server;

  @BeforeEach
  void start(TestDatabase db) {
    server = TestServer.start(db, dataDir);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  @Test
  void a_20_mib_body_written_whole_before_reading_gets_its_413() throws Exception {
    String token = server.runtime.tokens().mint("bob", false, Duration.ofMinutes(5));
    byte[] body = new byte[20 * 1024 * 1024];
    Arrays.fill(body, (byte) ' ');
    body[0] = '{';
    body[body.length - 1] = '}';
    // As Python's http.client does: the request line, the headers and all the body, then read.
    for (int attempt = 0; attempt < 3; attempt++) {
      try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), server.runtime.port())) {
        socket.setSoTimeout(30_000);
        OutputStream out = socket.getOutputStream();
        out.write(
            ("POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Authorization: Bearer "
                    + token
                    + "\r\nContent-Length: "
                    + body.length
                    + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
        String answer = readAll(socket.getInputStream());
        assertThat(answer).as("attempt %d", attempt).startsWith("HTTP/1.1 413 ");
        assertThat(answer)
            .contains("application/problem+json")
            .contains("the limit is 262144 bytes")
            .containsIgnoringCase("Connection: close");
      }
    }
    assertThat(server.db.jdbc().query("select id from build_job")).isEmpty();
  }

  @Test
  void a_token_without_exp_or_with_too_long_a_life_gets_401_saying_why() throws Exception {
    Algorithm secret =
        Algorithm.HMAC256(
            Base64.getDecoder()
                .decode(Files.readString(dataDir.resolve(LocalTokens.SECRET_FILE)).strip()));
    Instant now = Instant.now();
    HttpResponse<String> r = get("/jobs", LocalTokensTest.signed(secret, now, null));
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(r.body()).contains("no exp claim");
    assertThat(r.headers().firstValue("WWW-Authenticate"))
        .get()
        .asString()
        .contains("invalid_token");

    String aYear = LocalTokensTest.signed(secret, now, now.plus(Duration.ofDays(365)));
    HttpResponse<String> year = get("/jobs", aYear);
    assertThat(year.statusCode()).isEqualTo(401);
    assertThat(year.body()).contains("longer than the 30 days");

    String expired = LocalTokensTest.signed(secret, now.minusSeconds(600), now.minusSeconds(300));
    assertThat(get("/jobs", expired).body()).contains("The token expired");
    assertThat(get("/jobs", server.runtime.tokens().mint("bob", false, Duration.ofDays(30))))
        .extracting(HttpResponse::statusCode)
        .isEqualTo(200);
  }

  @Test
  void head_answers_with_gets_status_and_headers_and_no_body() throws Exception {
    String token = server.runtime.tokens().mint("root", true, Duration.ofMinutes(5));
    long id = server.submitDemo("bob", 1, 1);
    for (String path :
        new String[] {
          "/health",
          "/",
          "/openapi.json",
          "/jobs",
          "/jobs/" + id,
          "/jobs/" + id + "/events",
          "/jobs/" + id + "/log",
          "/lanes"
        }) {
      HttpResponse<String> get = get(path, token);
      HttpResponse<String> head =
          HTTP.send(
              request(path, token).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(head.statusCode()).as("HEAD " + path).isEqualTo(get.statusCode());
      assertThat(head.headers().firstValue("Content-Type"))
          .as("HEAD " + path)
          .isEqualTo(get.headers().firstValue("Content-Type"));
      assertThat(head.body()).as("HEAD " + path).isEmpty();
    }
    HttpResponse<String> unauthenticated =
        HTTP.send(
            request("/jobs", null).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(unauthenticated.statusCode()).isEqualTo(401);
  }

  private HttpResponse<String> get(String path, String token) throws Exception {
    return HTTP.send(request(path, token).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpRequest.Builder request(String path, String token) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(server.runtime.baseUri() + path.substring(1)))
            .timeout(Duration.ofSeconds(30));
    return token == null ? b : b.header("Authorization", "Bearer " + token);
  }

  /** The whole answer, until the server closes the connection (as it must after a 413). */
  private static String readAll(InputStream in) throws IOException {
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    in.transferTo(all);
    return all.toString(StandardCharsets.UTF_8);
  }
}
