package buildqueue.api;

import java.util.Arrays;
import java.util.Collection;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Who is calling, from an already verified token: API Gateway's JWT authorizer in AWS, the local
 * server's HS256 check locally. {@link HttpApi} trusts it as given; a null caller means the request
 * carried no valid token.
 *
 * @param userId the token's {@code sub} claim
 * @param admin whether the token carries the scope {@value #ADMIN_SCOPE} or {@value
 *     #READ_ONLY_ADMIN_SCOPE}: the caller sees every user's jobs and the lanes
 * @param readOnly whether the caller may only read: a token with {@value #READ_ONLY_ADMIN_SCOPE}
 *     and without {@value #ADMIN_SCOPE}. {@link HttpApi} refuses it every route but GET and HEAD.
 */
public record Caller(String userId, boolean admin, boolean readOnly) {
  /** The OAuth scope that makes a caller an admin. */
  public static final String ADMIN_SCOPE = "buildqueue/admin";

  /**
   * The OAuth scope of a read-only admin: sees everything an admin sees, changes nothing (a support
   * colleague's view). Scopes add up: a token that also has {@value #ADMIN_SCOPE} is a full admin.
   */
  public static final String READ_ONLY_ADMIN_SCOPE = "buildqueue/admin.read";

  public Caller {
    Objects.requireNonNull(userId, "userId");
    if (readOnly && !admin) {
      throw new IllegalArgumentException("a read-only caller is a read-only admin");
    }
  }

  /** A caller that may change what it may see. */
  public Caller(String userId, boolean admin) {
    this(userId, admin, false);
  }

  /**
   * A caller from a token's claims.
   *
   * @param scopes the token's scopes: one entry per scope, or entries that are themselves
   *     space-separated scope strings (the form of the {@code scope} claim)
   */
  public static Caller of(String sub, Collection<String> scopes) {
    Set<String> granted =
        scopes == null
            ? Set.of()
            : scopes.stream()
                .filter(Objects::nonNull)
                .flatMap(s -> Arrays.stream(s.trim().split("\\s+")))
                .collect(Collectors.toSet());
    if (granted.contains(ADMIN_SCOPE)) {
      return new Caller(sub, true, false);
    }
    return new Caller(
        sub, granted.contains(READ_ONLY_ADMIN_SCOPE), granted.contains(READ_ONLY_ADMIN_SCOPE));
  }

  public static Caller user(String userId) {
    return new Caller(userId, false);
  }

  public static Caller admin(String userId) {
    return new Caller(userId, true);
  }

  public static Caller readOnlyAdmin(String userId) {
    return new Caller(userId, true, true);
  }
}
