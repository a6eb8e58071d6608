package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Input that has broken other APIs: characters PostgreSQL cannot store, numbers it cannot hold,
 * documents nested too deep, bytes that are not UTF-8. Each gets the status listed, never a 5xx
 * (which would be our bug), and a refusal writes no row.
 */
@ExtendWith(PostgresExtension.class)
class BadInputTest {
  private static final Map<String, String> JSON = Map.of("Content-Type", "application/json");

  private record Case(
      String name, String method, String target, byte[] body, Caller caller, int expected) {}

  private static Case submit(String name, String body, int expected) {
    return new Case(name, "POST", "/jobs", body.getBytes(StandardCharsets.UTF_8), ALICE, expected);
  }

  private static Case submitPayload(String name, String payload, int expected) {
    return submit(name, "{\"kind\": \"noop\", \"payload\": " + payload + "}", expected);
  }

  private static Case get(String name, String target, Caller caller, int expected) {
    return new Case(name, "GET", target, new byte[0], caller, expected);
  }

  private static Case putUser(String name, String target, String body, int expected) {
    return new Case(name, "PUT", target, body.getBytes(StandardCharsets.UTF_8), ADMIN, expected);
  }

  @Test
  void hostile_input_gets_the_status_listed_and_a_refusal_writes_nothing(TestDatabase tdb) {
    List<Case> cases =
        new ArrayList<>(
            List.of(
                submitPayload("NUL in a string", "{\"a\": \"x\\u0000y\"}", 400),
                submitPayload("NUL in a field name", "{\"a\\u0000\": 1}", 400),
                submitPayload("unpaired high surrogate", "{\"a\": \"\\ud800\"}", 400),
                submitPayload("unpaired low surrogate in a name", "{\"\\udc00\": 1}", 400),
                submitPayload("a surrogate pair (an emoji)", "{\"a\": \"\\ud83d\\ude00 ok\"}", 201),
                submitPayload("raw non-ASCII text", "{\"a\": \"Grüße, 你好\"}", 201),
                submitPayload("an unescaped control character", "{\"a\": \"x\ny\"}", 400),
                submitPayload("a number beyond double", "{\"a\": 1e400}", 201),
                submitPayload("an exponent jsonb cannot hold", "{\"a\": 1e100000}", 400),
                submitPayload("a tiny exponent jsonb cannot hold", "{\"a\": 1e-100000}", 400),
                submitPayload(
                    "negative zero and small decimals",
                    "{\"a\": -0, \"b\": 0.000000000000000000001}",
                    201),
                submitPayload("a 1000-digit integer", "{\"a\": " + "9".repeat(1000) + "}", 201),
                submitPayload("a 1001-digit integer", "{\"a\": " + "9".repeat(1001) + "}", 400),
                submitPayload("NaN", "{\"a\": NaN}", 400),
                submitPayload("Infinity", "{\"a\": Infinity}", 400),
                submitPayload("a leading plus", "{\"a\": +1}", 400),
                submitPayload("nesting within the limit", nested(50), 201),
                submitPayload("nesting beyond the limit", nested(200), 400),
                submitPayload("nesting far beyond the limit", nested(100_000), 413),
                submitPayload("a duplicate field in the payload", "{\"a\": 1, \"a\": 2}", 400),
                submitPayload("a long field name", "{\"" + "n".repeat(40_000) + "\": 1}", 201),
                submitPayload("a wide array", "[" + "0,".repeat(50_000) + "0]", 400),
                submitPayload(
                    "a wide array inside the object",
                    "{\"a\": [" + "0,".repeat(15_000) + "0]}",
                    201),
                submitPayload(
                    "an array too wide to be read back as stored",
                    "{\"a\": [" + "0,".repeat(50_000) + "0]}",
                    413),
                submit("comments", "{\"kind\": \"noop\" /* hi */}", 400),
                submit("single quotes", "{'kind': 'noop'}", 400),
                submit("a trailing comma", "{\"kind\": \"noop\",}", 400),
                submit("only whitespace", "   \n ", 400),
                submit("a NUL byte", "\u0000", 400),
                submit("a byte order mark before the JSON", "\uFEFF{\"kind\": \"noop\"}", 201),
                submit("a NUL in the kind", "{\"kind\": \"no\\u0000op\"}", 400),
                submit(
                    "a kind of 100000 characters",
                    "{\"kind\": \"" + "k".repeat(100_000) + "\"}",
                    400),
                submit(
                    "an unpaired surrogate in the idempotency key",
                    "{\"kind\": \"noop\", \"idempotencyKey\": \"\\ud800\"}",
                    400),
                submit(
                    "a control character in the idempotency key",
                    "{\"kind\": \"noop\", \"idempotencyKey\": \"a\\nb\"}",
                    400),
                submit(
                    "an emoji idempotency key",
                    "{\"kind\": \"noop\", \"idempotencyKey\": \"\\ud83d\\ude00\"}",
                    201),
                new Case(
                    "bytes that are not UTF-8",
                    "POST",
                    "/jobs",
                    new byte[] {
                      '{',
                      '"',
                      'k',
                      'i',
                      'n',
                      'd',
                      '"',
                      ':',
                      '"',
                      (byte) 0xff,
                      (byte) 0xfe,
                      '"',
                      '}'
                    },
                    ALICE,
                    400),
                putUser(
                    "a user id that is an encoded surrogate",
                    "/users/%ED%A0%80",
                    "{\"dedicatedWorker\": true}",
                    400),
                putUser(
                    "a user id with an emoji",
                    "/users/%F0%9F%98%80",
                    "{\"dedicatedWorker\": true}",
                    200),
                putUser("a null dedicatedWorker", "/users/x", "{\"dedicatedWorker\": null}", 400),
                get(
                    "a caller whose sub is an unpaired surrogate",
                    "/jobs",
                    Caller.user("\ud800"),
                    401),
                get(
                    "a query value that is an encoded surrogate",
                    "/jobs?status=%ED%A0%80",
                    ALICE,
                    400),
                get("a query that is only separators", "/jobs?&&=&", ALICE, 400),
                get("the largest job id", "/jobs/9223372036854775807", ALICE, 404),
                get(
                    "a job id with leading zeros names the job",
                    "/jobs/000000000000000001",
                    ALICE,
                    200),
                get("a path with an encoded slash", "/jobs%2F1", ALICE, 404),
                get("a path with a dot segment", "/jobs/../lanes", ALICE, 404),
                new Case("a method in lower case", "post", "/jobs", new byte[0], ALICE, 405),
                new Case("an empty method", "", "/jobs", new byte[0], ALICE, 405)));

    SoftAssertions soft = new SoftAssertions();
    try (ApiFixture f = new ApiFixture(tdb)) {
      for (Case c : cases) {
        Map<String, Long> before = f.rowCounts();
        ApiResponse r =
            f.api.handle(
                new ApiRequest(
                    c.method, pathOf(c.target), queryOf(c.target), JSON, c.body, c.caller));
        soft.assertThat(r.status()).as(c.name + ": " + r.bodyText()).isEqualTo(c.expected);
        if (r.status() == 201) {
          // let the accepted job finish, so that its worker's writes do not land in the next case's
          // count
          f.h.awaitStatus(ApiFixture.json(r).get("id").asLong(), "succeeded");
          // and its worker's exit, whose bill writes the job's cost event
          f.h.awaitQuiet();
        }
        if (r.status() >= 400) {
          soft.assertThat(r.header("Content-Type")).as(c.name).hasValue("application/problem+json");
          soft.assertThat(f.rowCounts()).as(c.name + " wrote rows").isEqualTo(before);
        }
      }
    }
    soft.assertAll();
  }

  @Test
  void the_payload_is_stored_as_sent(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb)) {
      ApiResponse r =
          f.post(
              "/jobs",
              "{\"kind\": \"noop\", \"payload\": {\"big\": 12345678901234567890123, \"exact\": 0.1000, \"e\": 1e400, "
                  + "\"s\": \"Grüße \\ud83d\\ude00\", \"nested\": {\"list\": [1, \"two\", null, true]}}}",
              ALICE);

      assertThat(r.status()).isEqualTo(201);
      String stored = f.h.job(ApiFixture.json(r).get("id").asLong()).string("payload");
      assertThat(stored)
          .contains("\"big\": 12345678901234567890123")
          .contains("\"exact\": 0.1000")
          .contains("\"s\": \"Grüße \ud83d\ude00\"")
          .contains("\"list\": [1, \"two\", null, true]");
      assertThat(ApiFixture.json(r).get("payload").get("exact").decimalValue())
          .isEqualByComparingTo("0.1000");
    }
  }

  private static String nested(int depth) {
    return "{\"a\": ".repeat(depth) + "1" + "}".repeat(depth);
  }

  private static String pathOf(String target) {
    int q = target.indexOf('?');
    return q < 0 ? target : target.substring(0, q);
  }

  private static String queryOf(String target) {
    int q = target.indexOf('?');
    return q < 0 ? "" : target.substring(q + 1);
  }
}
