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
 * <p>The log is capped at {@code maxLogBytes} of the program's output: past it, the program's lines
 * are dropped (counted, but neither sent to the sink nor kept in the tail) while the worker's own
 * lines still go through, and {@link #finish()} writes one line that says how much was dropped. So
 * a job's whole log, wherever its sink keeps it, is at most the cap plus a few lines.
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

  /** A job's output kept at most, unless its worker is told otherwise: 100 MiB. */
  public static final long DEFAULT_MAX_LOG_BYTES = 100L * 1024 * 1024;

  private final long jobId;
  private final JobLogSink sink;
  private final int maxTailBytes;
  private final long maxLogBytes;
  private final Deque<String> tail = new ArrayDeque<>();
  private long tailBytes;
  private long totalBytes;
  private long version;

  /** The program's output kept so far, and what was dropped past the cap. */
  private long keptBytes;

  private long droppedBytes;
  private boolean finished;

  /** A log without a cap (tests that look at the tail only). */
  public JobLog(long jobId, JobLogSink sink, int maxTailBytes) {
    this(jobId, sink, maxTailBytes, Long.MAX_VALUE);
  }

  /**
   * @param maxTailBytes the tail kept for the queue, in bytes of UTF-8
   * @param maxLogBytes the program's output kept at most, in bytes of UTF-8 (line ends included)
   */
  public JobLog(long jobId, JobLogSink sink, int maxTailBytes, long maxLogBytes) {
    if (maxLogBytes < 1) {
      throw new IllegalArgumentException("a log's cap must be at least 1 byte, was " + maxLogBytes);
    }
    if (maxTailBytes < MAX_LINE_CHARS * 4 + CUT.length() * 4 + 1) {
      throw new IllegalArgumentException(
          "a tail must hold at least one whole line, was " + maxTailBytes + " bytes");
    }
    this.jobId = jobId;
    this.sink = Objects.requireNonNull(sink, "sink");
    this.maxTailBytes = maxTailBytes;
    this.maxLogBytes = maxLogBytes;
  }

  public long jobId() {
    return jobId;
  }

  /** One line of output, without its line end. */
  public void line(Stream stream, String text) {
    String kept = text.length() > MAX_LINE_CHARS ? text.substring(0, MAX_LINE_CHARS) + CUT : text;
    if (stream != Stream.WORKER && !withinCap(kept)) {
      return;
    }
    sink.line(jobId, stream, kept);
    keep(stream == Stream.WORKER ? "[buildqueue] " + kept : kept);
  }

  /**
   * Counts a line of the program's output against the cap: true if it is kept. Once one line is
   * dropped, every later one is too, so what is kept is the output's beginning, whole.
   */
  private synchronized boolean withinCap(String text) {
    long bytes = text.getBytes(StandardCharsets.UTF_8).length + 1L;
    if (droppedBytes == 0 && keptBytes + bytes <= maxLogBytes) {
      keptBytes += bytes;
      return true;
    }
    droppedBytes += bytes;
    return false;
  }

  /**
   * The attempt's output has ended: if some of it was dropped past the cap, writes the one line
   * that says so, to the sink and the tail. Later calls do nothing.
   */
  public void finish() {
    String mark;
    synchronized (this) {
      if (finished || droppedBytes == 0) {
        finished = true;
        return;
      }
      finished = true;
      mark =
          "output truncated after "
              + keptBytes
              + " bytes (the cap is "
              + maxLogBytes
              + "); "
              + droppedBytes
              + " bytes dropped";
    }
    sink.line(jobId, Stream.WORKER, mark);
    keep("[buildqueue] " + mark);
  }

  /** Bytes of the program's output dropped past the cap so far. */
  public synchronized long droppedBytes() {
    return droppedBytes;
  }

  private void keep(String stored) {
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
   * @param totalBytes every byte of the log so far (lines and their line ends), in the tail or not;
   *     output dropped past the cap does not count
   * @param version grows with every line: a reader tells whether it has seen this tail
   */
  public record Snapshot(String tail, long totalBytes, long version) {}
}
