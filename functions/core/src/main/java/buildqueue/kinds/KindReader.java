package buildqueue.kinds;

import static buildqueue.kinds.CatalogueDuration.format;
import static buildqueue.kinds.CatalogueReader.quote;

import buildqueue.platform.Capacity;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads one kind of the catalogue into a {@link CommandKind}, checking each key against its rule
 * and the worker's {@link KindLimits}; every refusal names the file, the kind and the key.
 */
final class KindReader {
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final String RESERVED_ENV_PREFIX = "BUILDQUEUE_";
  private static final String DURATION_FORM = "a duration such as \"90s\", \"15m\" or \"1h30m\"";
  private static final Set<String> KEYS =
      Collections.unmodifiableSet(
          new LinkedHashSet<>(
              List.of(
                  "command",
                  "timeout",
                  "payloadSchema",
                  "retryExitCodes",
                  "env",
                  "cancelGracePeriod",
                  "capacity",
                  "artifacts")));

  private final String source;
  private final String name;
  private final KindLimits limits;

  KindReader(String source, String name, KindLimits limits) {
    this.source = source;
    this.name = name;
    this.limits = limits;
  }

  CommandKind read(JsonNode spec) {
    if (!NAME.matcher(name).matches()) {
      throw refused(
          "the name must be 1 to "
              + KindCatalogue.MAX_NAME_CHARS
              + " characters of lower-case letters, digits, '.', '_' and '-', starting with a letter or digit");
    }
    if (name.equals(DemoKind.NAME)) {
      throw refused("\"demo\" is built in and cannot be redefined; give the kind another name");
    }
    if (!spec.isObject()) {
      throw refused(
          "a kind must be an object with at least \"command\" and \"timeout\", not "
              + JsonSchemas.kindOf(spec));
    }
    for (Iterator<String> it = spec.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!KEYS.contains(key)) {
        throw refused(
            "unknown key "
                + quote(key)
                + closest(key)
                + "; a kind's keys are "
                + String.join(", ", KEYS));
      }
    }
    List<String> command = command(spec.get("command"));
    Duration timeout = timeout(spec.get("timeout"));
    PayloadSchema schema = payloadSchema(spec.get("payloadSchema"));
    Set<Integer> retry = retryExitCodes(spec.get("retryExitCodes"));
    Map<String, String> env = env(spec.get("env"));
    Duration grace = cancelGracePeriod(spec.get("cancelGracePeriod"));
    Optional<Capacity> capacity = capacity(spec.get("capacity"));
    ArtifactLimits artifacts = artifacts(spec.get("artifacts"));
    return new CommandKind(name, command, timeout, schema, retry, env, grace, capacity, artifacts);
  }

  private static final List<String> ARTIFACT_KEYS =
      List.of("maxFiles", "maxFileBytes", "maxTotalBytes");

  /**
   * {@code {"maxFiles": n, "maxFileBytes": n, "maxTotalBytes": n}}, each optional and at most the
   * queue's own ({@link ArtifactLimits#GLOBAL}), which a missing one keeps.
   */
  private ArtifactLimits artifacts(JsonNode node) {
    ArtifactLimits global = ArtifactLimits.GLOBAL;
    if (node == null || node.isNull()) {
      return global;
    }
    if (!node.isObject()) {
      throw refused(
          "artifacts",
          "must be an object with any of "
              + String.join(", ", ARTIFACT_KEYS)
              + ", not "
              + JsonSchemas.kindOf(node));
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!ARTIFACT_KEYS.contains(key)) {
        throw refused(
            "artifacts",
            "has an unknown key "
                + quote(key)
                + "; its keys are "
                + String.join(", ", ARTIFACT_KEYS));
      }
    }
    return new ArtifactLimits(
        (int) artifactLimit(node, "maxFiles", global.maxFiles()),
        artifactLimit(node, "maxFileBytes", global.maxFileBytes()),
        artifactLimit(node, "maxTotalBytes", global.maxTotalBytes()));
  }

  private long artifactLimit(JsonNode node, String key, long global) {
    JsonNode v = node.get(key);
    if (v == null || v.isNull()) {
      return global;
    }
    if (!v.isIntegralNumber()
        || !v.canConvertToLong()
        || v.longValue() < 0
        || v.longValue() > global) {
      throw refused(
          "artifacts",
          "."
              + key
              + " must be a whole number from 0 to "
              + global
              + " (the queue's own limit), not "
              + v);
    }
    return v.longValue();
  }

  private Optional<Capacity> capacity(JsonNode node) {
    if (node == null || node.isNull()) {
      return Optional.empty();
    }
    if (!node.isTextual()) {
      throw refused(
          "capacity", "must be one of " + Capacity.labels() + ", not " + JsonSchemas.kindOf(node));
    }
    try {
      return Optional.of(Capacity.ofLabel(node.textValue()));
    } catch (IllegalArgumentException e) {
      throw refused(
          "capacity",
          "is "
              + quote(node.textValue())
              + "; it must be one of "
              + Capacity.labels()
              + " (\"spot\" runs on Fargate Spot, \"spot-then-on-demand\" falls back to on-demand"
              + " when Spot has no capacity)");
    }
  }

  private List<String> command(JsonNode node) {
    if (node == null || node.isNull()) {
      throw refused(
          "command",
          "is missing: give the program and its arguments as an array, e.g. "
              + "[\"node\", \"/opt/render/index.js\"]");
    }
    if (node.isTextual()) {
      List<String> words = List.of(node.textValue().trim().split("\\s+"));
      throw refused(
          "command",
          "must be an array of the program and its arguments, not a string: the queue runs"
              + " the program itself, never through a shell; write it as "
              + json(words)
              + " (or [\"/bin/sh\", \"-c\", \"...\"] if you need a shell)");
    }
    if (!node.isArray() || node.isEmpty()) {
      throw refused(
          "command",
          "must be a non-empty array of the program and its arguments, e.g. "
              + "[\"node\", \"/opt/render/index.js\"], not "
              + (node.isArray() ? "an empty array" : JsonSchemas.kindOf(node)));
    }
    List<String> argv = new ArrayList<>();
    for (int i = 0; i < node.size(); i++) {
      JsonNode arg = node.get(i);
      if (!arg.isTextual() || arg.textValue().isEmpty() || arg.textValue().indexOf('\0') >= 0) {
        throw refused(
            "command",
            "element "
                + i
                + " must be a non-empty string without NUL characters, not "
                + (arg.isTextual()
                    ? (arg.textValue().isEmpty() ? "an empty string" : "a string with a NUL")
                    : JsonSchemas.kindOf(arg)));
      }
      argv.add(arg.textValue());
    }
    return argv;
  }

  private Duration timeout(JsonNode node) {
    if (node == null || node.isNull()) {
      throw refused(
          "timeout",
          "is missing: say how long a job may run before it is stopped and fails, as "
              + DURATION_FORM);
    }
    Duration timeout = duration("timeout", node);
    if (timeout.isZero()) {
      throw refused("timeout", "must be longer than 0s");
    }
    Duration max = limits.maxTimeout();
    if (timeout.compareTo(max) > 0) {
      throw refused(
          "timeout",
          "is "
              + format(timeout)
              + ", longer than a worker can give one job: at most "
              + format(max)
              + " (the worker lifetime "
              + format(limits.workerLifetime())
              + " less the chain window "
              + format(limits.chainWindow())
              + " and the deadline margin "
              + format(limits.deadlineMargin())
              + "). Shorten it, or raise the worker lifetime (serve --worker-lifetime locally; the stack parameter"
              + " WorkerLifetimeMinutes on AWS)");
    }
    return timeout;
  }

  private Duration cancelGracePeriod(JsonNode node) {
    if (node == null || node.isNull()) {
      return CommandKind.DEFAULT_CANCEL_GRACE_PERIOD;
    }
    Duration grace = duration("cancelGracePeriod", node);
    if (grace.compareTo(limits.maxCancelGracePeriod()) > 0) {
      throw refused(
          "cancelGracePeriod",
          "is "
              + format(grace)
              + "; at most "
              + format(limits.maxCancelGracePeriod())
              + " (the lease's slack past the worker lifetime), so that a job stopped at its timeout is gone before"
              + " its worker's lease runs out");
    }
    return grace;
  }

  private Duration duration(String key, JsonNode node) {
    Optional<Duration> d =
        node.isTextual() ? CatalogueDuration.parse(node.textValue()) : Optional.empty();
    return d.orElseThrow(() -> refused(key, "must be " + DURATION_FORM + ", not " + node));
  }

  private PayloadSchema payloadSchema(JsonNode node) {
    if (node == null || node.isNull()) {
      return PayloadSchema.ANY_OBJECT;
    }
    try {
      return JsonSchemas.compile(node);
    } catch (IllegalArgumentException e) {
      throw refused("payloadSchema", e.getMessage());
    }
  }

  private Set<Integer> retryExitCodes(JsonNode node) {
    if (node == null || node.isNull()) {
      return Set.of();
    }
    if (!node.isArray()) {
      throw refused(
          "retryExitCodes",
          "must be an array of exit codes, e.g. [75], not " + JsonSchemas.kindOf(node));
    }
    Set<Integer> codes = new LinkedHashSet<>();
    for (JsonNode code : node) {
      if (code.isIntegralNumber() && code.canConvertToInt() && code.intValue() == 0) {
        throw refused(
            "retryExitCodes",
            "holds 0, which is success; retry codes are "
                + KindCatalogue.MIN_EXIT_CODE
                + " to "
                + KindCatalogue.MAX_EXIT_CODE
                + " (75, EX_TEMPFAIL, is the usual one)");
      }
      if (!code.isIntegralNumber()
          || !code.canConvertToInt()
          || code.intValue() < KindCatalogue.MIN_EXIT_CODE
          || code.intValue() > KindCatalogue.MAX_EXIT_CODE) {
        throw refused(
            "retryExitCodes",
            "must hold whole numbers from "
                + KindCatalogue.MIN_EXIT_CODE
                + " to "
                + KindCatalogue.MAX_EXIT_CODE
                + ", not "
                + code);
      }
      codes.add(code.intValue());
    }
    return codes;
  }

  private Map<String, String> env(JsonNode node) {
    if (node == null || node.isNull()) {
      return Map.of();
    }
    if (!node.isObject()) {
      throw refused(
          "env",
          "must be an object of variable names to string values, e.g. {\"NODE_ENV\": \"production\"},"
              + " not "
              + JsonSchemas.kindOf(node));
    }
    Map<String, String> env = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String var = e.getKey();
      if (!ENV_NAME.matcher(var).matches()) {
        throw refused(
            "env",
            "has the variable name "
                + quote(var)
                + "; a name is letters, digits and '_', not starting with a digit");
      }
      if (var.regionMatches(true, 0, RESERVED_ENV_PREFIX, 0, RESERVED_ENV_PREFIX.length())) {
        throw refused(
            "env",
            "sets "
                + var
                + ", but names starting with "
                + RESERVED_ENV_PREFIX
                + " are the queue's own (the job's id, payload file, control file, ...); choose another name");
      }
      JsonNode value = e.getValue();
      if (!value.isTextual() || value.textValue().indexOf('\0') >= 0) {
        throw refused(
            "env",
            "gives "
                + var
                + " "
                + (value.isTextual() ? "a value with a NUL character" : JsonSchemas.kindOf(value))
                + "; a value must be a string (quote numbers: \"1\")");
      }
      env.put(var, value.textValue());
    }
    return env;
  }

  private KindCatalogueException refused(String key, String problem) {
    return new KindCatalogueException(
        source + ": kind " + quote(name) + ": \"" + key + "\" " + problem);
  }

  private KindCatalogueException refused(String problem) {
    return new KindCatalogueException(source + ": kind " + quote(name) + ": " + problem);
  }

  private static String closest(String key) {
    for (String known : KEYS) {
      if (known.equalsIgnoreCase(key)
          || editDistance(known.toLowerCase(), key.toLowerCase()) <= 2) {
        return " (did you mean \"" + known + "\"?)";
      }
    }
    return "";
  }

  private static String json(List<String> words) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < words.size(); i++) {
      b.append(i == 0 ? "" : ", ").append(quote(words.get(i)));
    }
    return b.append(']').toString();
  }

  private static int editDistance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitution = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        cur[j] = Math.min(substitution, Math.min(prev[j] + 1, cur[j - 1] + 1));
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }
}
