package buildqueue.kinds;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads the catalogue's text: strict JSON (no duplicate keys, nothing after the object), one
 * top-level key {@code "kinds"}, each kind read by a {@link KindReader}. Refusals name the source.
 */
final class CatalogueReader {
  private static final String EXAMPLE =
      "{\"kinds\": {\"render\": {\"command\": [\"node\", \"/opt/render/index.js\"], \"timeout\": \"15m\"}}}";
  private static final ObjectMapper STRICT =
      JsonMapper.builder()
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();

  private CatalogueReader() {}

  /** The kinds of {@code json} by name, in file order; {@code source} names it in messages. */
  static Map<String, CommandKind> kinds(String source, String json, KindLimits limits) {
    JsonNode root = strictJson(source, json);
    if (root == null || root.isMissingNode()) {
      throw new KindCatalogueException(
          source + ": the kind catalogue is empty; write it like " + EXAMPLE);
    }
    if (!root.isObject()) {
      throw new KindCatalogueException(
          source
              + ": the kind catalogue must be a JSON object like "
              + EXAMPLE
              + ", not "
              + JsonSchemas.kindOf(root));
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!key.equals("kinds")) {
        throw new KindCatalogueException(
            source
                + ": unknown key "
                + quote(key)
                + " at the top level; the file holds one key, \"kinds\", like "
                + EXAMPLE);
      }
    }
    JsonNode list = root.get("kinds");
    if (list == null || !list.isObject()) {
      throw new KindCatalogueException(
          source
              + ": \"kinds\" must be an object of kinds by name, like "
              + EXAMPLE
              + (list == null ? "; it is missing" : ", not " + JsonSchemas.kindOf(list)));
    }
    Map<String, CommandKind> kinds = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = list.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      CommandKind kind = new KindReader(source, entry.getKey(), limits).read(entry.getValue());
      kinds.put(kind.name(), kind);
    }
    return kinds;
  }

  private static JsonNode strictJson(String source, String json) {
    try {
      return STRICT.readTree(json);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String where =
          at == null ? "" : "line " + at.getLineNr() + ", column " + at.getColumnNr() + ": ";
      throw new KindCatalogueException(
          source + ": " + where + "not valid JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * A string as JSON writes it: quoted, with control characters escaped, so messages stay one line.
   */
  static String quote(String s) {
    try {
      return STRICT.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a string always serializes", e);
    }
  }
}
