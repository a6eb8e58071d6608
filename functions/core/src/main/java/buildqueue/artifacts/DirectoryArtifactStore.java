package buildqueue.artifacts;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;

/**
 * The local {@link ArtifactStore}: a directory (the local runtime's {@code <data dir>/artifacts}),
 * each attempt's files under {@code <root>/jobs/<jobId>/attempt-<n>-worker-<id>/}. A put creates
 * its file new ({@code CREATE_NEW}: never overwrites, as S3's {@code If-None-Match: *}); a download
 * is the file itself, which the server streams.
 */
public final class DirectoryArtifactStore implements ArtifactStore {
  private final Path root;

  public DirectoryArtifactStore(Path root) {
    this.root = root.toAbsolutePath().normalize();
  }

  public Path root() {
    return root;
  }

  /** Whether no attempt has any file here: the sweep then has nothing to look for. */
  public boolean isEmpty() throws IOException {
    Path jobs = root.resolve("jobs");
    if (!Files.isDirectory(jobs)) {
      return true;
    }
    try (var entries = Files.list(jobs)) {
      return entries.findAny().isEmpty();
    }
  }

  @Override
  public StoredArtifact put(AttemptKey attempt, String name, Path file) throws IOException {
    Path target = place(attempt, name);
    Files.createDirectories(target.getParent());
    MessageDigest sha256 = sha256();
    long bytes;
    try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS);
        OutputStream out =
            new DigestOutputStream(
                Files.newOutputStream(
                    target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                sha256)) {
      bytes = in.transferTo(out);
    }
    return new StoredArtifact(name, bytes, HexFormat.of().formatHex(sha256.digest()));
  }

  @Override
  public void removeAttempt(AttemptKey attempt) throws IOException {
    Path dir = root.resolve(attempt.prefix()).normalize();
    if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      Files.walkFileTree(
          dir,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
              Files.deleteIfExists(f);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
              Files.deleteIfExists(d);
              return FileVisitResult.CONTINUE;
            }
          });
    }
    try {
      // The job's directory goes with its last attempt (another attempt's may still be there).
      Files.deleteIfExists(dir.getParent());
    } catch (java.nio.file.DirectoryNotEmptyException stillUsed) {
      // another attempt of the job still has files
    }
  }

  @Override
  public Download download(AttemptKey attempt, String name, Duration validFor) throws IOException {
    Path file = place(attempt, name);
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new NoSuchFileException(attempt.prefix() + name);
    }
    return new Download.LocalFile(file, Files.size(file));
  }

  /** The file's path, refusing a name that would leave the attempt's directory. */
  private Path place(AttemptKey attempt, String name) throws IOException {
    String problem = ArtifactFiles.nameProblem(name);
    if (problem != null) {
      throw new IOException(problem);
    }
    Path dir = root.resolve(attempt.prefix()).normalize();
    Path target = dir.resolve(name).normalize();
    if (!target.startsWith(dir)) {
      throw new IOException("artifact \"" + name + "\" would leave its attempt's directory");
    }
    return target;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }
}
