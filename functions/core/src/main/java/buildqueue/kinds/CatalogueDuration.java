package buildqueue.kinds;

import java.time.Duration;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A duration as the catalogue writes it: {@code "90s"}, {@code "15m"}, {@code "1h30m"}, {@code
 * "500ms"} (hours, minutes, seconds, milliseconds, in that order, each a whole number).
 */
public final class CatalogueDuration {
  private static final Pattern DURATION =
      Pattern.compile(
          "(?:([0-9]{1,6})h)?(?:([0-9]{1,6})m(?!s))?(?:([0-9]{1,6})s)?(?:([0-9]{1,6})ms)?");

  private CatalogueDuration() {}

  /** The duration {@code text} writes; empty if it is not written the catalogue's way. */
  public static Optional<Duration> parse(String text) {
    Matcher m = DURATION.matcher(text);
    if (text.isEmpty() || !m.matches()) {
      return Optional.empty();
    }
    Duration d = Duration.ZERO;
    d = m.group(1) == null ? d : d.plusHours(Long.parseLong(m.group(1)));
    d = m.group(2) == null ? d : d.plusMinutes(Long.parseLong(m.group(2)));
    d = m.group(3) == null ? d : d.plusSeconds(Long.parseLong(m.group(3)));
    d = m.group(4) == null ? d : d.plusMillis(Long.parseLong(m.group(4)));
    return Optional.of(d);
  }

  /** A duration the way the catalogue writes it, e.g. {@code 54m} or {@code 1h30m}. */
  public static String format(Duration d) {
    if (d.isZero()) {
      return "0s";
    }
    StringBuilder b = new StringBuilder(d.isNegative() ? "-" : "");
    Duration a = d.abs();
    append(b, a.toHours(), "h");
    append(b, a.toMinutesPart(), "m");
    append(b, a.toSecondsPart(), "s");
    append(b, a.toMillisPart(), "ms");
    return b.toString();
  }

  private static void append(StringBuilder b, long n, String unit) {
    if (n != 0) {
      b.append(n).append(unit);
    }
  }
}
