package buildqueue.aws.image;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A {@code .dockerignore} file read and matched as Docker reads and matches it: moby's {@code
 * patternmatcher/ignorefile.ReadAll} for the file and {@code patternmatcher.New} with {@code
 * MatchesOrParentMatches} for a path, which is what BuildKit uses to leave files out of the build
 * context and to flag a {@code COPY} of an ignored file (build check CopyIgnoredFile).
 *
 * <ul>
 *   <li>A line starting with {@code #} is a comment; blank lines are skipped; whitespace around a
 *       pattern is trimmed; a UTF-8 byte order mark on the first line is dropped.
 *   <li>A pattern is cleaned like Go's {@code filepath.Clean}, and one leading {@code /} is dropped
 *       ({@code /a/b} is {@code a/b}: paths are relative to the context).
 *   <li>{@code *} is any run of characters but {@code /}, {@code ?} one character but {@code /},
 *       {@code [...]} a class, {@code \} escapes the next character; {@code **} is any number of
 *       directories, none included ({@code **}{@code /x} matches {@code x}; {@code a/**} matches
 *       what is under {@code a}, not {@code a} itself).
 *   <li>A pattern that matches a directory matches everything under it.
 *   <li>Lines apply in order and the last that matches decides; {@code !} makes a line re-include
 *       what it matches.
 * </ul>
 */
final class DockerIgnore {
  /** One line of the file, as the matcher holds it. */
  record Line(int number, String text, String cleaned, boolean reinclude, Matcher matcher) {
    boolean matches(String path) {
      return matcher.matches(path);
    }

    @Override
    public String toString() {
      return "line " + number + " \"" + text + "\"";
    }
  }

  /** Whether a path is left out of the context, and the line that decided, if any did. */
  record Decision(boolean excluded, Optional<Line> by) {}

  private final List<Line> lines;

  private DockerIgnore(List<Line> lines) {
    this.lines = List.copyOf(lines);
  }

  /** No {@code .dockerignore}: everything is in the context. */
  static DockerIgnore none() {
    return new DockerIgnore(List.of());
  }

  /**
   * Reads the file's text. A pattern Go's {@code filepath.Match} refuses (an unclosed {@code [}, a
   * trailing {@code \}) or a lone {@code !} fails here, as Docker fails the build.
   */
  static DockerIgnore parse(String text) {
    List<Line> lines = new ArrayList<>();
    String[] raw = text.split("\r?\n", -1);
    for (int i = 0; i < raw.length; i++) {
      String line = i == 0 && raw[i].startsWith("\uFEFF") ? raw[i].substring(1) : raw[i];
      String pattern = readAll(line);
      if (pattern != null) {
        lines.add(compile(i + 1, line.strip(), pattern));
      }
    }
    return new DockerIgnore(lines);
  }

  /** {@code ignorefile.ReadAll} for one line: the pattern it yields, or null for none. */
  static String readAll(String line) {
    if (line.startsWith("#")) {
      return null;
    }
    String pattern = line.strip();
    if (pattern.isEmpty()) {
      return null;
    }
    boolean invert = pattern.charAt(0) == '!';
    if (invert) {
      pattern = pattern.substring(1).strip();
    }
    if (!pattern.isEmpty()) {
      pattern = GoPaths.clean(pattern);
      if (pattern.length() > 1 && pattern.charAt(0) == '/') {
        pattern = pattern.substring(1);
      }
    }
    return invert ? "!" + pattern : pattern;
  }

  /** {@code patternmatcher.New} for one pattern (which cleans it again). */
  static Line compile(int number, String text, String pattern) {
    String p = GoPaths.clean(pattern.strip());
    boolean reinclude = false;
    if (p.charAt(0) == '!') {
      if (p.length() == 1) {
        throw new GoPaths.BadPatternException(text, "illegal exclusion pattern: \"!\"");
      }
      reinclude = true;
      p = p.substring(1);
    }
    GoPaths.checkSyntax(p);
    return new Line(number, text, p, reinclude, Matcher.of(p));
  }

  /** For tests: a matcher of patterns as given to {@code patternmatcher.New}. */
  static DockerIgnore ofPatterns(List<String> patterns) {
    List<Line> lines = new ArrayList<>();
    for (int i = 0; i < patterns.size(); i++) {
      if (!patterns.get(i).isBlank()) {
        lines.add(compile(i + 1, patterns.get(i), patterns.get(i)));
      }
    }
    return new DockerIgnore(lines);
  }

  List<Line> lines() {
    return lines;
  }

  /** {@code MatchesOrParentMatches}: whether a slash-separated context path is left out. */
  Decision decide(String path) {
    String file = GoPaths.clean(path);
    if (file.equals(".")) {
      return new Decision(false, Optional.empty());
    }
    int slash = file.lastIndexOf('/');
    String[] parents = slash < 0 ? new String[0] : file.substring(0, slash).split("/");
    boolean matched = false;
    Line by = null;
    for (Line line : lines) {
      // An exclusion line can only change a path that is matched, an inclusion one that is not.
      if (line.reinclude() != matched) {
        continue;
      }
      boolean match = line.matches(file);
      StringBuilder parent = new StringBuilder();
      for (int i = 0; !match && i < parents.length; i++) {
        parent.append(i == 0 ? "" : "/").append(parents[i]);
        match = line.matches(parent.toString());
      }
      if (match) {
        matched = !line.reinclude();
        by = line;
      }
    }
    return new Decision(matched, Optional.ofNullable(by));
  }

  boolean excludes(String path) {
    return decide(path).excluded();
  }

  /**
   * One pattern compiled as {@code Pattern.compile} in moby's patternmatcher does it: an exact
   * string, a prefix ({@code a/**}), a suffix ({@code **}{@code /a}), or a regular expression.
   */
  sealed interface Matcher {
    boolean matches(String path);

    record Exact(String text) implements Matcher {
      @Override
      public boolean matches(String path) {
        return path.equals(text);
      }
    }

    record Prefix(String prefix) implements Matcher {
      @Override
      public boolean matches(String path) {
        return path.startsWith(prefix);
      }
    }

    record Suffix(String suffix) implements Matcher {
      @Override
      public boolean matches(String path) {
        // **/foo also matches "foo" itself.
        return path.endsWith(suffix)
            || !suffix.isEmpty() && suffix.charAt(0) == '/' && path.equals(suffix.substring(1));
      }
    }

    record Regex(Pattern regex) implements Matcher {
      @Override
      public boolean matches(String path) {
        return regex.matcher(path).find();
      }
    }

    /** Characters Go's regexp would read as syntax but {@code filepath.Match} does not. */
    String ESCAPED = ".+()|{}$";

    static Matcher of(String pattern) {
      enum Type {
        EXACT,
        PREFIX,
        SUFFIX,
        REGEX
      }
      StringBuilder re = new StringBuilder("^");
      Type type = Type.EXACT;
      int[] cps = pattern.codePoints().toArray();
      boolean inClass = false;
      for (int i = 0, k = 0; i < cps.length; k++) {
        int ch = cps[i++];
        if (ch == '*') {
          if (i < cps.length && cps[i] == '*') {
            i++;
            if (i < cps.length && cps[i] == '/') {
              i++; // **/ is read as **
            }
            if (i == cps.length) {
              // ** at the end: everything below, as in .gitignore
              if (type == Type.EXACT) {
                type = Type.PREFIX;
              } else {
                re.append(".*");
                type = Type.REGEX;
              }
            } else {
              // any number of directories, none included
              re.append("(.*/)?");
              type = Type.REGEX;
            }
            if (k == 0) {
              type = Type.SUFFIX;
            }
          } else {
            re.append("[^/]*");
            type = Type.REGEX;
          }
        } else if (ch == '?') {
          re.append("[^/]");
          type = Type.REGEX;
        } else if (ch < 128 && ESCAPED.indexOf(ch) >= 0) {
          re.append('\\').appendCodePoint(ch);
        } else if (ch == '\\') {
          if (i < cps.length) {
            appendLiteral(re, cps[i++]);
            type = Type.REGEX;
          } else {
            re.append("\\\\");
          }
        } else if (ch == '[' || ch == ']') {
          // Go's regexp reads a class the way filepath.Match does (checked by GoPaths.checkSyntax);
          // Java's would read a nested [ or && inside one as its own syntax, so those are escaped.
          if (ch == '[' && inClass) {
            re.append("\\[");
          } else {
            re.appendCodePoint(ch);
            inClass = ch == '[';
          }
          type = Type.REGEX;
        } else if (inClass && ch == '&') {
          re.append("\\&");
        } else {
          re.appendCodePoint(ch);
        }
      }
      return switch (type) {
        case EXACT -> new Exact(pattern);
        case PREFIX -> new Prefix(pattern.substring(0, pattern.length() - 2));
        case SUFFIX -> new Suffix(pattern.substring(2));
        case REGEX -> new Regex(Pattern.compile(re.append('$').toString()));
      };
    }

    private static void appendLiteral(StringBuilder re, int cp) {
      // A backslash before any character but a letter or digit is that character, in Java's
      // regexp as in Go's; an escaped letter is the letter, as filepath.Match reads it.
      if (!Character.isLetterOrDigit(cp)) {
        re.append('\\');
      }
      re.appendCodePoint(cp);
    }
  }
}
