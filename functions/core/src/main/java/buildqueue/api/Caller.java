package buildqueue.api;

import java.util.Collection;
import java.util.Objects;

/**
 * Who is calling, from an already verified token: API Gateway's JWT authorizer in AWS, the local
 * server's HS256 check locally. {@link HttpApi} trusts it as given; a null caller means the request
 * carried no valid token.
 *
 * @param userId the token's {@code sub} claim
 * @param admin whether the token carries the scope {@value #ADMIN_SCOPE}
 */
public record Caller(String userId, boolean admin) {
  /** The OAuth scope that makes a caller an admin. */
  public static final String ADMIN_SCOPE = "buildqueue/admin";

  public Caller {
    Objects.requireNonNull(userId, "userId");
  }

  /**
   * A caller from a token's claims.
   *
   * @param scopes the token's scopes: one entry per scope, or entries that are themselves
   *     space-separated scope strings (the form of the {@code scope} claim)
   */
  public static Caller of(String sub, Collection<String> scopes) {
    boolean admin =
        scopes != null
            && scopes.stream()
                .filter(Objects::nonNull)
                .flatMap(s -> java.util.Arrays.stream(s.trim().split("\\s+")))
                .anyMatch(ADMIN_SCOPE::equals);
    return new Caller(sub, admin);
  }

  public static Caller user(String userId) {
    return new Caller(userId, false);
  }

  public static Caller admin(String userId) {
    return new Caller(userId, true);
  }
}
