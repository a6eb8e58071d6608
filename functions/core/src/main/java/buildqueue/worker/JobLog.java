package buildqueue.worker;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;

/**
 * A job's output while it runs on this worker. Each line goes at once to the {@link JobLogSink}
 * (the worker's own log, tagged with the job id, and a file per job where there is one), and the
 * last {@code maxTailBytes} of it are kept as the tail the queue stores with the job, because the
 * database must not hold a log of unbounded size: a Data API row is at most 64 KB.
 *
 * <p>Thread-safe: a process's stdout and stderr are read on two threads.
 */
public final class JobLog {

  /** Where a line came from. */
  public enum Stream {
    STDOUT,
    STDERR,
    /** What the worker itself says about the job: its start, a timeout, a signal it sent. */
    WORKER
  }

  /** The longest line kept whole, in characters; a longer one is cut and marked. */
  public static final int MAX_LINE_CHARS = 8 * 1024;

  private static final String CUT = "… [line cut at " + MAX_LINE_CHARS + " characters]";

  private final long jobId;
  private final JobLogSink sink;
  private final int maxTailBytes;
  private final Deque<String> tail = new ArrayDeque<>();
  private long tailBytes;
  private long totalBytes;
  private long version;

  public JobLog(long jobId, JobLogSink sink, int maxTailBytes) {
    if (maxTailBytes < MAX_LINE_CHARS * 4 + CUT.length() * 4 + 1) {
      throw new IllegalArgumentException("a tail must hold at least one whole line, was " + maxTailBytes + " bytes");
    }
    this.jobId = jobId;
    this.sink = Objects.requireNonNull(sink, "sink");
    this.maxTailBytes = maxTailBytes;
  }

  public long jobId() {
    return jobId;
  }

  /** One line of output, without its line end. */
  public void line(Stream stream, String text) {
    String kept = text.length() > MAX_LINE_CHARS ? text.substring(0, MAX_LINE_CHARS) + CUT : text;
    sink.line(jobId, stream, kept);
    String stored = stream == Stream.WORKER ? "[buildqueue] " + kept : kept;
    long bytes = stored.getBytes(StandardCharsets.UTF_8).length + 1L;
    synchronized (this) {
      tail.addLast(stored);
      tailBytes += bytes;
      totalBytes += bytes;
      version++;
      while (tailBytes > maxTailBytes) {
        tailBytes -= tail.removeFirst().getBytes(StandardCharsets.UTF_8).length + 1L;
      }
    }
  }

  /** The last lines, each ending in a newline; at most {@code maxTailBytes} of UTF-8. */
  public synchronized Snapshot snapshot() {
    StringBuilder b = new StringBuilder((int) Math.min(tailBytes, Integer.MAX_VALUE));
    for (String l : tail) {
      b.append(l).append('\n');
    }
    return new Snapshot(b.toString(), totalBytes, version);
  }

  /** Where the whole log is, for the job's record: a file, a CloudWatch stream; or null. */
  public String location() {
    return sink.location(jobId);
  }

  /**
   * The tail at one moment.
   *
   * @param totalBytes every byte of output so far (lines and their line ends), kept or not
   * @param version grows with every line: a reader tells whether it has seen this tail
   */
  public record Snapshot(String tail, long totalBytes, long version) {}
}
