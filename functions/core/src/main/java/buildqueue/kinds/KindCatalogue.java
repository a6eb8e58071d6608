package buildqueue.kinds;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

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
 * string), {@code timeout} (required; at most {@link KindLimits#maxTimeout}), {@code payloadSchema}
 * (a JSON Schema, default any JSON object), {@code retryExitCodes} (1 to 255, default none), {@code
 * env} (fixed variables, default none; no {@code BUILDQUEUE_} names) and {@code cancelGracePeriod}
 * (default {@link CommandKind#DEFAULT_CANCEL_GRACE_PERIOD}, at most the lease slack) and {@code
 * capacity} ({@code "on-demand"}, {@code "spot"} or {@code "spot-then-on-demand"}; default the
 * stack's, {@link buildqueue.platform.Capacity}). Durations are written like {@code "90s"}, {@code
 * "15m"}, {@code "1h30m"} or {@code "500ms"} ({@link CatalogueDuration}). A kind's name is 1 to 64
 * of {@code a-z 0-9 . _ -}, starting with a letter or digit; {@code demo} is built in ({@link
 * DemoKind}).
 *
 * <p>Strict: the file must be JSON with no duplicate keys; an unknown key or a bad value anywhere
 * refuses the whole file with a {@link KindCatalogueException} that names the file, the kind and
 * the key ({@link CatalogueReader}, {@link KindReader}).
 */
public final class KindCatalogue {
  /** Where a worker process (and the API function on AWS) finds the catalogue: an absolute path. */
  public static final String FILE_VARIABLE = "BUILDQUEUE_KINDS_FILE";

  public static final int MAX_NAME_CHARS = 64;
  public static final int MIN_EXIT_CODE = 1;
  public static final int MAX_EXIT_CODE = 255;

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
   * Reads and checks the catalogue; {@code limits} (from the queue's worker lifetime) bound each
   * kind's timeout and grace. Throws {@link KindCatalogueException} naming {@code file}, the kind
   * and the key.
   */
  public static KindCatalogue load(Path file, KindLimits limits) {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new KindCatalogueException(
          file + ": cannot read the kind catalogue: there is no such file", e);
    } catch (IOException e) {
      throw new KindCatalogueException(file + ": cannot read the kind catalogue: " + e, e);
    }
    String json = new String(bytes, StandardCharsets.UTF_8);
    return new KindCatalogue(
        Optional.of(file), json, CatalogueReader.kinds(file.toString(), json, limits));
  }

  /** Checks catalogue text as {@link #load} does; {@code source} names it in messages. */
  public static KindCatalogue parse(String source, String json, KindLimits limits) {
    return new KindCatalogue(Optional.empty(), json, CatalogueReader.kinds(source, json, limits));
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

  /** The kinds that name their {@code capacity}, by name; the others run on the stack's default. */
  public Map<String, buildqueue.platform.Capacity> capacities() {
    Map<String, buildqueue.platform.Capacity> named = new LinkedHashMap<>();
    kinds.values().forEach(k -> k.capacity().ifPresent(c -> named.put(k.name(), c)));
    return Collections.unmodifiableMap(named);
  }

  public Optional<CommandKind> kind(String name) {
    return Optional.ofNullable(kinds.get(name));
  }

  /** The kinds a process with this catalogue accepts: the built-in {@code demo}, then these. */
  public KindRegistry registry() {
    Map<String, PayloadSchema> schemas = new LinkedHashMap<>();
    schemas.put(DemoKind.NAME, DemoKind.PAYLOAD);
    kinds.values().forEach(k -> schemas.put(k.name(), k.payloadSchema()));
    return KindRegistry.of(schemas);
  }

  @Override
  public String toString() {
    return "KindCatalogue["
        + file.map(Path::toString).orElse("no file")
        + ": "
        + String.join(", ", kinds.keySet())
        + "]";
  }
}
