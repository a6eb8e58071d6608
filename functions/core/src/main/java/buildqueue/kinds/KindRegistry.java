package buildqueue.kinds;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The job kinds a process accepts and how each checks its payload: what {@code POST /jobs} holds a
 * submission to. The API needs only this, never the code that runs the kinds.
 */
public interface KindRegistry {

  /** The kinds accepted, in the order they were defined (the built-in {@code demo} first). */
  Set<String> kinds();

  /** The payload check of {@code kind}; empty if the kind is not accepted. */
  Optional<PayloadSchema> payloadSchema(String kind);

  /** Only the built-in kind, {@code demo}: a process without a catalogue. */
  static KindRegistry builtIn() {
    return KindCatalogue.none().registry();
  }

  /** The kinds of {@code schemas}, in its iteration order. */
  static KindRegistry of(Map<String, PayloadSchema> schemas) {
    Map<String, PayloadSchema> copy = Collections.unmodifiableMap(new LinkedHashMap<>(schemas));
    return new KindRegistry() {
      @Override
      public Set<String> kinds() {
        return copy.keySet();
      }

      @Override
      public Optional<PayloadSchema> payloadSchema(String kind) {
        return Optional.ofNullable(copy.get(kind));
      }

      @Override
      public String toString() {
        return "KindRegistry" + copy.keySet();
      }
    };
  }
}
