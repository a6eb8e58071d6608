package buildqueue.db;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a migration file into single statements. The RDS Data API runs one statement per call,
 * so the migrator sends them one by one whichever adapter it runs on.
 */
final class SqlScript {
  private SqlScript() {}

  static List<String> statements(String script) {
    List<String> out = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    int i = 0;
    int n = script.length();
    while (i < n) {
      char c = script.charAt(i);
      int end;
      if (c == '-' && i + 1 < n && script.charAt(i + 1) == '-') {
        end = script.indexOf('\n', i);
        i = end < 0 ? n : end; // comments are dropped
        continue;
      } else if (c == '\'' || c == '"') {
        end = script.indexOf(c, i + 1);
        end = end < 0 ? n : end + 1;
      } else if (c == '$' && script.startsWith("$$", i)) {
        end = script.indexOf("$$", i + 2);
        end = end < 0 ? n : end + 2;
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

  private static void addIfNotBlank(List<String> out, StringBuilder statement) {
    String s = statement.toString().strip();
    if (!s.isEmpty()) {
      out.add(s);
    }
  }
}
