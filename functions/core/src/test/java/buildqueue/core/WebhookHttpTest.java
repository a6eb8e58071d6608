package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.WebhookTransport.Answer;
import buildqueue.testing.WebhookReceiver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The webhook sender's guards (docs/architecture.md "Webhooks"): private, loopback, link-local,
 * unique-local and metadata targets refused unless the operator allows them, checked on the address
 * the host resolved to and connected to; redirects not followed; a bounded wait and read.
 */
class WebhookHttpTest {
  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  /** A DNS stand-in: {@code rebind.example} resolves to the loopback, as a rebinding attack's. */
  private static InetAddress[] resolve(String host) throws UnknownHostException {
    if (host.equals("rebind.example")) {
      return new InetAddress[] {InetAddress.getByName("127.0.0.1")};
    }
    return InetAddress.getAllByName(host);
  }

  private static WebhookHttp sender(boolean allowPrivate) {
    return new WebhookHttp(allowPrivate, Duration.ofSeconds(10), WebhookHttpTest::resolve);
  }

  @Test
  void private_loopback_link_local_unique_local_and_metadata_targets_are_refused_before_a_byte()
      throws Exception {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      int port = receiver.port();
      List<String> targets =
          List.of(
              "http://127.0.0.1:" + port + "/hook",
              "http://localhost:" + port + "/hook",
              "http://rebind.example:" + port + "/hook",
              "http://[::1]:" + port + "/hook",
              "http://10.1.2.3:" + port + "/hook",
              "http://172.16.0.1:" + port + "/hook",
              "http://192.168.1.1:" + port + "/hook",
              "http://100.64.0.1:" + port + "/hook",
              "http://169.254.169.254/latest/meta-data/",
              "http://[fd00:ec2::254]/latest/meta-data/",
              "http://[fd12:3456::1]:" + port + "/hook",
              "http://[fe80::1]:" + port + "/hook",
              "http://0.0.0.0:" + port + "/hook");
      for (String target : targets) {
        Answer a = sender(false).post(URI.create(target), Map.of(), BODY);
        assertThat(a.ok()).as(target).isFalse();
        assertThat(a.status()).as(target).isZero();
        assertThat(a.error()).as(target).startsWith("refused:");
      }
      assertThat(receiver.received()).as("no request reached the receiver").isEmpty();
    }
  }

  @Test
  void the_operators_setting_lets_a_webhook_reach_the_loopback_also_through_a_name()
      throws Exception {
    try (WebhookReceiver receiver = WebhookReceiver.acknowledging()) {
      WebhookHttp allowed = sender(true);
      assertThat(allowed.post(URI.create(receiver.url("/a")), Map.of("x-a", "1"), BODY).ok())
          .isTrue();
      Answer byName =
          allowed.post(
              URI.create("http://rebind.example:" + receiver.port() + "/b?q=1"), Map.of(), BODY);
      assertThat(byName.ok()).as(String.valueOf(byName)).isTrue();
      assertThat(receiver.received()).hasSize(2);
      assertThat(receiver.received().get(0).header("x-a")).isEqualTo("1");
      assertThat(receiver.received().get(1).header("host"))
          .isEqualTo("rebind.example:" + receiver.port());
      assertThat(receiver.received().get(1).bodyText()).isEqualTo("{}");
    }
  }

  @Test
  void public_addresses_are_not_private() throws Exception {
    for (String a : List.of("93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "100.128.0.1")) {
      assertThat(WebhookHttp.isPrivate(InetAddress.getByName(a))).as(a).isFalse();
    }
  }

  @Test
  void a_redirect_is_an_answer_not_followed() {
    try (WebhookReceiver receiver = new WebhookReceiver(n -> 307)) {
      Answer a = sender(true).post(URI.create(receiver.url("/hook")), Map.of(), BODY);
      assertThat(a.ok()).isFalse();
      assertThat(a.status()).isEqualTo(307);
      assertThat(a.error()).contains("redirects are not followed");
      assertThat(receiver.received()).hasSize(1);
    }
  }

  @Test
  void an_endpoint_that_never_answers_fails_within_the_timeout() throws IOException {
    try (ServerSocket silent = new ServerSocket()) {
      silent.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      Thread acceptor =
          new Thread(
              () -> {
                try (Socket s = silent.accept()) {
                  Thread.sleep(5_000);
                } catch (IOException | InterruptedException e) {
                  // the test ends it
                }
              });
      acceptor.start();
      WebhookHttp quick = new WebhookHttp(true, Duration.ofMillis(500), WebhookHttpTest::resolve);
      long started = System.nanoTime();
      Answer a =
          quick.post(
              URI.create("http://127.0.0.1:" + silent.getLocalPort() + "/hook"), Map.of(), BODY);
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      assertThat(a.ok()).isFalse();
      assertThat(a.error()).startsWith("no answer within");
      assertThat(tookMs).isLessThan(3_000);
      acceptor.interrupt();
    }
  }

  @Test
  void only_http_and_https_are_sent() {
    Answer a = sender(true).post(URI.create("file:///etc/passwd"), Map.of(), BODY);
    assertThat(a.error()).contains("only http and https");
  }
}
