package buildqueue.aws.image;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a Dockerfile takes from the build context: the sources of its {@code COPY} and {@code ADD}
 * instructions. Read as BuildKit's parser reads the file: parser directives ({@code # escape=`}),
 * comment and blank lines dropped (also inside a continued instruction), lines joined at the escape
 * character, keywords in any case, options before the arguments ({@code --chown=}, {@code
 * --chmod=}, {@code --link}, ...), the JSON-array form, here-documents. A {@code --from=} copy
 * reads a stage or an image, and an {@code ADD} of a URL the network, so neither reads the context;
 * nor does a here-document source or an {@code ONBUILD} instruction (it runs in another build).
 */
final class Dockerfiles {
  private Dockerfiles() {}

  /** One instruction: its first line's number, its keyword in upper case, the rest joined. */
  record Instruction(int line, String keyword, String arguments) {}

  /** A source an instruction reads from the build context, as written. */
  record Source(int line, String keyword, String path) {
    @Override
    public String toString() {
      return keyword + " " + path + " (line " + line + ")";
    }
  }

  private static final Pattern DIRECTIVE =
      Pattern.compile("#\\s*([A-Za-z][A-Za-z0-9]*)\\s*=\\s*(.*?)\\s*");
  private static final Pattern HEREDOC = Pattern.compile("<<(-?)([\"']?)([A-Za-z0-9_.]+)\\2");

  static List<Instruction> instructions(String text) {
    String[] lines = text.split("\r?\n", -1);
    char escape = '\\';
    int i = 0;
    for (; i < lines.length; i++) {
      Matcher m = DIRECTIVE.matcher(lines[i]);
      if (!m.matches()) {
        break;
      }
      if (m.group(1).equalsIgnoreCase("escape") && m.group(2).length() == 1) {
        escape = m.group(2).charAt(0);
      }
    }
    List<Instruction> out = new ArrayList<>();
    StringBuilder current = null;
    int start = 0;
    for (; i < lines.length; i++) {
      String line = lines[i];
      String stripped = line.strip();
      if (stripped.isEmpty() || stripped.startsWith("#")) {
        continue;
      }
      if (current == null) {
        current = new StringBuilder();
        start = i + 1;
      }
      String body = line.stripTrailing();
      if (body.charAt(body.length() - 1) == escape) {
        current.append(body, 0, body.length() - 1);
        continue;
      }
      current.append(body);
      Instruction instruction = instruction(start, current.toString());
      out.add(instruction);
      current = null;
      i = skipHeredocs(instruction, lines, i);
    }
    if (current != null) {
      out.add(instruction(start, current.toString()));
    }
    return out;
  }

  private static Instruction instruction(int line, String text) {
    String s = text.strip();
    int space = indexOfWhitespace(s);
    String keyword = (space < 0 ? s : s.substring(0, space)).toUpperCase(Locale.ROOT);
    return new Instruction(line, keyword, space < 0 ? "" : s.substring(space).strip());
  }

  /** Skips the bodies of the instruction's here-documents; returns the index of their last line. */
  private static int skipHeredocs(Instruction instruction, String[] lines, int i) {
    if (!List.of("RUN", "COPY", "ADD").contains(instruction.keyword())) {
      return i;
    }
    Matcher m = HEREDOC.matcher(instruction.arguments());
    while (m.find()) {
      boolean stripTabs = !m.group(1).isEmpty();
      String word = m.group(3);
      i++;
      while (i < lines.length
          && !(stripTabs ? lines[i].replaceFirst("^\t+", "") : lines[i]).equals(word)) {
        i++;
      }
    }
    return i;
  }

  /** The context sources of every {@code COPY} and {@code ADD}, in the file's order. */
  static List<Source> contextSources(String text) {
    List<Source> sources = new ArrayList<>();
    for (Instruction in : instructions(text)) {
      if (!in.keyword().equals("COPY") && !in.keyword().equals("ADD")) {
        continue;
      }
      String rest = in.arguments();
      boolean fromElsewhere = false;
      while (rest.startsWith("--")) {
        int end = indexOfWhitespace(rest);
        String option = end < 0 ? rest : rest.substring(0, end);
        fromElsewhere |= option.toLowerCase(Locale.ROOT).startsWith("--from=");
        rest = end < 0 ? "" : rest.substring(end).strip();
      }
      if (fromElsewhere) {
        continue;
      }
      List<String> args = rest.startsWith("[") ? jsonArray(rest) : null;
      if (args == null) {
        args = List.of(rest.isEmpty() ? new String[0] : rest.split("\\s+"));
      }
      for (String src : args.subList(0, Math.max(0, args.size() - 1))) {
        if (src.startsWith("<<") || in.keyword().equals("ADD") && isRemote(src)) {
          continue;
        }
        sources.add(new Source(in.line(), in.keyword(), src));
      }
    }
    return sources;
  }

  private static boolean isRemote(String src) {
    String s = src.toLowerCase(Locale.ROOT);
    return s.startsWith("http://")
        || s.startsWith("https://")
        || s.startsWith("git@")
        || s.startsWith("git://");
  }

  /** A JSON array of strings, or null if the text is not one (Docker then reads it as words). */
  static List<String> jsonArray(String text) {
    List<String> out = new ArrayList<>();
    int i = skipSpace(text, 1);
    if (i < text.length() && text.charAt(i) == ']') {
      return skipSpace(text, i + 1) == text.length() ? out : null;
    }
    while (i < text.length()) {
      if (text.charAt(i) != '"') {
        return null;
      }
      StringBuilder s = new StringBuilder();
      i++;
      while (i < text.length() && text.charAt(i) != '"') {
        char c = text.charAt(i++);
        if (c == '\\') {
          if (i >= text.length()) {
            return null;
          }
          char e = text.charAt(i++);
          switch (e) {
            case 'n' -> s.append('\n');
            case 't' -> s.append('\t');
            case 'r' -> s.append('\r');
            case 'b' -> s.append('\b');
            case 'f' -> s.append('\f');
            case 'u' -> {
              if (i + 4 > text.length()) {
                return null;
              }
              try {
                s.append((char) Integer.parseInt(text.substring(i, i + 4), 16));
              } catch (NumberFormatException notHex) {
                return null;
              }
              i += 4;
            }
            default -> s.append(e);
          }
        } else {
          s.append(c);
        }
      }
      if (i >= text.length()) {
        return null;
      }
      out.add(s.toString());
      i = skipSpace(text, i + 1);
      if (i < text.length() && text.charAt(i) == ',') {
        i = skipSpace(text, i + 1);
      } else if (i < text.length() && text.charAt(i) == ']') {
        return skipSpace(text, i + 1) == text.length() ? out : null;
      } else {
        return null;
      }
    }
    return null;
  }

  private static int skipSpace(String s, int i) {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
    return i;
  }

  private static int indexOfWhitespace(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (Character.isWhitespace(s.charAt(i))) {
        return i;
      }
    }
    return -1;
  }
}
