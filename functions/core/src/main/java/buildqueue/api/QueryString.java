package buildqueue.api;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Percent-decoding of query strings and path segments, strict: bad input is an error, not a guess.
 */
final class QueryString {
  private QueryString() {}

  /**
   * {@code a=1&b=x%20y&a=2} → {a: [1, 2], b: [x y]}; {@code +} is a space, as browsers send it.
   *
   * @throws IllegalArgumentException on a malformed escape or bytes that are not UTF-8
   */
  static Map<String, List<String>> parse(String query) {
    Map<String, List<String>> params = new LinkedHashMap<>();
    if (query == null || query.isEmpty()) {
      return params;
    }
    for (String pair : query.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq), true);
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1), true);
      params.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
    }
    params.replaceAll((k, v) -> Collections.unmodifiableList(v));
    return Collections.unmodifiableMap(params);
  }

  /**
   * A query parameter's value for a link this API writes: every byte but unreserved ones escaped.
   */
  static String encode(String value) {
    return java.net.URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** One path segment: {@code %2F} stays a character of the segment, {@code +} stays a plus. */
  static String decodeSegment(String segment) {
    return decode(segment, false);
  }

  private static String decode(String s, boolean plusIsSpace) {
    if (s.indexOf('%') < 0 && !(plusIsSpace && s.indexOf('+') >= 0)) {
      return s;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(s.length());
    for (int i = 0; i < s.length(); i++) {
      int c = s.codePointAt(i);
      if (c == '%') {
        if (i + 2 >= s.length() || hex(s.charAt(i + 1)) < 0 || hex(s.charAt(i + 2)) < 0) {
          throw new IllegalArgumentException(
              "malformed percent-encoding in \"" + s + "\": % must be followed by two hex digits");
        }
        bytes.write(hex(s.charAt(i + 1)) * 16 + hex(s.charAt(i + 2)));
        i += 2;
      } else if (c == '+' && plusIsSpace) {
        bytes.write(' ');
      } else {
        byte[] raw = new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8);
        bytes.write(raw, 0, raw.length);
        i += Character.charCount(c) - 1;
      }
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes.toByteArray()))
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("percent-encoded bytes in \"" + s + "\" are not UTF-8");
    }
  }

  private static int hex(char c) {
    return Character.digit(c, 16);
  }
}
