package buildqueue.kinds;

import com.fasterxml.jackson.databind.JsonNode;

/** A kind's check of a submitted payload (its {@code payloadSchema}). */
@FunctionalInterface
public interface PayloadSchema {

  /**
   * Throws {@link IllegalArgumentException} whose message names the first failing place in the
   * payload as a JSON path (for example {@code $.pages[2].title}) and says what was expected.
   */
  void check(JsonNode payload);

  /** Any JSON object. */
  PayloadSchema ANY_OBJECT =
      payload -> {
        if (!payload.isObject()) {
          throw new IllegalArgumentException("$: must be a JSON object");
        }
      };
}
