package buildqueue.worker.exec;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Stream;

/**
 * One attempt's own directory, made fresh under the worker's base directory and deleted with
 * everything in it when the attempt ends:
 *
 * <pre>
 * job-&lt;id&gt;-&lt;attempt&gt;-&lt;random&gt;/   (mode 700)
 *   work/          the program's working directory
 *   tmp/           its TMPDIR
 *   home/          its HOME, empty: where its tools (npm, git, gradle) write their caches and
 *                  settings, so nothing one job leaves there reaches the next on the worker
 *   artifacts/     empty: what the program leaves here is uploaded as its artifacts if it
 *                  exits 0 ($BUILDQUEUE_ARTIFACTS)
 *   parent-artifacts/  only for a payload with "artifactsOf": the parent's artifacts, copied
 *                  ($BUILDQUEUE_PARENT_ARTIFACTS)
 *   payload.json   the job's payload ($BUILDQUEUE_PAYLOAD)
 *   control.jsonl  where it reports ($BUILDQUEUE_CONTROL)
 *   session        the program's session ({@link JobSession}), recorded before it runs, for
 *                  the platform to kill what a dead worker's job left running
 * </pre>
 */
public final class JobDirectory {
  static final String PREFIX = "job-";
  static final String SESSION_FILE = "session";

  private final Path root;

  private JobDirectory(Path root) {
    this.root = root;
  }

  /** Makes the directory and its files; the payload is written as given (JSON text). */
  public static JobDirectory create(Path base, long jobId, int attempt, byte[] payloadJson)
      throws IOException {
    Files.createDirectories(base);
    // createTempDirectory adds the random part and, on POSIX, makes the directory mode 700.
    Path root = Files.createTempDirectory(base, PREFIX + jobId + "-" + attempt + "-");
    JobDirectory dir = new JobDirectory(root);
    try {
      Files.createDirectory(dir.work());
      Files.createDirectory(dir.tmp());
      Files.createDirectory(dir.home());
      Files.createDirectory(dir.artifacts());
      Files.write(dir.payload(), payloadJson);
      Files.createFile(dir.control());
    } catch (IOException | RuntimeException e) {
      dir.delete();
      throw e;
    }
    return dir;
  }

  public Path root() {
    return root;
  }

  public Path work() {
    return root.resolve("work");
  }

  public Path tmp() {
    return root.resolve("tmp");
  }

  public Path home() {
    return root.resolve("home");
  }

  public Path artifacts() {
    return root.resolve("artifacts");
  }

  /**
   * A follow-up's copy of its parent's artifacts ($BUILDQUEUE_PARENT_ARTIFACTS), if it named one.
   */
  public Path parentArtifacts() {
    return root.resolve("parent-artifacts");
  }

  public Path payload() {
    return root.resolve("payload.json");
  }

  public Path control() {
    return root.resolve("control.jsonl");
  }

  public Path session() {
    return root.resolve(SESSION_FILE);
  }

  /** Deletes the directory and everything in it; true if nothing is left. */
  public boolean delete() {
    return deleteTree(root);
  }

  /** The job directories under a worker's base directory (a dead worker's leftovers). */
  static Stream<Path> under(Path base) throws IOException {
    return Files.list(base)
        .filter(p -> p.getFileName().toString().startsWith(PREFIX) && Files.isDirectory(p));
  }

  /**
   * Deletes a tree without following symbolic links (a job may link to anything). A program may
   * leave directories without write permission (Go's module cache does): they are made writable
   * before their entries are deleted.
   */
  static boolean deleteTree(Path root) {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return true;
    }
    try {
      Files.walkFileTree(
          root,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
              makeWritable(dir);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                throws IOException {
              Files.deleteIfExists(file);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
              if (e instanceof NoSuchFileException) {
                return FileVisitResult.CONTINUE;
              }
              Files.deleteIfExists(file); // an unreadable directory: empty ones can still go
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
              Files.deleteIfExists(dir);
              return FileVisitResult.CONTINUE;
            }
          });
      return true;
    } catch (IOException | RuntimeException e) {
      return !Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }
  }

  private static void makeWritable(Path dir) {
    try {
      Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
      perms.addAll(Files.getPosixFilePermissions(dir));
      if (perms.add(PosixFilePermission.OWNER_WRITE)
          | perms.add(PosixFilePermission.OWNER_EXECUTE)
          | perms.add(PosixFilePermission.OWNER_READ)) {
        Files.setPosixFilePermissions(dir, perms);
      }
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      // Not ours to change, or not POSIX: the delete below says whether it mattered.
    }
  }
}
