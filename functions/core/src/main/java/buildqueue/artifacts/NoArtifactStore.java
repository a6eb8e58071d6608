package buildqueue.artifacts;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The store of a setup that keeps no artifacts: a job whose program leaves files under {@code
 * $BUILDQUEUE_ARTIFACTS} fails saying so, and the API has nothing to download.
 */
public final class NoArtifactStore implements ArtifactStore {
  /** The one instance. */
  public static final ArtifactStore NONE = new NoArtifactStore();

  /** What a job that left artifacts is told. */
  public static final String REFUSAL =
      "this queue keeps no artifacts (no artifact store is configured); the job left files under"
          + " $BUILDQUEUE_ARTIFACTS";

  private NoArtifactStore() {}

  @Override
  public StoredArtifact put(AttemptKey attempt, String name, Path file) throws IOException {
    throw new IOException(REFUSAL);
  }

  @Override
  public void removeAttempt(AttemptKey attempt) {}

  @Override
  public Download download(AttemptKey attempt, String name, Duration validFor) throws IOException {
    throw new java.nio.file.NoSuchFileException(attempt.prefix() + name);
  }
}
