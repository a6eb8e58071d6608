package buildqueue.local;

import buildqueue.testing.WebhookReceiver;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A Standard Webhooks receiver's check, written from the spec (standardwebhooks.com), not from the
 * queue's signer: HMAC-SHA256 under the key after {@code whsec_} of {@code id.timestamp.body}, any
 * {@code v1,} signature of the space-separated header, a timestamp within 5 minutes.
 */
final class StandardWebhooks {
  private StandardWebhooks() {}

  static boolean verifies(String secret, WebhookReceiver.Received r) throws Exception {
    String id = r.header("webhook-id");
    String ts = r.header("webhook-timestamp");
    String header = r.header("webhook-signature");
    if (id == null || ts == null || header == null) {
      return false;
    }
    if (Math.abs(Instant.now().getEpochSecond() - Long.parseLong(ts)) > 300) {
      return false;
    }
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.substring(6)), "HmacSHA256"));
    byte[] want =
        mac.doFinal((id + "." + ts + "." + r.bodyText()).getBytes(StandardCharsets.UTF_8));
    for (String sig : header.split(" ")) {
      if (sig.startsWith("v1,")
          && MessageDigest.isEqual(Base64.getDecoder().decode(sig.substring(3)), want)) {
        return true;
      }
    }
    return false;
  }
}
