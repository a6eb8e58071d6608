package buildqueue.aws;

import buildqueue.BuildQueueException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * Reads and checks single environment variables for {@link AwsSettings}; every failure names the
 * variable and says what it needs.
 */
final class EnvironmentReader {
  private final Function<String, String> env;

  EnvironmentReader(Function<String, String> env) {
    this.env = env;
  }

  Optional<String> optional(String name) {
    String v = env.apply(name);
    return v == null || v.isBlank() ? Optional.empty() : Optional.of(v.trim());
  }

  String required(String name) {
    return optional(name)
        .orElseThrow(
            () ->
                new BuildQueueException(
                    "environment variable "
                        + name
                        + " is not set; template.yaml sets it (README: Deploying and redeploying)"));
  }

  String or(String name, String fallback) {
    return optional(name).orElse(fallback);
  }

  long positiveLong(String name) {
    return checkPositive(name, parseLong(name, required(name)));
  }

  long positiveLong(String name, long fallback) {
    return optional(name).map(v -> checkPositive(name, parseLong(name, v))).orElse(fallback);
  }

  long nonNegativeLong(String name, long fallback) {
    long v = optional(name).map(s -> parseLong(name, s)).orElse(fallback);
    if (v < 0) {
      throw new BuildQueueException(
          "environment variable " + name + " must not be negative, was " + v);
    }
    return v;
  }

  boolean bool(String name, boolean fallback) {
    Optional<String> v = optional(name);
    if (v.isEmpty()) {
      return fallback;
    }
    String s = v.get().toLowerCase(Locale.ROOT);
    if (s.equals("true") || s.equals("enabled")) {
      return true;
    }
    if (s.equals("false") || s.equals("disabled")) {
      return false;
    }
    throw new BuildQueueException(
        "environment variable " + name + " must be true or false, was \"" + v.get() + "\"");
  }

  List<String> list(String name, boolean required) {
    Optional<String> v = required ? Optional.of(required(name)) : optional(name);
    List<String> items =
        v.map(s -> Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList())
            .orElse(List.of());
    if (required && items.isEmpty()) {
      throw new BuildQueueException(
          "environment variable " + name + " must list at least one value, comma-separated");
    }
    return items;
  }

  Path absolutePath(String name) {
    String v = required(name);
    Path path = Path.of(v);
    if (!path.isAbsolute()) {
      throw new BuildQueueException(
          "environment variable " + name + " must be an absolute path, was \"" + v + "\"");
    }
    return path;
  }

  UUID uuid(String name) {
    String v = required(name);
    try {
      return UUID.fromString(v);
    } catch (IllegalArgumentException e) {
      // The value is a credential of sorts: say what is wrong, not what it is.
      throw new BuildQueueException("environment variable " + name + " must be a UUID", e);
    }
  }

  private static long parseLong(String name, String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new BuildQueueException(
          "environment variable " + name + " must be a whole number, was \"" + v + "\"", e);
    }
  }

  private static long checkPositive(String name, long v) {
    if (v < 1) {
      throw new BuildQueueException(
          "environment variable " + name + " must be at least 1, was " + v);
    }
    return v;
  }
}
