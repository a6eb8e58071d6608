package buildqueue.kinds;

import buildqueue.core.QueueConfig;
import buildqueue.worker.DemoJobHandler;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobHandlers;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The job kinds the operator defines, from one JSON file that every part reads: the API checks
 * submissions against it, the worker runs jobs from it. Immutable.
 *
 * <pre>
 * {"kinds": {"render-article": {"command": ["node", "/opt/render/index.js"], "timeout": "15m",
 *   "payloadSchema": {...}, "retryExitCodes": [75], "env": {"NODE_ENV": "production"},
 *   "cancelGracePeriod": "10s"}}}
 * </pre>
 *
 * <p>Per kind: {@code command} (required; an argv array of non-empty strings, never a shell
 * string), {@code timeout} (required; at most {@link #maxTimeout}), {@code payloadSchema} (a JSON
 * Schema, default any JSON object), {@code retryExitCodes} (1 to 255, default none), {@code env}
 * (fixed variables, default none; no {@code BUILDQUEUE_} names) and {@code cancelGracePeriod}
 * (default {@link CommandKind#DEFAULT_CANCEL_GRACE_PERIOD}, at most the lease slack). Durations are
 * written like {@code "90s"}, {@code "15m"}, {@code "1h30m"} or {@code "500ms"}. A kind's name is 1
 * to 64 of {@code a-z 0-9 . _ -}, starting with a letter or digit; {@code demo} is built in.
 *
 * <p>Strict: the file must be JSON with no duplicate keys; an unknown key or a bad value anywhere
 * refuses the whole file with a {@link KindCatalogueException} that names the file, the kind and
 * the key.
 */
public final class KindCatalogue {
  /** Where a worker process (and the API function on AWS) finds the catalogue: an absolute path. */
  public static final String FILE_VARIABLE = "BUILDQUEUE_KINDS_FILE";
  public static final int MAX_NAME_CHARS = 64;
  public static final int MIN_EXIT_CODE = 1;
  public static final int MAX_EXIT_CODE = 255;

  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final String RESERVED_ENV_PREFIX = "BUILDQUEUE_";
  private static final Pattern DURATION =
      Pattern.compile("(?:([0-9]{1,6})h)?(?:([0-9]{1,6})m(?!s))?(?:([0-9]{1,6})s)?(?:([0-9]{1,6})ms)?");
  private static final String DURATION_FORM = "a duration such as \"90s\", \"15m\" or \"1h30m\"";
  private static final Set<String> KEYS = Collections.unmodifiableSet(new LinkedHashSet<>(List.of(
      "command", "timeout", "payloadSchema", "retryExitCodes", "env", "cancelGracePeriod")));
  private static final String EXAMPLE =
      "{\"kinds\": {\"render\": {\"command\": [\"node\", \"/opt/render/index.js\"], \"timeout\": \"15m\"}}}";
  private static final ObjectMapper STRICT = JsonMapper.builder()
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  private final Optional<Path> file;
  private final String json;
  private final Map<String, CommandKind> kinds;

  private KindCatalogue(Optional<Path> file, String json, Map<String, CommandKind> kinds) {
    this.file = file;
    this.json = json;
    this.kinds = Collections.unmodifiableMap(kinds);
  }

  /** No catalogue: only the built-in {@code demo} kind exists. */
  public static KindCatalogue none() {
    return new KindCatalogue(Optional.empty(), "{\"kinds\": {}}", Map.of());
  }

  /**
   * Reads and checks the catalogue; {@code config} is the queue's, whose worker lifetime bounds each
   * kind's timeout. Throws {@link KindCatalogueException} naming {@code file}, the kind and the key.
   */
  public static KindCatalogue load(Path file, QueueConfig config) {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new KindCatalogueException(file + ": cannot read the kind catalogue: there is no such file", e);
    } catch (IOException e) {
      throw new KindCatalogueException(file + ": cannot read the kind catalogue: " + e, e);
    }
    String json = new String(bytes, StandardCharsets.UTF_8);
    return new KindCatalogue(Optional.of(file), json, parseKinds(file.toString(), json, config));
  }

  /** Checks catalogue text as {@link #load} does; {@code source} names it in messages. */
  public static KindCatalogue parse(String source, String json, QueueConfig config) {
    return new KindCatalogue(Optional.empty(), json, parseKinds(source, json, config));
  }

  /** The longest timeout a kind may have: a job taken at the end of the chain window still ends before the worker must. */
  public static Duration maxTimeout(QueueConfig config) {
    return config.workerLifetime().minus(config.chainWindow()).minus(config.deadlineMargin());
  }

  /** The file this catalogue was loaded from; empty for {@link #none()} and {@link #parse}. */
  public Optional<Path> file() {
    return file;
  }

  /**
   * The text these kinds were read from, so that a process can hand other processes exactly the
   * catalogue it checked, not whatever the file holds by then.
   */
  public String json() {
    return json;
  }

  /** The kinds in file order. */
  public List<CommandKind> kinds() {
    return List.copyOf(kinds.values());
  }

  public Optional<CommandKind> kind(String name) {
    return Optional.ofNullable(kinds.get(name));
  }

  /**
   * The handlers a process knows: the built-in {@code demo} and one {@link CommandJobHandler} per
   * kind, each running its jobs through {@code runner}.
   */
  public JobHandlers handlers(CommandRunner runner) {
    return JobHandlers.builtIn().with(kinds.values().stream()
        .map(k -> new CommandJobHandler(k, runner))
        .toArray(JobHandler[]::new));
  }

  @Override
  public String toString() {
    return "KindCatalogue[" + file.map(Path::toString).orElse("no file") + ": " + String.join(", ", kinds.keySet()) + "]";
  }

  // ---- parsing

  private static Map<String, CommandKind> parseKinds(String source, String json, QueueConfig config) {
    JsonNode root = strictJson(source, json);
    if (root == null || root.isMissingNode()) {
      throw new KindCatalogueException(source + ": the kind catalogue is empty; write it like " + EXAMPLE);
    }
    if (!root.isObject()) {
      throw new KindCatalogueException(source + ": the kind catalogue must be a JSON object like " + EXAMPLE
          + ", not " + JsonSchemas.kindOf(root));
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!key.equals("kinds")) {
        throw new KindCatalogueException(source + ": unknown key " + quote(key)
            + " at the top level; the file holds one key, \"kinds\", like " + EXAMPLE);
      }
    }
    JsonNode list = root.get("kinds");
    if (list == null || !list.isObject()) {
      throw new KindCatalogueException(source + ": \"kinds\" must be an object of kinds by name, like " + EXAMPLE
          + (list == null ? "; it is missing" : ", not " + JsonSchemas.kindOf(list)));
    }
    Map<String, CommandKind> kinds = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = list.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      CommandKind kind = new KindReader(source, entry.getKey(), config).read(entry.getValue());
      kinds.put(kind.name(), kind);
    }
    return kinds;
  }

  private static JsonNode strictJson(String source, String json) {
    try {
      return STRICT.readTree(json);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String where = at == null ? "" : "line " + at.getLineNr() + ", column " + at.getColumnNr() + ": ";
      throw new KindCatalogueException(source + ": " + where + "not valid JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * A duration as the catalogue writes it: {@code "90s"}, {@code "15m"}, {@code "1h30m"}, {@code
   * "500ms"} (hours, minutes, seconds, milliseconds, in that order, each a whole number).
   */
  public static Optional<Duration> parseDuration(String text) {
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

  /** A string as JSON writes it: quoted, with control characters escaped, so messages stay one line. */
  static String quote(String s) {
    try {
      return STRICT.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a string always serializes", e);
    }
  }

  /** Reads one kind; every refusal names the file, the kind and the key. */
  private static final class KindReader {
    private final String source;
    private final String name;
    private final QueueConfig config;

    KindReader(String source, String name, QueueConfig config) {
      this.source = source;
      this.name = name;
      this.config = config;
    }

    CommandKind read(JsonNode spec) {
      if (!NAME.matcher(name).matches()) {
        throw refused("the name must be 1 to " + MAX_NAME_CHARS
            + " characters of lower-case letters, digits, '.', '_' and '-', starting with a letter or digit");
      }
      if (name.equals(DemoJobHandler.KIND)) {
        throw refused("\"demo\" is built in and cannot be redefined; give the kind another name");
      }
      if (!spec.isObject()) {
        throw refused("a kind must be an object with at least \"command\" and \"timeout\", not "
            + JsonSchemas.kindOf(spec));
      }
      for (Iterator<String> it = spec.fieldNames(); it.hasNext(); ) {
        String key = it.next();
        if (!KEYS.contains(key)) {
          throw refused("unknown key " + quote(key) + closest(key) + "; a kind's keys are " + String.join(", ", KEYS));
        }
      }
      List<String> command = command(spec.get("command"));
      Duration timeout = timeout(spec.get("timeout"));
      PayloadSchema schema = payloadSchema(spec.get("payloadSchema"));
      Set<Integer> retry = retryExitCodes(spec.get("retryExitCodes"));
      Map<String, String> env = env(spec.get("env"));
      Duration grace = cancelGracePeriod(spec.get("cancelGracePeriod"));
      return new CommandKind(name, command, timeout, schema, retry, env, grace);
    }

    private List<String> command(JsonNode node) {
      if (node == null || node.isNull()) {
        throw refused("command", "is missing: give the program and its arguments as an array, e.g. "
            + "[\"node\", \"/opt/render/index.js\"]");
      }
      if (node.isTextual()) {
        List<String> words = List.of(node.textValue().trim().split("\\s+"));
        throw refused("command", "must be an array of the program and its arguments, not a string: the queue runs"
            + " the program itself, never through a shell; write it as " + json(words)
            + " (or [\"/bin/sh\", \"-c\", \"...\"] if you need a shell)");
      }
      if (!node.isArray() || node.isEmpty()) {
        throw refused("command", "must be a non-empty array of the program and its arguments, e.g. "
            + "[\"node\", \"/opt/render/index.js\"], not " + (node.isArray() ? "an empty array" : JsonSchemas.kindOf(node)));
      }
      List<String> argv = new ArrayList<>();
      for (int i = 0; i < node.size(); i++) {
        JsonNode arg = node.get(i);
        if (!arg.isTextual() || arg.textValue().isEmpty() || arg.textValue().indexOf('\0') >= 0) {
          throw refused("command", "element " + i + " must be a non-empty string without NUL characters, not "
              + (arg.isTextual() ? (arg.textValue().isEmpty() ? "an empty string" : "a string with a NUL") : JsonSchemas.kindOf(arg)));
        }
        argv.add(arg.textValue());
      }
      return argv;
    }

    private Duration timeout(JsonNode node) {
      if (node == null || node.isNull()) {
        throw refused("timeout", "is missing: say how long a job may run before it is stopped and fails, as "
            + DURATION_FORM);
      }
      Duration timeout = duration("timeout", node);
      if (timeout.isZero()) {
        throw refused("timeout", "must be longer than 0s");
      }
      Duration max = maxTimeout(config);
      if (timeout.compareTo(max) > 0) {
        throw refused("timeout", "is " + format(timeout) + ", longer than a worker can give one job: at most "
            + format(max) + " (the worker lifetime " + format(config.workerLifetime()) + " less the chain window "
            + format(config.chainWindow()) + " and the deadline margin " + format(config.deadlineMargin())
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
      if (grace.compareTo(config.leaseSlack()) > 0) {
        throw refused("cancelGracePeriod", "is " + format(grace) + "; at most " + format(config.leaseSlack())
            + " (the lease's slack past the worker lifetime), so that a job stopped at its timeout is gone before"
            + " its worker's lease runs out");
      }
      return grace;
    }

    private Duration duration(String key, JsonNode node) {
      Optional<Duration> d = node.isTextual() ? parseDuration(node.textValue()) : Optional.empty();
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
        throw refused("retryExitCodes", "must be an array of exit codes, e.g. [75], not " + JsonSchemas.kindOf(node));
      }
      Set<Integer> codes = new LinkedHashSet<>();
      for (JsonNode code : node) {
        if (code.isIntegralNumber() && code.canConvertToInt() && code.intValue() == 0) {
          throw refused("retryExitCodes", "holds 0, which is success; retry codes are " + MIN_EXIT_CODE + " to "
              + MAX_EXIT_CODE + " (75, EX_TEMPFAIL, is the usual one)");
        }
        if (!code.isIntegralNumber() || !code.canConvertToInt() || code.intValue() < MIN_EXIT_CODE
            || code.intValue() > MAX_EXIT_CODE) {
          throw refused("retryExitCodes", "must hold whole numbers from " + MIN_EXIT_CODE + " to " + MAX_EXIT_CODE
              + ", not " + code);
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
        throw refused("env", "must be an object of variable names to string values, e.g. {\"NODE_ENV\": \"production\"},"
            + " not " + JsonSchemas.kindOf(node));
      }
      Map<String, String> env = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        String var = e.getKey();
        if (!ENV_NAME.matcher(var).matches()) {
          throw refused("env", "has the variable name " + quote(var)
              + "; a name is letters, digits and '_', not starting with a digit");
        }
        if (var.regionMatches(true, 0, RESERVED_ENV_PREFIX, 0, RESERVED_ENV_PREFIX.length())) {
          throw refused("env", "sets " + var + ", but names starting with " + RESERVED_ENV_PREFIX
              + " are the queue's own (the job's id, payload file, control file, ...); choose another name");
        }
        JsonNode value = e.getValue();
        if (!value.isTextual() || value.textValue().indexOf('\0') >= 0) {
          throw refused("env", "gives " + var + " " + (value.isTextual() ? "a value with a NUL character"
              : JsonSchemas.kindOf(value)) + "; a value must be a string (quote numbers: \"1\")");
        }
        env.put(var, value.textValue());
      }
      return env;
    }

    private KindCatalogueException refused(String key, String problem) {
      return new KindCatalogueException(source + ": kind " + quote(name) + ": \"" + key + "\" " + problem);
    }

    private KindCatalogueException refused(String problem) {
      return new KindCatalogueException(source + ": kind " + quote(name) + ": " + problem);
    }

    private static String closest(String key) {
      for (String known : KEYS) {
        if (known.equalsIgnoreCase(key) || editDistance(known.toLowerCase(), key.toLowerCase()) <= 2) {
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
