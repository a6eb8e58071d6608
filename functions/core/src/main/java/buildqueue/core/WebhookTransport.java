package buildqueue.core;

import java.net.URI;
import java.util.Map;

/**
 * Where a webhook delivery's request goes: the network ({@link WebhookHttp}), or a test's stand-in.
 * Never throws for what the endpoint or the network did: every outcome is an {@link Answer}.
 */
@FunctionalInterface
public interface WebhookTransport {
  Answer post(URI url, Map<String, String> headers, byte[] body);

  /**
   * What came of one request.
   *
   * @param status the endpoint's HTTP status; 0 when none came (refused, unreachable, timed out)
   * @param error why it does not count as acknowledged, for the delivery log (never a secret, at
   *     most a few hundred characters); null when acknowledged
   */
  record Answer(int status, String error) {
    public static Answer acknowledged(int status) {
      return new Answer(status, null);
    }

    public static Answer failed(int status, String error) {
      return new Answer(status, error);
    }

    /** A 2xx answer: the delivery is done. */
    public boolean ok() {
      return error == null && status >= 200 && status < 300;
    }
  }
}
