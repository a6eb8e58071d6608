package buildqueue.faults;

import buildqueue.api.ApiRequest;
import buildqueue.api.Caller;
import buildqueue.api.HttpApi;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Generates HTTP requests for {@link HttpApi} from a seed: mostly near-valid ones, bent in the ways
 * clients and attackers bend them. Each generator is a small named piece so a failing request's
 * shape is easy to read back from the report. Deterministic per seed.
 */
final class RequestFuzzer {
  static final List<String> KINDS = List.of("demo", "noop", "gate");
  static final List<String> SQLISH =
      List.of(
          "'; drop table build_job; --",
          "1 OR 1=1",
          "' or ''='",
          "$$; select pg_sleep(10); $$",
          ":now",
          "?",
          "::jsonb",
          "\\",
          "%",
          "_",
          "*/",
          "/*",
          "\"",
          "build_job",
          "null",
          "0x00",
          "%00",
          "${jndi:ldap://x/a}",
          "{{7*7}}",
          "<script>alert(1)</script>",
          "../../etc/passwd",
          "'||(select current_user)||'");
  static final List<String> UNICODE =
      List.of(
          "Grüße",
          "你好",
          "\uD83D\uDE00",
          "\u202Eevil",
          "\uFEFF",
          "e\u0301",
          "\u0000",
          "\u0007",
          "\u001B[31m",
          "\u2028",
          "\uFFFF",
          "\uD800",
          "\uDC00",
          "\u00A0",
          "Ω",
          "\u200B",
          "\r\n",
          "\t");
  static final List<String> METHODS =
      List.of(
          "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "get", "post", "TRACE",
          "CONNECT", "FOO", "", " GET", "GET\r\n");
  static final List<String> PATHS =
      List.of(
          "/",
          "/health",
          "/jobs",
          "/jobs/1",
          "/jobs/1/events",
          "/jobs/1/log",
          "/jobs/1/cancel",
          "/lanes",
          "/users/alice",
          "/jobs/",
          "//jobs",
          "/jobs//1",
          "/jobs/1/",
          "/JOBS",
          "/jobs/abc",
          "/jobs/-1",
          "/jobs/0",
          "/jobs/99999999999999999999",
          "/jobs/1e3",
          "/jobs/%31",
          "/jobs/%zz",
          "/jobs/1%2Fcancel",
          "/jobs/1/cancel/now",
          "/jobs/1/../2",
          "/jobs/%00",
          "/users/",
          "/users/%E2%82%AC",
          "/users/a%00b",
          "jobs",
          "",
          "/health/",
          "/jobs?",
          "/lanes/shared",
          "/users/alice/jobs",
          "/jobs/１");
  static final List<String> QUERIES =
      List.of(
          "",
          "status=queued",
          "status=bogus",
          "status=queued,running,",
          "limit=0",
          "limit=-1",
          "limit=201",
          "limit=abc",
          "limit=1&limit=2",
          "limit=99999999999",
          "userId=bob",
          "userId=",
          "x=1",
          "%zz=1",
          "status=%E2%82",
          "queuedLimit=5",
          "queuedLimit=-5",
          "a&&b",
          "=",
          "&",
          "limit=1e2",
          "status=QUEUED");
  static final List<String> CONTENT_TYPES =
      List.of(
          "application/json",
          "application/json; charset=utf-8",
          "text/plain",
          "application/x-www-form-urlencoded",
          "application/json; charset=latin1",
          "",
          "*/*",
          "application/problem+json",
          "multipart/form-data; boundary=x");

  private final Random random;

  RequestFuzzer(long seed) {
    this.random = new Random(new java.util.SplittableRandom(seed).nextLong());
  }

  /** One request and what kind of bending produced it. */
  record Fuzzed(String shape, ApiRequest request) {}

  Fuzzed next() {
    int pick = random.nextInt(100);
    if (pick < 50) {
      return submit();
    }
    if (pick < 60) {
      return jobRoute();
    }
    if (pick < 70) {
      return list();
    }
    if (pick < 80) {
      return admin();
    }
    return anything();
  }

  private Fuzzed submit() {
    StringBuilder shape = new StringBuilder("submit");
    String body = submitBody(shape);
    byte[] bytes = bend(body, shape);
    return new Fuzzed(
        shape.toString(), new ApiRequest("POST", "/jobs", "", headers(), bytes, caller(shape)));
  }

  private String submitBody(StringBuilder shape) {
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put("kind", oneOf(0.75, () -> quote(pick(KINDS)), () -> value(shape, 3)));
    if (random.nextInt(5) > 0) {
      fields.put("payload", oneOf(0.6, this::demoPayload, () -> value(shape, 6)));
    }
    if (random.nextBoolean()) {
      fields.put(
          "idempotencyKey",
          oneOf(0.6, () -> quote("key-" + random.nextInt(50)), () -> value(shape, 2)));
    }
    if (random.nextInt(10) == 0) {
      fields.put(text(shape), value(shape, 2));
      shape.append(" +unknown-field");
    }
    return object(fields);
  }

  private String demoPayload() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("steps", oneOf(0.7, () -> Integer.toString(random.nextInt(20)), this::number));
    if (random.nextBoolean()) {
      p.put("stepMillis", oneOf(0.7, () -> Integer.toString(random.nextInt(100)), this::number));
    }
    if (random.nextInt(4) == 0) {
      p.put(
          pick(List.of("failAtStep", "crashAtStep", "crashAttempts", "steps ", "Steps")), number());
    }
    return object(p);
  }

  private Fuzzed jobRoute() {
    StringBuilder shape = new StringBuilder("job route");
    String id =
        oneOf(
            0.7,
            () -> Integer.toString(random.nextInt(40)),
            () ->
                pick(
                    List.of(
                        "-1",
                        "0",
                        "abc",
                        "1.5",
                        "99999999999999999999",
                        "%31",
                        "%zz",
                        "1%00",
                        "１",
                        "1 ",
                        "+1",
                        "0x1",
                        "9223372036854775808")));
    String suffix =
        pick(
            List.of(
                "",
                "/events",
                "/log",
                "/log?since=3",
                "/log?since=x",
                "/cancel",
                "/cancel",
                "/events/",
                "/x"));
    String method =
        random.nextInt(4) == 0 ? pick(METHODS) : suffix.startsWith("/cancel") ? "POST" : "GET";
    byte[] body = random.nextInt(4) == 0 ? bend(value(shape, 3), shape) : new byte[0];
    return new Fuzzed(
        shape.toString(),
        new ApiRequest(method, "/jobs/" + id + suffix, "", headers(), body, caller(shape)));
  }

  private Fuzzed list() {
    StringBuilder shape = new StringBuilder("list");
    String query = random.nextInt(3) == 0 ? pick(QUERIES) + "&" + pick(QUERIES) : pick(QUERIES);
    return new Fuzzed(
        shape.toString(),
        new ApiRequest("GET", "/jobs", query, headers(), new byte[0], caller(shape)));
  }

  private Fuzzed admin() {
    StringBuilder shape = new StringBuilder("admin");
    if (random.nextBoolean()) {
      return new Fuzzed(
          shape + " lanes",
          new ApiRequest("GET", "/lanes", pick(QUERIES), headers(), new byte[0], caller(shape)));
    }
    String user =
        oneOf(0.6, () -> pick(List.of("alice", "bob", "carol")), () -> percentEncode(text(shape)));
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put(
        "dedicatedWorker",
        oneOf(0.7, () -> Boolean.toString(random.nextBoolean()), () -> value(shape, 2)));
    if (random.nextInt(8) == 0) {
      fields.put(text(shape), value(shape, 1));
    }
    byte[] body = bend(object(fields), shape);
    return new Fuzzed(
        shape + " user",
        new ApiRequest("PUT", "/users/" + user, "", headers(), body, caller(shape)));
  }

  private Fuzzed anything() {
    StringBuilder shape = new StringBuilder("anything");
    String path = random.nextInt(4) == 0 ? "/" + percentEncode(text(shape)) : pick(PATHS);
    byte[] body = random.nextBoolean() ? bend(value(shape, 4), shape) : new byte[0];
    return new Fuzzed(
        shape.toString(),
        new ApiRequest(
            pick(METHODS),
            path,
            random.nextBoolean() ? "" : pick(QUERIES),
            headers(),
            body,
            caller(shape)));
  }

  // ---- pieces

  private Caller caller(StringBuilder shape) {
    int pick = random.nextInt(100);
    if (pick < 60) {
      return Caller.user(random.nextBoolean() ? "alice" : "bob");
    }
    if (pick < 70) {
      return Caller.admin("root");
    }
    if (pick < 85) {
      shape.append(" +no-caller");
      return null;
    }
    shape.append(" +odd-caller");
    String id =
        pick(
            List.of(
                "",
                " ",
                "a".repeat(HttpApi.MAX_KEY_CHARS + 1),
                "a\u0000b",
                "\uD800",
                "x\ny",
                pick(SQLISH),
                pick(UNICODE)));
    return new Caller(id, random.nextBoolean());
  }

  private Map<String, String> headers() {
    Map<String, String> h = new LinkedHashMap<>();
    if (random.nextInt(6) > 0) {
      h.put("Content-Type", random.nextInt(4) == 0 ? pick(CONTENT_TYPES) : "application/json");
    }
    return h;
  }

  /** Any JSON value, sometimes hostile. */
  private String value(StringBuilder shape, int depth) {
    int pick = random.nextInt(depth <= 0 ? 7 : 10);
    return switch (pick) {
      case 0 -> "null";
      case 1 -> Boolean.toString(random.nextBoolean());
      case 2, 3 -> number();
      case 4, 5 -> quote(text(shape));
      case 6 -> quote("");
      case 7 -> {
        StringBuilder a = new StringBuilder("[");
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
          a.append(i == 0 ? "" : ",").append(value(shape, depth - 1));
        }
        yield a.append(']').toString();
      }
      case 8 -> {
        Map<String, String> o = new LinkedHashMap<>();
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
          o.put(text(shape), value(shape, depth - 1));
        }
        yield object(o);
      }
      default -> {
        int levels = random.nextInt(10) == 0 ? 1 + random.nextInt(20_000) : 1 + random.nextInt(80);
        shape.append(" +nested").append(levels);
        yield "[".repeat(levels) + "1" + "]".repeat(levels);
      }
    };
  }

  private String number() {
    return pick(
        List.of(
            "0",
            "-0",
            "1",
            "-1",
            "2147483648",
            "-2147483649",
            "9223372036854775808",
            "1e308",
            "1e309",
            "-1e400",
            "1e100000",
            "1e-100000",
            "0.1",
            "1.5",
            "1E2",
            "00",
            "01",
            "+1",
            ".5",
            "5.",
            "NaN",
            "Infinity",
            "-Infinity",
            "9".repeat(1 + random.nextInt(1200)),
            "1" + "0".repeat(random.nextInt(400)) + ".0",
            "0x10"));
  }

  private String text(StringBuilder shape) {
    int pick = random.nextInt(10);
    if (pick < 4) {
      return "f" + random.nextInt(100);
    }
    if (pick < 6) {
      shape.append(" +sql-ish");
      return pick(SQLISH);
    }
    if (pick < 9) {
      shape.append(" +unicode");
      StringBuilder b = new StringBuilder();
      int n = 1 + random.nextInt(4);
      for (int i = 0; i < n; i++) {
        b.append(pick(UNICODE));
      }
      return b.toString();
    }
    shape.append(" +long-text");
    return "x".repeat(random.nextInt(70_000));
  }

  /**
   * The body's text, maybe damaged: truncated, padded past the limit, not UTF-8, prefixed,
   * suffixed.
   */
  private byte[] bend(String json, StringBuilder shape) {
    int pick = random.nextInt(100);
    if (pick < 8 && json.length() > 1) {
      shape.append(" +truncated");
      return utf8(json.substring(0, random.nextInt(json.length())));
    }
    if (pick < 11) {
      shape.append(" +oversize");
      return utf8(
          json
              + " "
                  .repeat(
                      HttpApi.MAX_BODY_BYTES
                          + 1
                          - Math.min(json.length(), HttpApi.MAX_BODY_BYTES)));
    }
    if (pick < 15) {
      shape.append(" +not-utf8");
      byte[] b = utf8(json);
      byte[] bad =
          pick(
              List.of(
                  new byte[] {(byte) 0xC3},
                  new byte[] {(byte) 0xFF, (byte) 0xFE},
                  new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
                  new byte[] {(byte) 0xC0, (byte) 0xAF}));
      int at = random.nextInt(b.length + 1);
      byte[] out = new byte[b.length + bad.length];
      System.arraycopy(b, 0, out, 0, at);
      System.arraycopy(bad, 0, out, at, bad.length);
      System.arraycopy(b, at, out, at + bad.length, b.length - at);
      return out;
    }
    if (pick < 18) {
      shape.append(" +utf16");
      return json.getBytes(StandardCharsets.UTF_16);
    }
    if (pick < 22) {
      shape.append(" +garbage-around");
      return utf8(
          pick(List.of("\uFEFF", "", " ", "x", "//c\n", "/*c*/"))
              + json
              + pick(List.of("", "x", "}", ",", " {}", "\u0000", "\n\n", "// c")));
    }
    if (pick < 25) {
      shape.append(" +duplicate-field");
      return utf8(
          json.startsWith("{\"kind\"") ? "{\"kind\": \"noop\", " + json.substring(1) : json);
    }
    if (pick < 27) {
      shape.append(" +single-quotes");
      return utf8(json.replace('"', '\''));
    }
    if (pick < 29) {
      shape.append(" +empty");
      return new byte[0];
    }
    return utf8(json);
  }

  // ---- helpers

  private String oneOf(
      double p,
      java.util.function.Supplier<String> usual,
      java.util.function.Supplier<String> odd) {
    return random.nextDouble() < p ? usual.get() : odd.get();
  }

  private <T> T pick(List<T> list) {
    return list.get(random.nextInt(list.size()));
  }

  private static String object(Map<String, String> fields) {
    StringBuilder b = new StringBuilder("{");
    fields.forEach(
        (k, v) -> b.append(b.length() > 1 ? ", " : "").append(quote(k)).append(": ").append(v));
    return b.append('}').toString();
  }

  /**
   * A JSON string literal; control characters are escaped, lone surrogates pass through as escapes.
   */
  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20 || Character.isSurrogate(c)) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  private static String percentEncode(String s) {
    StringBuilder b = new StringBuilder();
    for (byte x : utf8(s)) {
      int c = x & 0xFF;
      if ((c >= 'a' && c <= 'z')
          || (c >= 'A' && c <= 'Z')
          || (c >= '0' && c <= '9')
          || c == '-'
          || c == '_') {
        b.append((char) c);
      } else {
        b.append('%').append(String.format("%02X", c));
      }
    }
    return b.toString();
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
