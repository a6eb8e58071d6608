package buildqueue.aws.fake;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Statement text whose reading the Data API leaves undocumented: a {@code ;} anywhere but at the
 * statement's end (AWS documents that a second statement is refused and a trailing {@code ;}
 * allowed, data-api.differences), and a {@code :word} inside a string literal, quoted identifier,
 * dollar-quoted body or comment (AWS documents {@code :name} parameters, but not whether its
 * scanner skips literals and comments). The fake refuses such text and the statement-text test
 * checks every statement the code can send, so no statement depends on either reading.
 */
public final class AmbiguousSql {
  private static final Pattern PARAMETER_LIKE = Pattern.compile("(?<!:):[A-Za-z_]");

  private AmbiguousSql() {}

  /** What makes {@code sql} ambiguous, one line each; empty when nothing does. */
  public static List<String> problems(String sql) {
    List<String> out = new ArrayList<>();
    int n = sql.length();
    int i = 0;
    while (i < n) {
      char c = sql.charAt(i);
      int end;
      String kind;
      if (c == '-' && sql.startsWith("--", i)) {
        int nl = sql.indexOf('\n', i);
        end = nl < 0 ? n : nl;
        kind = "comment";
      } else if (c == '/' && sql.startsWith("/*", i)) {
        int close = sql.indexOf("*/", i + 2);
        end = close < 0 ? n : close + 2;
        kind = "comment";
      } else if (c == '\'' || c == '"') {
        end = FakeSql.closingQuote(sql, i, c);
        kind = c == '\'' ? "string literal" : "quoted identifier";
      } else if (c == '$' && FakeSql.dollarTag(sql, i) != null) {
        String tag = FakeSql.dollarTag(sql, i);
        int close = sql.indexOf(tag, i + tag.length());
        end = close < 0 ? n : close + tag.length();
        kind = "dollar-quoted body";
      } else {
        if (c == ';' && !sql.substring(i + 1).isBlank()) {
          out.add("';' before the end of the statement at offset " + i + ": " + around(sql, i));
        }
        i++;
        continue;
      }
      String part = sql.substring(i, end);
      if (part.indexOf(';') >= 0) {
        out.add("';' inside a " + kind + ": " + part.strip());
      }
      if (PARAMETER_LIKE.matcher(part).find()) {
        out.add("':word' inside a " + kind + ": " + part.strip());
      }
      i = end;
    }
    return out;
  }

  private static String around(String sql, int i) {
    return sql.substring(Math.max(0, i - 30), Math.min(sql.length(), i + 30)).replace('\n', ' ');
  }
}
