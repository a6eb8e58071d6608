package buildqueue.aws.image;

/**
 * The two pieces of Go's path handling Docker's build context rules are written in: {@code
 * filepath.Clean} (on a Unix-like platform, where the separator is {@code /}) and the syntax {@code
 * filepath.Match} accepts. JDK only, so the image check runs from the test classes alone.
 */
final class GoPaths {
  private GoPaths() {}

  /**
   * Go's {@code path.Clean}: the shortest equivalent path by lexical processing. Repeated slashes
   * become one, {@code .} elements go, a {@code ..} removes the element before it (at the root it
   * is dropped; in a relative path with nothing left to remove it stays), a trailing slash goes,
   * and an empty result is {@code .}.
   */
  static String clean(String path) {
    if (path.isEmpty()) {
      return ".";
    }
    boolean rooted = path.charAt(0) == '/';
    int n = path.length();
    StringBuilder out = new StringBuilder(n);
    int r = 0;
    int dotdot = 0;
    if (rooted) {
      out.append('/');
      r = 1;
      dotdot = 1;
    }
    while (r < n) {
      char c = path.charAt(r);
      if (c == '/') {
        r++;
      } else if (c == '.' && (r + 1 == n || path.charAt(r + 1) == '/')) {
        r++;
      } else if (c == '.'
          && path.charAt(r + 1) == '.'
          && (r + 2 == n || path.charAt(r + 2) == '/')) {
        r += 2;
        if (out.length() > dotdot) {
          int w = out.length() - 1;
          while (w > dotdot && out.charAt(w) != '/') {
            w--;
          }
          out.setLength(w);
        } else if (!rooted) {
          if (out.length() > 0) {
            out.append('/');
          }
          out.append("..");
          dotdot = out.length();
        }
      } else {
        if (rooted && out.length() != 1 || !rooted && out.length() != 0) {
          out.append('/');
        }
        while (r < n && path.charAt(r) != '/') {
          out.append(path.charAt(r++));
        }
      }
    }
    return out.length() == 0 ? "." : out.toString();
  }

  /** Thrown for a pattern {@code filepath.Match} answers {@code ErrBadPattern} for. */
  static final class BadPatternException extends IllegalArgumentException {
    BadPatternException(String pattern, String why) {
      super("syntax error in pattern \"" + pattern + "\": " + why);
    }
  }

  /**
   * Checks a pattern the way {@code filepath.Match} does before it matches anything: a class {@code
   * [...]} must close, must hold at least one character or range ({@code []a]} and {@code [-]} are
   * errors), a range has both ends and no third ({@code [a-b-c]}), and {@code \} escapes one
   * character, so a trailing {@code \} is an error.
   */
  static void checkSyntax(String pattern) {
    int i = 0;
    int n = pattern.length();
    while (i < n) {
      char c = pattern.charAt(i);
      if (c == '\\') {
        if (i + 1 >= n) {
          throw new BadPatternException(pattern, "trailing \\");
        }
        i += 2;
      } else if (c == '[') {
        i = classEnd(pattern, i + 1);
      } else {
        i++;
      }
    }
  }

  /** Index after the {@code ]} of the class whose body starts at {@code i}. */
  private static int classEnd(String pattern, int i) {
    int n = pattern.length();
    if (i < n && pattern.charAt(i) == '^') {
      i++;
    }
    int ranges = 0;
    while (true) {
      if (i < n && pattern.charAt(i) == ']' && ranges > 0) {
        return i + 1;
      }
      i = classChar(pattern, i);
      if (i < n && pattern.charAt(i) == '-') {
        i = classChar(pattern, i + 1);
      }
      ranges++;
    }
  }

  /** Index after one (possibly escaped) character of a class at {@code i}. */
  private static int classChar(String pattern, int i) {
    int n = pattern.length();
    if (i >= n) {
      throw new BadPatternException(pattern, "unclosed [");
    }
    char c = pattern.charAt(i);
    if (c == '-' || c == ']') {
      throw new BadPatternException(pattern, "'" + c + "' where a character of a class belongs");
    }
    if (c == '\\') {
      if (i + 1 >= n) {
        throw new BadPatternException(pattern, "trailing \\ in a class");
      }
      return i + 1 + Character.charCount(pattern.codePointAt(i + 1));
    }
    return i + Character.charCount(pattern.codePointAt(i));
  }
}
