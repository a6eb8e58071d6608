package buildqueue.artifacts;

import buildqueue.kinds.ArtifactLimits;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The files a program left under {@code $BUILDQUEUE_ARTIFACTS}, checked against the limits before
 * anything is uploaded: a job past one fails with an error that names it, and nothing is stored.
 */
public final class ArtifactFiles {
  /** Control characters and the backslash have no place in a name a URL and a shell must carry. */
  private static final Pattern BAD_CHARS = Pattern.compile("[\\x00-\\x1f\\x7f\\\\]");

  /** One file to upload: its artifact name and where it is. */
  public record LocalArtifact(String name, Path file, long bytes) {}

  /** The files break a limit; the message names it. */
  public static final class LimitExceededException extends Exception {
    private static final long serialVersionUID = 1L;

    LimitExceededException(String message) {
      super(message);
    }
  }

  private ArtifactFiles() {}

  /**
   * The regular files under {@code dir}, by name, each checked: a symbolic link or another special
   * file is refused (it could point at the worker's own files), as is a name or size past a limit.
   */
  public static List<LocalArtifact> collect(Path dir, ArtifactLimits limits)
      throws IOException, LimitExceededException {
    List<LocalArtifact> found = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    if (!Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return found;
    }
    Files.walkFileTree(
        dir,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
            String name = nameOf(dir, file);
            if (!attrs.isRegularFile()) {
              refused.add(
                  "artifact \""
                      + name
                      + "\" is not a regular file (a symbolic link or a special file); only"
                      + " regular files can be published");
            } else {
              found.add(new LocalArtifact(name, file, attrs.size()));
            }
            return FileVisitResult.CONTINUE;
          }
        });
    if (!refused.isEmpty()) {
      throw new LimitExceededException(refused.get(0));
    }
    found.sort(Comparator.comparing(LocalArtifact::name));
    check(found, limits);
    return found;
  }

  private static void check(List<LocalArtifact> files, ArtifactLimits limits)
      throws LimitExceededException {
    if (files.size() > limits.maxFiles()) {
      throw new LimitExceededException(
          "the job left "
              + files.size()
              + " files under $BUILDQUEUE_ARTIFACTS; the limit (maxFiles) is "
              + limits.maxFiles()
              + ". Nothing was published: archive them into fewer files.");
    }
    long total = 0;
    for (LocalArtifact f : files) {
      String problem = nameProblem(f.name());
      if (problem != null) {
        throw new LimitExceededException(problem + ". Nothing was published.");
      }
      if (f.bytes() > limits.maxFileBytes()) {
        throw new LimitExceededException(
            "artifact \""
                + f.name()
                + "\" has "
                + f.bytes()
                + " bytes; the limit (maxFileBytes) is "
                + limits.maxFileBytes()
                + " bytes a file. Nothing was published.");
      }
      total += f.bytes();
    }
    if (total > limits.maxTotalBytes()) {
      throw new LimitExceededException(
          "the job's artifacts have "
              + total
              + " bytes in all; the limit (maxTotalBytes) is "
              + limits.maxTotalBytes()
              + " bytes. Nothing was published.");
    }
  }

  /**
   * Why {@code name} cannot be an artifact's name, or null if it can: relative, '/'-separated, no
   * empty, {@code .} or {@code ..} part, no control character or backslash, at most {@link
   * ArtifactLimits#MAX_NAME_BYTES} bytes.
   */
  public static String nameProblem(String name) {
    if (name == null || name.isEmpty()) {
      return "an artifact's name must not be empty";
    }
    int bytes = name.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > ArtifactLimits.MAX_NAME_BYTES) {
      return "artifact \""
          + name.substring(0, 40)
          + "…\" has a name of "
          + bytes
          + " bytes; the limit is "
          + ArtifactLimits.MAX_NAME_BYTES
          + " bytes";
    }
    if (BAD_CHARS.matcher(name).find()) {
      return "artifact \"" + name + "\" has a control character or a backslash in its name";
    }
    if (name.startsWith("/")) {
      return "artifact \"" + name + "\" must be a relative name";
    }
    for (String part : name.split("/", -1)) {
      if (part.isEmpty() || part.equals(".") || part.equals("..")) {
        return "artifact \""
            + name
            + "\" has an empty, \".\" or \"..\" part; names are relative paths like"
            + " \"dist/app.tar.gz\"";
      }
    }
    return null;
  }

  private static String nameOf(Path dir, Path file) {
    return dir.relativize(file).toString().replace(java.io.File.separatorChar, '/');
  }
}
