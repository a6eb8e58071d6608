package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.api.Caller;
import com.auth0.jwt.JWT;
import com.auth0.jwt.algorithms.Algorithm;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalTokensTest {
  @TempDir Path dataDir;

  @Test
  void the_secret_is_made_once_readable_by_its_owner_only_and_kept() throws Exception {
    String token = LocalTokens.open(dataDir).mint("bob", false, Duration.ofMinutes(5));
    Path secret = dataDir.resolve(LocalTokens.SECRET_FILE);

    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)))
        .isEqualTo("rw-------");
    assertThat(LocalTokens.open(dataDir).verify(token)).contains(Caller.user("bob"));
    assertThat(Files.list(dataDir)).containsExactly(secret);
  }

  @Test
  void a_token_names_its_user_and_the_admin_scope_makes_an_admin() {
    LocalTokens tokens = LocalTokens.open(dataDir);
    assertThat(tokens.callerOf("Bearer " + tokens.mint("ada", true, Duration.ofMinutes(5))))
        .contains(Caller.admin("ada"));
    assertThat(tokens.callerOf("bearer " + tokens.mint("bob", false, Duration.ofMinutes(5))))
        .contains(Caller.user("bob"));
  }

  @Test
  void expired_foreign_unsigned_and_malformed_tokens_name_no_caller() {
    LocalTokens tokens = LocalTokens.open(dataDir);
    Clock anHourAgo = Clock.fixed(Instant.now().minusSeconds(3600), ZoneOffset.UTC);
    byte[] secret =
        Base64.getDecoder().decode(read(dataDir.resolve(LocalTokens.SECRET_FILE)).strip());
    String expired =
        LocalTokens.withSecret(secret, anHourAgo).mint("bob", false, Duration.ofMinutes(5));
    String foreign =
        LocalTokens.withSecret(new byte[32], Clock.systemUTC())
            .mint("bob", true, Duration.ofMinutes(5));
    String valid = tokens.mint("bob", true, Duration.ofMinutes(5));
    String[] parts = valid.split("\\.");
    String header =
        Base64.getUrlEncoder()
            .withoutPadding()
            .encodeToString("{\"alg\":\"none\",\"typ\":\"JWT\"}".getBytes(StandardCharsets.UTF_8));
    String unsigned = header + "." + parts[1] + ".";

    for (String bad :
        new String[] {expired, foreign, unsigned, "garbage", parts[0] + "." + parts[1] + ".AAAA"}) {
      assertThat(tokens.verify(bad)).as(bad).isEmpty();
    }
    assertThat(tokens.callerOf(null)).isEmpty();
    assertThat(tokens.callerOf("Basic Ym9iOnB3")).isEmpty();
    assertThat(tokens.callerOf(valid)).as("no Bearer prefix").isEmpty();
  }

  @Test
  void a_token_without_exp_or_valid_beyond_the_bound_is_refused_saying_why() {
    LocalTokens tokens = LocalTokens.open(dataDir);
    Algorithm ours =
        Algorithm.HMAC256(
            Base64.getDecoder().decode(read(dataDir.resolve(LocalTokens.SECRET_FILE)).strip()));
    Instant now = Instant.now();
    Instant tooLate = now.plus(LocalTokens.MAX_LIFETIME).plusSeconds(60);
    String noExp = signed(ours, now, null);
    String tooLong = signed(ours, now, tooLate);
    String tooLongWithoutIat = signed(ours, null, tooLate);
    String withinTheBound = signed(ours, null, now.plus(LocalTokens.MAX_LIFETIME).minusSeconds(60));

    assertThat(tokens.check("Bearer " + noExp).refusal()).contains("no exp claim");
    assertThat(tokens.check("Bearer " + tooLong).refusal()).contains("longer than the 30 days");
    assertThat(tokens.check("Bearer " + tooLongWithoutIat).refusal())
        .contains("longer than the 30 days");
    assertThat(tokens.check("Bearer " + withinTheBound).caller()).isEqualTo(Caller.user("bob"));
    assertThat(tokens.check(null)).isEqualTo(new LocalTokens.Check(null, null));
    assertThatThrownBy(() -> tokens.mint("bob", false, Duration.ofDays(31)))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("at most 30 days");
  }

  /**
   * A token for bob signed with {@code key}, with the given {@code iat} and {@code exp} or none.
   */
  static String signed(Algorithm key, Instant issuedAt, Instant expiresAt) {
    var token = JWT.create().withIssuer(LocalTokens.ISSUER).withSubject("bob");
    if (issuedAt != null) {
      token.withIssuedAt(issuedAt);
    }
    if (expiresAt != null) {
      token.withExpiresAt(expiresAt);
    }
    return token.sign(key);
  }

  @Test
  void a_secret_that_others_can_read_is_refused_with_the_fix() throws Exception {
    LocalTokens.open(dataDir);
    Path secret = dataDir.resolve(LocalTokens.SECRET_FILE);
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-r--r--"));

    assertThatThrownBy(() -> LocalTokens.open(dataDir))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("chmod 600");
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
