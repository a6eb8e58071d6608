package buildqueue.local;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** One command's arguments: positionals in order, {@code --flag value} and {@code --switch}. */
final class CommandLine {
  /** Bad usage: the message says what to change; the CLI exits 2. */
  static final class UsageException extends RuntimeException {
    UsageException(String message) {
      super(message);
    }
  }

  private final String command;
  private final List<String> positionals = new ArrayList<>();
  private final Map<String, String> values = new LinkedHashMap<>();

  private CommandLine(String command) {
    this.command = command;
  }

  /**
   * Parses {@code args} for {@code command}, accepting only the given flags (which take a value)
   * and switches (which do not). {@code --flag=value} works too.
   */
  static CommandLine parse(
      String command, List<String> args, Set<String> flags, Set<String> switches) {
    CommandLine cl = new CommandLine(command);
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (!a.startsWith("--") || a.equals("--")) {
        cl.positionals.add(a);
        continue;
      }
      String name = a.substring(2);
      String value = null;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      }
      if (switches.contains(name)) {
        if (value != null) {
          throw new UsageException("--" + name + " takes no value");
        }
        cl.values.put(name, "true");
      } else if (flags.contains(name)) {
        if (value == null) {
          if (i + 1 >= args.size()) {
            throw new UsageException("--" + name + " needs a value");
          }
          value = args.get(++i);
        }
        cl.values.put(name, value);
      } else {
        List<String> known = new ArrayList<>();
        flags.forEach(f -> known.add("--" + f + " <value>"));
        switches.forEach(s -> known.add("--" + s));
        throw new UsageException(
            "unknown option --"
                + name
                + " for "
                + command
                + (known.isEmpty()
                    ? " (it takes none)"
                    : "; it takes " + String.join(", ", known)));
      }
    }
    return cl;
  }

  List<String> positionals() {
    return positionals;
  }

  String positional(int index, String what) {
    if (index >= positionals.size()) {
      throw new UsageException(command + " needs " + what);
    }
    return positionals.get(index);
  }

  void atMostPositionals(int n, String usage) {
    if (positionals.size() > n) {
      throw new UsageException(
          "unexpected argument \"" + positionals.get(n) + "\"; usage: " + usage);
    }
  }

  boolean has(String name) {
    return values.containsKey(name);
  }

  String get(String name, String fallback) {
    return values.getOrDefault(name, fallback);
  }

  int intValue(String name, int fallback, int min, int max) {
    String v = values.get(name);
    if (v == null) {
      return fallback;
    }
    try {
      int n = Integer.parseInt(v.strip());
      if (n < min || n > max) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new UsageException(
          "--" + name + " must be a whole number from " + min + " to " + max + ", was " + v);
    }
  }

  /** A duration such as {@code 500ms}, {@code 5s}, {@code 2m}, {@code 1h} or {@code 7d}. */
  Duration duration(String name, Duration fallback) {
    String v = values.get(name);
    return v == null ? fallback : parseDuration("--" + name, v);
  }

  static Duration parseDuration(String what, String text) {
    String v = text.strip().toLowerCase(java.util.Locale.ROOT);
    try {
      if (v.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
      }
      long n = Long.parseLong(v.substring(0, v.length() - 1));
      switch (v.charAt(v.length() - 1)) {
        case 's':
          return Duration.ofSeconds(n);
        case 'm':
          return Duration.ofMinutes(n);
        case 'h':
          return Duration.ofHours(n);
        case 'd':
          return Duration.ofDays(n);
        default:
          break;
      }
    } catch (RuntimeException e) {
      // fall through to the message
    }
    throw new UsageException(
        what + " must be a duration such as 500ms, 5s, 2m, 1h or 7d, was \"" + text + "\"");
  }

  /**
   * A size in bytes: a whole number, or one with {@code k}, {@code m} or {@code g} (KiB, MiB, GiB).
   */
  long bytes(String name, long fallback) {
    String v = values.get(name);
    if (v == null) {
      return fallback;
    }
    String t = v.strip().toLowerCase(java.util.Locale.ROOT);
    long unit = 1;
    if (!t.isEmpty() && "kmg".indexOf(t.charAt(t.length() - 1)) >= 0) {
      unit = 1L << (10 * ("kmg".indexOf(t.charAt(t.length() - 1)) + 1));
      t = t.substring(0, t.length() - 1);
    }
    try {
      long n = Long.parseLong(t);
      if (n >= 1 && n <= Long.MAX_VALUE / unit) {
        return n * unit;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new UsageException(
        "--"
            + name
            + " must be a positive size in bytes such as 1048576, 512k, 100m or 1g, was \""
            + v
            + "\"");
  }
}
