package buildqueue.db;

import java.util.ArrayList;
import java.util.List;

/**
 * A statement with {@code :name} parameters rewritten to JDBC's positional {@code ?}. String
 * literals, quoted identifiers, comments, dollar-quoted bodies and {@code ::} casts are left alone.
 * Public so that every adapter agrees on which names a statement uses (the Data API adapter sends
 * exactly those).
 */
public record NamedSql(String jdbcSql, List<String> names) {

  public static NamedSql parse(String sql) {
    StringBuilder out = new StringBuilder(sql.length());
    List<String> names = new ArrayList<>();
    int i = 0;
    int n = sql.length();
    while (i < n) {
      char c = sql.charAt(i);
      if (c == '\'' || c == '"') {
        int end = skipQuoted(sql, i, c);
        out.append(sql, i, end);
        i = end;
      } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
        int end = sql.indexOf('\n', i);
        end = end < 0 ? n : end;
        out.append(sql, i, end);
        i = end;
      } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
        int end = sql.indexOf("*/", i + 2);
        end = end < 0 ? n : end + 2;
        out.append(sql, i, end);
        i = end;
      } else if (c == '$' && dollarTagEnd(sql, i) > 0) {
        int tagEnd = dollarTagEnd(sql, i);
        String tag = sql.substring(i, tagEnd);
        int close = sql.indexOf(tag, tagEnd);
        int end = close < 0 ? n : close + tag.length();
        out.append(sql, i, end);
        i = end;
      } else if (c == ':' && i + 1 < n && sql.charAt(i + 1) == ':') {
        out.append("::");
        i += 2;
      } else if (c == ':' && i + 1 < n && Character.isJavaIdentifierStart(sql.charAt(i + 1))) {
        int end = i + 1;
        while (end < n && Character.isJavaIdentifierPart(sql.charAt(end))) {
          end++;
        }
        names.add(sql.substring(i + 1, end));
        out.append('?');
        i = end;
      } else {
        out.append(c);
        i++;
      }
    }
    return new NamedSql(out.toString(), List.copyOf(names));
  }

  private static int skipQuoted(String sql, int start, char quote) {
    int i = start + 1;
    while (i < sql.length()) {
      if (sql.charAt(i) == quote) {
        if (i + 1 < sql.length() && sql.charAt(i + 1) == quote) {
          i += 2;
          continue;
        }
        return i + 1;
      }
      i++;
    }
    return sql.length();
  }

  /** End index of a dollar-quote tag ({@code $$} or {@code $tag$}) starting at i, or -1. */
  private static int dollarTagEnd(String sql, int i) {
    int j = i + 1;
    while (j < sql.length() && (Character.isLetterOrDigit(sql.charAt(j)) || sql.charAt(j) == '_')) {
      j++;
    }
    if (j < sql.length()
        && sql.charAt(j) == '$'
        && (j == i + 1 || !Character.isDigit(sql.charAt(i + 1)))) {
      return j + 1;
    }
    return -1;
  }
}
