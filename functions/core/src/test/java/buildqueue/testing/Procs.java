package buildqueue.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@code /proc} says about processes, read here on its own so that tests of code that finds
 * and kills a job's processes do not take that code's word for it.
 */
public final class Procs {
  private Procs() {}

  /** Alive: present and neither a zombie nor dead. */
  public static boolean alive(long pid) {
    String[] f = stat(pid);
    return f != null && !f[0].equals("Z") && !f[0].equals("X");
  }

  /** The live processes whose session or process group is {@code id}. */
  public static List<Long> inSessionOrGroup(long id) {
    List<Long> found = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path e : entries) {
        long pid = Long.parseLong(e.getFileName().toString());
        String[] f = stat(pid);
        if (f != null
            && !f[0].equals("Z")
            && !f[0].equals("X")
            && (Long.parseLong(f[2]) == id || Long.parseLong(f[3]) == id)) {
          found.add(pid);
        }
      }
    } catch (IOException e) {
      throw new AssertionError("no /proc: these tests need Linux", e);
    }
    return found;
  }

  /** The fields after the command name: state, ppid, pgrp, session, …; null if gone. */
  public static String[] stat(long pid) {
    try {
      String text =
          Files.readString(
              Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.ISO_8859_1);
      return text.substring(text.lastIndexOf(')') + 2).split(" ");
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** The pids a job wrote to a file, one a line. */
  public static List<Long> pidsIn(Path file) {
    try {
      return Files.readAllLines(file).stream()
          .map(String::strip)
          .filter(s -> !s.isEmpty())
          .map(Long::valueOf)
          .toList();
    } catch (IOException e) {
      return List.of();
    }
  }
}
