package buildqueue.aws.template;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/**
 * The part of EventBridge's event-pattern matching the template uses: every key of the pattern must
 * be in the event; a list matches when the event's value equals one entry (or starts with a {@code
 * {prefix: ...}} entry); a nested object matches the event's nested object.
 */
final class EventPatterns {
  private EventPatterns() {}

  static boolean matches(Map<String, Object> pattern, JsonNode event) {
    for (Map.Entry<String, Object> e : pattern.entrySet()) {
      JsonNode value = event.get(e.getKey());
      if (value == null || value.isNull()) {
        return false;
      }
      Object p = e.getValue();
      if (p instanceof Map<?, ?> nested) {
        if (!value.isObject() || !matches(CfnTemplate.map(nested), value)) {
          return false;
        }
      } else if (!anyMatches(CfnTemplate.list(p), value)) {
        return false;
      }
    }
    return true;
  }

  private static boolean anyMatches(List<Object> alternatives, JsonNode value) {
    if (value.isArray()) {
      for (JsonNode v : value) {
        if (anyMatches(alternatives, v)) {
          return true;
        }
      }
      return false;
    }
    String text = value.asText();
    for (Object a : alternatives) {
      if (a instanceof Map<?, ?> rule && rule.containsKey("prefix")) {
        if (text.startsWith(String.valueOf(rule.get("prefix")))) {
          return true;
        }
      } else if (String.valueOf(a).equals(text)) {
        return true;
      }
    }
    return false;
  }
}
