package buildqueue.local;

import buildqueue.BuildQueueException;
import buildqueue.api.Caller;
import buildqueue.api.TokenLifetime;
import com.auth0.jwt.JWT;
import com.auth0.jwt.JWTVerifier;
import com.auth0.jwt.algorithms.Algorithm;
import com.auth0.jwt.exceptions.JWTVerificationException;
import com.auth0.jwt.exceptions.TokenExpiredException;
import com.auth0.jwt.interfaces.DecodedJWT;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Local authentication: HS256 tokens signed with a 256-bit secret that is generated into the data
 * directory on first use (file mode 600) and kept there, so tokens outlive restarts and the CLI on
 * the same machine can mint its own. The user is the {@code sub} claim; the scope {@value
 * Caller#ADMIN_SCOPE} in the space-separated {@code scope} claim makes an admin, {@value
 * Caller#READ_ONLY_ADMIN_SCOPE} a read-only admin. Stands in for API Gateway's JWT authorizer.
 */
public final class LocalTokens {
  static final String SECRET_FILE = "token-secret";
  static final String ISSUER = "buildqueue-local";

  /**
   * The longest a token may last ({@link TokenLifetime}); {@code bq token --hours} mints up to it.
   */
  public static final Duration MAX_LIFETIME = TokenLifetime.MAX;

  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rw-------");

  private final Algorithm algorithm;
  private final JWTVerifier verifier;
  private final Clock clock;

  private LocalTokens(byte[] secret, Clock clock) {
    this.algorithm = Algorithm.HMAC256(secret);
    this.clock = clock;
    this.verifier = JWT.require(algorithm).withIssuer(ISSUER).acceptLeeway(5).build();
  }

  /** The tokens of this data directory: its secret, created on first use. */
  public static LocalTokens open(Path dataDir) {
    return new LocalTokens(secret(dataDir), Clock.systemUTC());
  }

  static LocalTokens withSecret(byte[] secret, Clock clock) {
    return new LocalTokens(secret, clock);
  }

  /** A signed token for {@code userId}, an admin's if {@code admin}, valid for {@code ttl}. */
  public String mint(String userId, boolean admin, Duration ttl) {
    return mint(userId, admin, false, ttl);
  }

  /**
   * A signed token for {@code userId}: an admin's if {@code admin}, a read-only admin's (scope
   * {@value Caller#READ_ONLY_ADMIN_SCOPE}: sees everything, changes nothing) if {@code readOnly}.
   */
  public String mint(String userId, boolean admin, boolean readOnly, Duration ttl) {
    if (admin && readOnly) {
      throw new BuildQueueException("a token is an admin's or a read-only admin's, not both");
    }
    if (userId == null || userId.isBlank()) {
      throw new BuildQueueException("a token needs a user id");
    }
    // A negative ttl gives a token that has already expired: harmless, and how tests get one.
    if (ttl.compareTo(MAX_LIFETIME) > 0) {
      throw new BuildQueueException(
          "a token may last at most " + MAX_LIFETIME.toDays() + " days, not " + ttl);
    }
    Instant now = clock.instant();
    var builder =
        JWT.create()
            .withIssuer(ISSUER)
            .withSubject(userId)
            .withIssuedAt(now)
            .withExpiresAt(now.plus(ttl));
    if (admin) {
      builder.withClaim("scope", Caller.ADMIN_SCOPE);
    } else if (readOnly) {
      builder.withClaim("scope", Caller.READ_ONLY_ADMIN_SCOPE);
    }
    return builder.sign(algorithm);
  }

  /**
   * The caller of a request, from its {@code Authorization} header; empty when there is no bearer
   * token or it is not one of ours (bad signature, expired, malformed): the API then answers 401.
   */
  public Optional<Caller> callerOf(String authorizationHeader) {
    return Optional.ofNullable(check(authorizationHeader).caller());
  }

  /** The caller a token names, if it verifies. */
  public Optional<Caller> verify(String token) {
    return Optional.ofNullable(checkToken(token).caller());
  }

  /**
   * What the server makes of a request's {@code Authorization} header: the caller, or why its
   * bearer token was refused (null when there was no bearer token at all), for the 401's detail.
   */
  public Check check(String authorizationHeader) {
    if (authorizationHeader == null) {
      return new Check(null, null);
    }
    String value = authorizationHeader.strip();
    if (value.length() < 8 || !value.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return new Check(null, null);
    }
    return checkToken(value.substring(7).strip());
  }

  private Check checkToken(String token) {
    DecodedJWT jwt;
    try {
      jwt = verifier.verify(token);
    } catch (TokenExpiredException e) {
      return refused("The token expired at " + e.getExpiredOn() + "; get a new one (bq token).");
    } catch (JWTVerificationException e) {
      return refused(
          "The token is not one of this server's: malformed, or not signed with its secret; get"
              + " one from bq token on this machine.");
    }
    String lifetime =
        TokenLifetime.refusal(
            jwt.getIssuedAtAsInstant(), jwt.getExpiresAtAsInstant(), clock.instant());
    if (lifetime != null) {
      return refused(lifetime + " (bq token --hours N mints one.)");
    }
    String sub = jwt.getSubject();
    if (sub == null || sub.isBlank()) {
      return refused("The token has no sub claim, so it names no user.");
    }
    String scope = jwt.getClaim("scope").asString();
    return new Check(Caller.of(sub, scope == null ? List.of() : List.of(scope)), null);
  }

  private static Check refused(String why) {
    return new Check(null, why);
  }

  /**
   * @param caller who is calling, or null
   * @param refusal why the request's token was refused; null when it was accepted or absent
   */
  public record Check(Caller caller, String refusal) {}

  private static byte[] secret(Path dataDir) {
    Path file = dataDir.resolve(SECRET_FILE);
    try {
      Files.createDirectories(dataDir);
      if (!Files.exists(file)) {
        create(file);
      }
      requireOwnerOnly(file);
      byte[] secret =
          Base64.getDecoder().decode(Files.readString(file, StandardCharsets.US_ASCII).strip());
      if (secret.length < 32) {
        throw new BuildQueueException(
            file
                + " holds a secret shorter than 256 bits; delete it to have a new one made"
                + " (tokens signed with the old one stop working)");
      }
      return secret;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read or create the token secret " + file, e);
    } catch (IllegalArgumentException e) {
      throw new BuildQueueException(
          file + " is not a base64 secret; delete it to have a new one made", e);
    }
  }

  private static void create(Path file) throws IOException {
    byte[] secret = new byte[32];
    new SecureRandom().nextBytes(secret);
    // Written whole under a temporary name with its final mode, then linked into place: link(2)
    // fails if another process got there first, so every process ends up reading the same secret
    // and no one ever sees a partial or world-readable file.
    Path tmp =
        Files.createTempFile(
            file.getParent(),
            SECRET_FILE,
            ".tmp",
            PosixFilePermissions.asFileAttribute(OWNER_ONLY));
    try {
      Files.writeString(
          tmp, Base64.getEncoder().encodeToString(secret) + "\n", StandardCharsets.US_ASCII);
      Files.createLink(file, tmp);
    } catch (FileAlreadyExistsException anotherProcessMadeIt) {
      // keep theirs
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static void requireOwnerOnly(Path file) throws IOException {
    Set<PosixFilePermission> mode = Files.getPosixFilePermissions(file);
    if (!OWNER_ONLY.containsAll(mode)) {
      throw new BuildQueueException(
          file
              + " is readable by others (mode "
              + PosixFilePermissions.toString(mode)
              + "); anyone who reads it can act as any user. Run: chmod 600 "
              + file);
    }
  }
}
