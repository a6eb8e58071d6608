package buildqueue.kinds;

/**
 * How much a job may publish as artifacts (docs/architecture.md, Artifacts): the queue's global
 * limits ({@link #GLOBAL}), and a kind's own in the catalogue ({@code "artifacts"}), which can only
 * lower them. A job past a limit fails, with an error naming the limit.
 *
 * @param maxFiles files one job may publish
 * @param maxFileBytes bytes of one file
 * @param maxTotalBytes bytes of all of a job's files together
 */
public record ArtifactLimits(int maxFiles, long maxFileBytes, long maxTotalBytes) {

  /** The longest name of an artifact, in UTF-8 bytes (relative path, '/'-separated). */
  public static final int MAX_NAME_BYTES = 255;

  /**
   * The queue's own limits. 1 GiB a file stays well under S3's 5 GB for one PUT; 100 files and 5
   * GiB in all keep one job's upload to minutes, not hours, of a worker's lease.
   */
  public static final ArtifactLimits GLOBAL = new ArtifactLimits(100, 1L << 30, 5L << 30);

  public ArtifactLimits {
    if (maxFiles < 0 || maxFileBytes < 0 || maxTotalBytes < 0) {
      throw new IllegalArgumentException(
          "artifact limits must be 0 or more, were "
              + maxFiles
              + " files, "
              + maxFileBytes
              + " bytes a file, "
              + maxTotalBytes
              + " bytes in all");
    }
  }

  /** Each limit the lower of this one's and {@code other}'s. */
  public ArtifactLimits within(ArtifactLimits other) {
    return new ArtifactLimits(
        Math.min(maxFiles, other.maxFiles),
        Math.min(maxFileBytes, other.maxFileBytes),
        Math.min(maxTotalBytes, other.maxTotalBytes));
  }
}
