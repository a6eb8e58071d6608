package buildqueue.artifacts;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Where an attempt's uploaded files live (docs/architecture.md, artifacts): a directory locally, S3
 * on AWS. A worker puts each file of a succeeding attempt under the attempt's own place before the
 * statement that ends the job; only that statement makes them the job's artifacts (fenced by the
 * worker's token). An attempt fenced off never publishes, and its files are removed.
 */
public interface ArtifactStore {

  /** One attempt of one job on one worker: its files' place is {@link #prefix()}. */
  record AttemptKey(long jobId, int attempt, long workerId) {
    /** The attempt's place: {@code jobs/<jobId>/attempt-<attempt>-worker-<workerId>/}. */
    public String prefix() {
      return "jobs/" + jobId + "/attempt-" + attempt + "-worker-" + workerId + "/";
    }
  }

  /** A stored file: its name (relative to the artifacts directory, '/'-separated), size, sha256. */
  record StoredArtifact(String name, long bytes, String sha256) {}

  /** How a client gets a published file. */
  sealed interface Download {
    /** A file the server streams itself (locally). */
    record LocalFile(Path file, long bytes) implements Download {}

    /** A URL the client is redirected to (a presigned S3 GET on AWS), valid for a while. */
    record Redirect(URI url) implements Download {}
  }

  /**
   * Stores one file of an attempt. Never overwrites: a second put of the same attempt and name
   * fails (S3: a conditional write, {@code If-None-Match: *}).
   */
  StoredArtifact put(AttemptKey attempt, String name, Path file) throws IOException;

  /** Removes every file of an attempt (a fenced-off or failed attempt's uploads). Idempotent. */
  void removeAttempt(AttemptKey attempt) throws IOException;

  /**
   * How a client downloads a published file of {@code attempt}, the link valid for {@code
   * validFor}.
   */
  Download download(AttemptKey attempt, String name, Duration validFor) throws IOException;
}
