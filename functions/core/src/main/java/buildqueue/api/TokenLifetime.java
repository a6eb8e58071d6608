package buildqueue.api;

import java.time.Duration;
import java.time.Instant;

/**
 * The rule both adapters hold a verified token to, beyond its signature: it has an {@code exp}, and
 * lasts at most {@link #MAX}, so a leaked token stops working within a bounded time. The local
 * server checks it on its own HS256 tokens; on AWS, API Gateway's JWT authorizer checks the
 * signature and that {@code exp} is in the future, and the API function this.
 */
public final class TokenLifetime {
  /**
   * The longest a token may last, from its {@code iat} (or from now, without one) to {@code exp}.
   */
  public static final Duration MAX = Duration.ofDays(30);

  private TokenLifetime() {}

  /**
   * Why a token with these claims is refused, for the 401's detail; null when it is fine.
   *
   * @param issuedAt the {@code iat} claim, or null
   * @param expiresAt the {@code exp} claim, or null
   */
  public static String refusal(Instant issuedAt, Instant expiresAt, Instant now) {
    if (expiresAt == null) {
      return "The token has no exp claim; tokens must expire within "
          + MAX.toDays()
          + " days of being issued.";
    }
    Instant from = issuedAt == null ? now : issuedAt;
    if (Duration.between(from, expiresAt).compareTo(MAX) > 0) {
      return "The token is valid until "
          + expiresAt
          + ", longer than the "
          + MAX.toDays()
          + " days a token may last; get a shorter-lived one.";
    }
    return null;
  }
}
