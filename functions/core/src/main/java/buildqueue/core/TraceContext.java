package buildqueue.core;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A W3C Trace Context {@code traceparent} (version {@code 00}): a trace id, the caller's span id
 * (the "parent id") and flags. A job keeps the one its submitter sent; each attempt's program gets
 * one with the same trace id and flags and a span id of its own ({@link #newSpan}), so its spans
 * join the submitter's trace as children of the job.
 */
public record TraceContext(String traceId, String parentId, String flags) {
  private static final Pattern FORMAT =
      Pattern.compile("00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})");
  private static final SecureRandom RANDOM = new SecureRandom();

  /** The header's name, in requests and in a program's environment (upper case there). */
  public static final String HEADER = "traceparent";

  /**
   * What a valid header looks like, for error messages: version {@code 00}, 32 and 16 lower-case
   * hex digits not all zero, 2 of flags.
   */
  public static final String EXPECTED =
      "00-<32 lower-case hex digits, not all zero>-<16 lower-case hex digits, not all zero>-<2 hex"
          + " digits of flags>, e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** The header's value, or empty when it is not a valid version-00 {@code traceparent}. */
  public static Optional<TraceContext> parse(String header) {
    if (header == null) {
      return Optional.empty();
    }
    var m = FORMAT.matcher(header.strip());
    if (!m.matches() || allZero(m.group(1)) || allZero(m.group(2))) {
      return Optional.empty();
    }
    return Optional.of(new TraceContext(m.group(1), m.group(2), m.group(3)));
  }

  private static boolean allZero(String hex) {
    return hex.chars().allMatch(c -> c == '0');
  }

  /** The header's text. */
  public String header() {
    return "00-" + traceId + "-" + parentId + "-" + flags;
  }

  /** The same trace and flags with a new random span id (never all zero). */
  public TraceContext newSpan() {
    byte[] span = new byte[8];
    do {
      RANDOM.nextBytes(span);
    } while (allZero(HexFormat.of().formatHex(span)));
    return new TraceContext(traceId, HexFormat.of().formatHex(span), flags);
  }
}
