package buildqueue.api;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Request bodies: strict JSON in (no duplicate keys, no trailing data, bounded nesting), and only
 * documents PostgreSQL's {@code jsonb} can store, so that bad input is refused here with a 4xx
 * instead of failing later in the database with a 5xx.
 */
final class JsonBodies {
  static final int MAX_NESTING = 64;

  /** The longest number, in characters; Jackson's default, named here so messages can say it. */
  static final int MAX_NUMBER_DIGITS = 1000;

  /** Decimal exponents beyond this are refused; {@code jsonb} overflows not far past 131072. */
  static final int MAX_DECIMAL_SCALE = 1000;

  static final ObjectMapper STRICT =
      JsonMapper.builder(
              com.fasterxml.jackson.core.JsonFactory.builder()
                  .streamReadConstraints(
                      StreamReadConstraints.builder()
                          .maxNestingDepth(MAX_NESTING)
                          .maxNumberLength(MAX_NUMBER_DIGITS)
                          .build())
                  .disable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
                  .build())
          .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          // Keep decimals exactly as sent: a double would turn 1e400 into Infinity and 0.1000 into
          // 0.1.
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
          .build();

  private JsonBodies() {}

  /**
   * The request's body as a JSON object.
   *
   * @param example a valid body, quoted in the messages
   */
  static ObjectNode object(ApiRequest request, String example) {
    requireJsonContentType(request, example);
    if (request.body().length == 0) {
      throw ApiProblem.invalid(
          "The request body is empty; send a JSON object such as " + example + ".");
    }
    JsonNode node;
    try {
      node = STRICT.readTree(request.body());
    } catch (StreamConstraintsException e) {
      throw ApiProblem.invalid(overLimit(e) + "; send a JSON object such as " + example + ".");
    } catch (JsonProcessingException e) {
      throw ApiProblem.invalid(
          "The request body is not valid JSON ("
              + describe(e)
              + "); send a JSON object such as "
              + example
              + ".");
    } catch (IOException e) {
      throw ApiProblem.invalid("The request body could not be read as JSON: " + e.getMessage());
    }
    if (node == null || !node.isObject()) {
      throw ApiProblem.invalid(
          "The request body must be a JSON object such as "
              + example
              + ", not "
              + kindOf(node)
              + ".");
    }
    return (ObjectNode) node;
  }

  /** Refuses any top-level field not in {@code known}, naming it. */
  static void onlyFields(ObjectNode body, Set<String> known, String route) {
    for (Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!known.contains(name)) {
        throw ApiProblem.invalid(
            "Unknown field \""
                + printable(name)
                + "\" in the body of "
                + route
                + "; the fields are: "
                + String.join(", ", known)
                + ".");
      }
    }
  }

  /**
   * Refuses what PostgreSQL's {@code jsonb} cannot store or would change: the NUL character,
   * unpaired surrogates, decimals with absurd exponents.
   *
   * @param where the document's name in messages, e.g. {@code payload}
   */
  static void requireStorable(JsonNode node, String where) {
    if (node.isTextual()) {
      requireStorableText(node.textValue(), where);
    } else if (node.isBigDecimal() || node.isFloatingPointNumber()) {
      BigDecimal d = node.decimalValue();
      if (Math.abs((long) d.scale()) > MAX_DECIMAL_SCALE) {
        throw ApiProblem.invalid(
            "The number at "
                + where
                + " has an exponent beyond ±"
                + MAX_DECIMAL_SCALE
                + "; send a smaller number or a string.");
      }
    } else if (node.isObject()) {
      for (Map.Entry<String, JsonNode> field : node.properties()) {
        requireStorableText(field.getKey(), where + " (a field name)");
        requireStorable(field.getValue(), where + "." + printable(field.getKey()));
      }
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        requireStorable(node.get(i), where + "[" + i + "]");
      }
    }
  }

  static void requireStorableText(String s, String where) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0) {
        throw ApiProblem.invalid(
            "The text at "
                + where
                + " contains the NUL character (\\u0000), which cannot be "
                + "stored; remove it.");
      }
      if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw ApiProblem.invalid(
            "The text at "
                + where
                + " contains an unpaired UTF-16 surrogate (\\u"
                + Integer.toHexString(c)
                + "), which is not valid Unicode; remove it.");
      }
    }
  }

  /** {@code application/json} or any {@code application/*+json}, in UTF-8. */
  static void requireJsonContentType(ApiRequest request, String example) {
    String contentType = request.header("Content-Type").orElse("");
    String[] parts = contentType.split(";");
    String media = parts[0].trim().toLowerCase(Locale.ROOT);
    boolean json =
        media.equals("application/json")
            || (media.startsWith("application/") && media.endsWith("+json"));
    if (!json) {
      throw new ApiProblem(
          ApiProblem.Type.UNSUPPORTED_MEDIA_TYPE,
          (contentType.isBlank()
                  ? "The request has no Content-Type"
                  : "Content-Type \"" + printable(contentType) + "\" is not JSON")
              + "; send the body as JSON, such as "
              + example
              + ", with Content-Type: application/json.",
          Map.of("Accept", "application/json"));
    }
    for (int i = 1; i < parts.length; i++) {
      String[] param = parts[i].trim().split("=", 2);
      if (param[0].trim().equalsIgnoreCase("charset") && param.length == 2) {
        String charset = param[1].trim().replace("\"", "");
        if (!charset.equalsIgnoreCase("utf-8") && !charset.equalsIgnoreCase("utf8")) {
          throw new ApiProblem(
              ApiProblem.Type.UNSUPPORTED_MEDIA_TYPE,
              "The body's charset is \"" + printable(charset) + "\"; send JSON in UTF-8.",
              Map.of("Accept", "application/json"));
        }
      }
    }
  }

  static String kindOf(JsonNode node) {
    if (node == null || node.isMissingNode()) {
      return "nothing";
    }
    return switch (node.getNodeType()) {
      case ARRAY -> "an array";
      case OBJECT -> "an object";
      case STRING -> "a string";
      case NUMBER -> "a number";
      case BOOLEAN -> "a boolean";
      case NULL -> "null";
      default -> node.getNodeType().name().toLowerCase(Locale.ROOT);
    };
  }

  /** User text for a message: control characters escaped, length capped. */
  static String printable(String s) {
    return printable(s, 80);
  }

  static String printable(String s, int max) {
    StringBuilder b = new StringBuilder();
    s.codePoints()
        .limit(max)
        .forEach(
            cp -> {
              if (Character.isISOControl(cp) || Character.getType(cp) == Character.SURROGATE) {
                b.append(String.format("\\u%04x", cp));
              } else if (cp == '"' || cp == '\\') {
                b.append('\\').appendCodePoint(cp);
              } else {
                b.appendCodePoint(cp);
              }
            });
    if (s.codePointCount(0, s.length()) > max) {
      b.append("…");
    }
    return b.toString();
  }

  /**
   * A limit of the JSON reader in plain words. Jackson's own message names its configuration class
   * and getter, which mean nothing to a client, and calls the body "not valid JSON" when it is
   * valid but over a limit we chose.
   */
  private static String overLimit(StreamConstraintsException e) {
    String message = String.valueOf(e.getOriginalMessage());
    String limit;
    if (message.startsWith("Number")) {
      limit =
          "has a number longer than "
              + String.format(Locale.ROOT, "%,d", MAX_NUMBER_DIGITS)
              + " digits; send long numbers as strings";
    } else if (message.contains("nesting")) {
      limit = "nests objects and arrays more than " + MAX_NESTING + " levels deep; flatten it";
    } else {
      // String and name lengths: their limits are far beyond the 256 KiB body limit.
      limit = "is over a limit of the JSON reader";
    }
    return "The request body " + limit + at(e);
  }

  private static String at(JsonProcessingException e) {
    JsonLocation at = e.getLocation();
    return at != null && at.getLineNr() > 0
        ? " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"
        : "";
  }

  private static String describe(JsonProcessingException e) {
    String message = e.getOriginalMessage();
    if (message == null) {
      message = e.getClass().getSimpleName();
    }
    message = printable(message.lines().findFirst().orElse(message), 200);
    JsonLocation at = e.getLocation();
    if (at != null && at.getLineNr() > 0) {
      message += " at line " + at.getLineNr() + ", column " + at.getColumnNr();
    }
    return message;
  }
}
