package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.Caller;
import buildqueue.api.HttpApi;
import buildqueue.core.JobQueries;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestSeeds;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Seeded fuzzing of the local server's token check, wired as {@link LocalHttpServer} wires it (the
 * {@code Authorization} header through {@link LocalTokens#callerOf} into {@link HttpApi}). Bad,
 * expired, not-yet-valid, wrongly signed, unsigned, re-signed with another algorithm, tampered,
 * truncated, foreign-issuer and malformed tokens, and odd header forms: none names a caller, every
 * such request to a protected route is a 401 that writes nothing, and only our own unexpired tokens
 * name exactly the user (and admin scope) they were minted for. In AWS, API Gateway's JWT
 * authorizer does this check before {@link HttpApi} is reached.
 */
@ExtendWith(PostgresExtension.class)
class TokenFuzzTest {
  static final int DEFAULT_TOKENS = 10_000;
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
  private static final Logger QUIET = Logger.getLogger("buildqueue");

  /**
   * {@code alsoAllowed}: a flipped bit may land in a base64 character's unused low bits and decode
   * to the same token, which then rightly names the caller it was minted for; never anyone else.
   */
  private record Case(
      String shape, String header, Optional<Caller> expected, Optional<Caller> alsoAllowed) {
    Case(String shape, String header, Optional<Caller> expected) {
      this(shape, header, expected, Optional.empty());
    }
  }

  /**
   * A request to each kind of protected route, reads and writes, for whatever caller a token named.
   */
  private static final List<java.util.function.Function<Caller, ApiRequest>> PROTECTED =
      List.of(
          c -> ApiRequest.json("POST", "/jobs", "{\"kind\": \"noop\"}", c),
          c -> ApiRequest.of("GET", "/jobs", c),
          c -> ApiRequest.of("GET", "/jobs/1", c),
          c -> ApiRequest.of("GET", "/jobs/1/events", c),
          c -> ApiRequest.of("GET", "/jobs/1/log", c),
          c -> ApiRequest.of("POST", "/jobs/1/cancel", c),
          c -> ApiRequest.of("GET", "/lanes", c),
          c -> ApiRequest.json("PUT", "/users/alice", "{\"dedicatedWorker\": true}", c));

  @Test
  void only_our_unexpired_tokens_name_a_caller_and_a_refused_request_writes_nothing(
      TestDatabase tdb) {
    QUIET.setLevel(Level.OFF);
    int count = Integer.getInteger("fuzz.tokens", DEFAULT_TOKENS);
    long seed = TestSeeds.seed("token fuzz", "fuzz.seed", 23);
    Random random = new Random(new java.util.SplittableRandom(seed).nextLong());
    byte[] secret = new byte[32];
    random.nextBytes(secret); // from the seed too, so a seed replays the same tokens
    LocalTokens tokens = LocalTokens.withSecret(secret, Clock.systemUTC());
    QueueHarness h = QueueHarness.manual(tdb);
    HttpApi api = new HttpApi(h.queue, new JobQueries(h.db, h.config, h.clock), h.handlers);
    Map<String, Integer> shapes = new TreeMap<>();
    List<String> failures = new ArrayList<>();

    for (int i = 0; i < count && failures.size() < 5; i++) {
      Case c = next(random, tokens, secret);
      shapes.merge(c.shape(), 1, Integer::sum);
      Optional<Caller> caller = tokens.callerOf(c.header());
      if (!caller.equals(c.expected()) && !(caller.isPresent() && caller.equals(c.alsoAllowed()))) {
        failures.add(
            i
                + " ("
                + c.shape()
                + "): expected "
                + c.expected()
                + ", got "
                + caller
                + " for "
                + c.header());
        continue;
      }
      if (caller.isEmpty() && random.nextInt(10) == 0) {
        long rows = rows(tdb);
        ApiRequest request = pick(random, PROTECTED).apply(caller.orElse(null));
        ApiResponse r = api.handle(request);
        if (r.status() != 401 || rows(tdb) != rows) {
          failures.add(
              i
                  + " ("
                  + c.shape()
                  + "): "
                  + request.method()
                  + " "
                  + request.path()
                  + " without a caller got "
                  + r.status());
        }
      }
    }

    System.out.println("token fuzz: " + count + " tokens, seed " + seed + ", shapes " + shapes);
    assertThat(failures).as("replay with -Dfuzz.seed=" + seed).isEmpty();
  }

  private static Case next(Random random, LocalTokens tokens, byte[] secret) {
    String user = pick(random, List.of("alice", "bob", "ops", "Ω", "a b"));
    boolean admin = random.nextInt(4) == 0;
    String good = tokens.mint(user, admin, Duration.ofMinutes(5));
    Caller mintedFor = new Caller(user, admin);
    String[] parts = good.split("\\.");
    return switch (random.nextInt(18)) {
      case 0, 1 -> new Case("valid", bearer(random, good), Optional.of(mintedFor));
      case 2 ->
          new Case(
              "expired",
              "Bearer "
                  + at(secret, Instant.now().minusSeconds(3600 + random.nextInt(10_000)))
                      .mint(user, admin, Duration.ofMinutes(1 + random.nextInt(30))),
              Optional.empty());
      case 3 ->
          new Case(
              "issued in the future",
              "Bearer "
                  + at(secret, Instant.now().plusSeconds(60 + random.nextInt(3600)))
                      .mint(user, admin, Duration.ofHours(2)),
              Optional.empty());
      case 4 -> {
        byte[] other = secret.clone();
        other[random.nextInt(other.length)] ^= (byte) (1 << random.nextInt(8));
        yield new Case(
            "wrongly signed",
            "Bearer "
                + LocalTokens.withSecret(other, Clock.systemUTC())
                    .mint(user, admin, Duration.ofMinutes(5)),
            Optional.empty());
      }
      case 5 ->
          new Case(
              "unsigned (alg none)",
              "Bearer "
                  + segment("{\"alg\":\"none\",\"typ\":\"JWT\"}")
                  + "."
                  + parts[1]
                  + "."
                  + pick(random, List.of("", parts[2])),
              Optional.empty());
      case 6 ->
          new Case(
              "another algorithm",
              "Bearer "
                  + segment(
                      "{\"alg\":\""
                          + pick(
                              random,
                              List.of("HS384", "HS512", "RS256", "ES256", "hs256", "HS256 "))
                          + "\",\"typ\":\"JWT\"}")
                  + "."
                  + parts[1]
                  + "."
                  + parts[2],
              Optional.empty());
      case 7 ->
          new Case(
              "claims swapped in",
              "Bearer "
                  + parts[0]
                  + "."
                  + segment(
                      "{\"iss\":\""
                          + LocalTokens.ISSUER
                          + "\",\"sub\":\"root\",\"scope\":\""
                          + Caller.ADMIN_SCOPE
                          + "\",\"exp\":"
                          + (Instant.now().getEpochSecond() + 600)
                          + "}")
                  + "."
                  + parts[2],
              Optional.empty());
      case 8 ->
          new Case(
              "bit flipped",
              "Bearer " + flip(random, good),
              Optional.empty(),
              Optional.of(mintedFor));
      case 9 ->
          new Case(
              "truncated",
              "Bearer " + good.substring(0, random.nextInt(good.length())),
              Optional.empty());
      case 10 ->
          new Case(
              "foreign issuer",
              "Bearer "
                  + hs256(
                      secret,
                      "{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
                      "{\"iss\":\"someone-else\",\"sub\":\""
                          + user
                          + "\",\"exp\":"
                          + (Instant.now().getEpochSecond() + 600)
                          + "}"),
              Optional.empty());
      case 11 ->
          new Case(
              "no or blank subject",
              "Bearer "
                  + hs256(
                      secret,
                      "{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
                      "{\"iss\":\""
                          + LocalTokens.ISSUER
                          + "\""
                          + pick(
                              random,
                              List.of("", ",\"sub\":\"\"", ",\"sub\":\"  \"", ",\"sub\":null"))
                          + ",\"exp\":"
                          + (Instant.now().getEpochSecond() + 600)
                          + "}"),
              Optional.empty());
      case 12 ->
          new Case(
              "segments added or removed",
              "Bearer "
                  + pick(
                      random,
                      List.of(
                          parts[0] + "." + parts[1],
                          good + ".",
                          good + "." + parts[2],
                          parts[1] + "." + parts[2],
                          "..",
                          ".",
                          good.replace(".", ".."))),
              Optional.empty());
      case 13 -> new Case("garbage", "Bearer " + garbage(random), Optional.empty());
      case 14 ->
          new Case(
              "not a bearer header",
              pick(
                  random,
                  List.of(
                      "Basic " + good,
                      good,
                      "Token " + good,
                      "Bearer",
                      "Bearer ",
                      "",
                      "Bearer: " + good,
                      "BearerX " + good,
                      "Bearer\u0000" + good)),
              Optional.empty());
      case 15 -> new Case("two tokens", "Bearer " + good + " " + good, Optional.empty());
      case 16 ->
          new Case(
              "huge",
              "Bearer " + good + "A".repeat(10_000 + random.nextInt(90_000)),
              Optional.empty());
      default -> new Case("no header", null, Optional.empty());
    };
  }

  private static String bearer(Random random, String token) {
    return pick(random, List.of("Bearer ", "bearer ", "BEARER ", "Bearer  ", " Bearer "))
        + token
        + pick(random, List.of("", " ", "\t"));
  }

  private static LocalTokens at(byte[] secret, Instant instant) {
    return LocalTokens.withSecret(secret, Clock.fixed(instant, ZoneOffset.UTC));
  }

  private static String segment(String json) {
    return B64.encodeToString(json.getBytes(StandardCharsets.UTF_8));
  }

  private static String hs256(byte[] secret, String header, String claims) {
    String signingInput = segment(header) + "." + segment(claims);
    try {
      javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
      mac.init(new javax.crypto.spec.SecretKeySpec(secret, "HmacSHA256"));
      return signingInput
          + "."
          + B64.encodeToString(mac.doFinal(signingInput.getBytes(StandardCharsets.US_ASCII)));
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String flip(Random random, String token) {
    char[] chars = token.toCharArray();
    int at = random.nextInt(chars.length);
    char c = chars[at];
    chars[at] = c == '.' ? 'x' : (c == 'A' ? 'B' : 'A');
    return new String(chars);
  }

  private static String garbage(Random random) {
    StringBuilder b = new StringBuilder();
    int n = random.nextInt(300);
    for (int i = 0; i < n; i++) {
      b.append((char) (random.nextInt(3) == 0 ? random.nextInt(0x3000) : ' ' + random.nextInt(95)));
    }
    return b.toString();
  }

  private static long rows(TestDatabase tdb) {
    return tdb.jdbc()
        .query(
            "select (select count(*) from build_job) + (select count(*) from build_job_event)"
                + " + (select count(*) from build_user) as n")
        .get(0)
        .longValue("n");
  }

  private static <T> T pick(Random random, List<T> list) {
    return list.get(random.nextInt(list.size()));
  }
}
