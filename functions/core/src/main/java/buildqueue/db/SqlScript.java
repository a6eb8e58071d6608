package buildqueue.db;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a migration file into single statements. The RDS Data API runs one statement per call, so
 * the migrator sends them one by one whichever adapter it runs on.
 *
 * <p>A migration may write a function body plainly, dollar-quoted ({@code $$ … $$} or {@code $tag$
 * … $tag$}), with a {@code ;} after each of its statements. The Data API documents that it refuses
 * a second statement in a call but not how it reads a {@code ;} inside a literal, so no text we
 * send has one before its end ({@code StatementTextTest}): {@link #sendable} turns such a body into
 * the same string as an escape string, {@code E'…'}, with {@code \073} for each {@code ;}, quotes
 * doubled and backslashes escaped. The migration's text, and so its checksum, is what was written;
 * a body without a {@code ;} is sent as it is written.
 */
final class SqlScript {
  private SqlScript() {}

  /**
   * The statements of {@code script} as the migrator sends them: {@link #statements}, bodies
   * escaped.
   */
  static List<String> sendable(String script) {
    return split(script, true);
  }

  static List<String> statements(String script) {
    return split(script, false);
  }

  /**
   * Cuts {@code script} at each {@code ;} outside quotes and dollar-quoted strings, dropping
   * comments; with {@code escapeBodies}, a dollar-quoted string that holds a {@code ;} is written
   * as the equal escape string.
   */
  private static List<String> split(String script, boolean escapeBodies) {
    List<String> out = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    int i = 0;
    int n = script.length();
    while (i < n) {
      char c = script.charAt(i);
      int end;
      String tag;
      if (c == '-' && i + 1 < n && script.charAt(i + 1) == '-') {
        end = script.indexOf('\n', i);
        i = end < 0 ? n : end; // comments are dropped
        continue;
      } else if (c == '\'' || c == '"') {
        end = script.indexOf(c, i + 1);
        end = end < 0 ? n : end + 1;
      } else if (c == '$' && (tag = dollarTag(script, i)) != null) {
        int close = script.indexOf(tag, i + tag.length());
        end = close < 0 ? n : close + tag.length();
        String body = close < 0 ? "" : script.substring(i + tag.length(), close);
        if (escapeBodies && body.indexOf(';') >= 0) {
          current
              .append("E'")
              .append(body.replace("\\", "\\\\").replace("'", "''").replace(";", "\\073"))
              .append('\'');
          i = end;
          continue;
        }
      } else if (c == ';') {
        addIfNotBlank(out, current);
        current.setLength(0);
        i++;
        continue;
      } else {
        end = i + 1;
      }
      current.append(script, i, end);
      i = end;
    }
    addIfNotBlank(out, current);
    return out;
  }

  /**
   * The opening tag of a dollar-quoted string at {@code i} ({@code $$}, {@code $body$}), or null: a
   * positional parameter ({@code $1}) or a {@code $} inside an identifier is none.
   */
  private static String dollarTag(String sql, int i) {
    if (i > 0 && (Character.isLetterOrDigit(sql.charAt(i - 1)) || sql.charAt(i - 1) == '_')) {
      return null;
    }
    int j = i + 1;
    if (j < sql.length() && (Character.isLetter(sql.charAt(j)) || sql.charAt(j) == '_')) {
      while (j < sql.length()
          && (Character.isLetterOrDigit(sql.charAt(j)) || sql.charAt(j) == '_')) {
        j++;
      }
    }
    return j < sql.length() && sql.charAt(j) == '$' ? sql.substring(i, j + 1) : null;
  }

  private static void addIfNotBlank(List<String> out, StringBuilder statement) {
    String s = statement.toString().strip();
    if (!s.isEmpty()) {
      out.add(s);
    }
  }
}
