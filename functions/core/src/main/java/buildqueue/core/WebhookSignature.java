package buildqueue.core;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Standard Webhooks signatures (standardwebhooks.com): a secret is {@code whsec_} and the base64 of
 * its key; a delivery's {@code webhook-signature} is {@code v1,} and the base64 HMAC-SHA256, under
 * that key, of {@code <webhook-id>.<webhook-timestamp>.<body>}, one per secret, separated by
 * spaces, so that a receiver holding either secret of a rotation accepts it.
 */
public final class WebhookSignature {
  /** The prefix of a Standard Webhooks secret. */
  public static final String PREFIX = "whsec_";

  /** The fewest and most key bytes a secret may hold (the spec asks for 24 to 64). */
  public static final int MIN_KEY_BYTES = 24;

  public static final int MAX_KEY_BYTES = 64;

  private static final int GENERATED_KEY_BYTES = 32;
  private static final Pattern BASE64 = Pattern.compile("[A-Za-z0-9+/]+={0,2}");
  private static final SecureRandom RANDOM = new SecureRandom();

  private WebhookSignature() {}

  /** A new secret of 32 random bytes. */
  public static String newSecret() {
    byte[] key = new byte[GENERATED_KEY_BYTES];
    RANDOM.nextBytes(key);
    return PREFIX + Base64.getEncoder().encodeToString(key);
  }

  /** Whether {@code secret} is {@code whsec_} and the base64 of 24 to 64 bytes. */
  public static boolean valid(String secret) {
    if (secret == null || !secret.startsWith(PREFIX)) {
      return false;
    }
    String b64 = secret.substring(PREFIX.length());
    if (!BASE64.matcher(b64).matches()) {
      return false;
    }
    try {
      int n = Base64.getDecoder().decode(b64).length;
      return n >= MIN_KEY_BYTES && n <= MAX_KEY_BYTES;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * What an admin may see of a secret: {@code sha256:} and the first 16 hex digits of the SHA-256
   * of its text. Enough to tell two apart, nothing to sign with.
   */
  public static String fingerprint(String secret) {
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
      return "sha256:" + HexFormat.of().formatHex(d).substring(0, 16);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("no SHA-256 in this JVM", e);
    }
  }

  /** The {@code webhook-signature} header's value: {@code v1,<sig>} for each secret, in order. */
  public static String header(List<String> secrets, String id, long timestamp, byte[] body) {
    return secrets.stream()
        .map(s -> "v1," + sign(s, id, timestamp, body))
        .collect(Collectors.joining(" "));
  }

  private static String sign(String secret, String id, long timestamp, byte[] body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      byte[] key = Base64.getDecoder().decode(secret.substring(PREFIX.length()));
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
      return Base64.getEncoder().encodeToString(mac.doFinal(body));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("no HmacSHA256 in this JVM", e);
    }
  }
}
