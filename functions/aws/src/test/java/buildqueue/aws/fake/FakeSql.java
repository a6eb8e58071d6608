package buildqueue.aws.fake;

import java.util.ArrayList;
import java.util.List;

/**
 * The fake's own reading of a Data API statement: {@code :name} placeholders become JDBC's {@code
 * ?} (a name may repeat), quoted text, comments, dollar-quoted bodies and {@code ::} casts are left
 * alone, and a second statement after a {@code ;} is refused as the Data API refuses it. Written
 * apart from the production code on purpose, so the fake checks the adapter instead of agreeing
 * with it.
 */
record FakeSql(String jdbcSql, List<String> names, boolean multipleStatements) {

  static FakeSql parse(String sql) {
    StringBuilder out = new StringBuilder(sql.length());
    List<String> names = new ArrayList<>();
    boolean ended = false;
    boolean multiple = false;
    int i = 0;
    int n = sql.length();
    while (i < n) {
      char c = sql.charAt(i);
      int end;
      if (c == '-' && sql.startsWith("--", i)) {
        end = lineEnd(sql, i);
      } else if (c == '/' && sql.startsWith("/*", i)) {
        int close = sql.indexOf("*/", i + 2);
        end = close < 0 ? n : close + 2;
      } else if (Character.isWhitespace(c)) {
        end = i + 1;
      } else {
        if (ended) {
          multiple = true;
        }
        if (c == '\'' || c == '"') {
          end = closingQuote(sql, i, c);
        } else if (c == '$' && dollarTag(sql, i) != null) {
          String tag = dollarTag(sql, i);
          int close = sql.indexOf(tag, i + tag.length());
          end = close < 0 ? n : close + tag.length();
        } else if (c == ':' && i + 1 < n && sql.charAt(i + 1) == ':') {
          end = i + 2;
        } else if (c == ':'
            && i + 1 < n
            && (Character.isLetter(sql.charAt(i + 1)) || sql.charAt(i + 1) == '_')) {
          end = i + 1;
          while (end < n
              && (Character.isLetterOrDigit(sql.charAt(end)) || sql.charAt(end) == '_')) {
            end++;
          }
          names.add(sql.substring(i + 1, end));
          out.append('?');
          i = end;
          continue;
        } else if (c == ';') {
          ended = true;
          end = i + 1;
        } else {
          end = i + 1;
        }
      }
      out.append(sql, i, end);
      i = end;
    }
    return new FakeSql(out.toString(), List.copyOf(names), multiple);
  }

  private static int lineEnd(String sql, int from) {
    int nl = sql.indexOf('\n', from);
    return nl < 0 ? sql.length() : nl;
  }

  static int closingQuote(String sql, int start, char quote) {
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

  /** {@code $$} or {@code $tag$} starting at i, else null. */
  static String dollarTag(String sql, int i) {
    int j = i + 1;
    while (j < sql.length() && (Character.isLetter(sql.charAt(j)) || sql.charAt(j) == '_')) {
      j++;
    }
    return j < sql.length() && sql.charAt(j) == '$' ? sql.substring(i, j + 1) : null;
  }
}
