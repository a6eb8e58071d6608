package buildqueue.worker.exec;

import buildqueue.worker.JobLog;
import buildqueue.worker.JobLogSink;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where a local worker sends its jobs' output: a file per job, {@code <dir>/job-<id>.log}, appended
 * across attempts with a header line for each. The output is kept once: the worker's own output
 * (which the local platform keeps in {@code workers/worker-<id>.log}) gets one line per attempt
 * naming the file, and a job's lines, tagged {@code [job 42 stderr] text}, only where there is no
 * file (no directory, or one that cannot be written: given up, with one warning). Never throws.
 * What it receives is already capped ({@link JobLog}).
 */
public final class LocalJobLogSink implements JobLogSink {
  private static final System.Logger LOG = System.getLogger(LocalJobLogSink.class.getName());

  /**
   * The directory of the per-job files; the local platform sets it (data directory's {@code
   * jobs/}).
   */
  public static final String JOB_LOG_DIR = "BUILDQUEUE_JOB_LOG_DIR";

  private final PrintStream out;
  private final Path dir;
  private final String worker;
  private final Map<Long, BufferedWriter> open = new ConcurrentHashMap<>();
  private final Map<Long, Boolean> failed = new ConcurrentHashMap<>();

  /**
   * @param out the worker's own output
   * @param dir where the per-job files go; null for none
   * @param worker names the worker in each attempt's header (its id), or null
   */
  public LocalJobLogSink(PrintStream out, Path dir, String worker) {
    this.out = out;
    this.dir = dir == null ? null : dir.toAbsolutePath();
    this.worker = worker;
  }

  /** The sink of a local worker process: its stdout, and files in {@value #JOB_LOG_DIR} if set. */
  public static LocalJobLogSink forThisWorker(Map<String, String> env) {
    String dir = env.get(JOB_LOG_DIR);
    return new LocalJobLogSink(
        System.out,
        dir == null || dir.isBlank() ? null : Path.of(dir.strip()),
        env.get("BUILDQUEUE_WORKER_ID"));
  }

  @Override
  public void line(long jobId, JobLog.Stream stream, String text) {
    if (dir == null || failed.containsKey(jobId)) {
      toWorkerOutput(jobId, stream, text);
      return;
    }
    try {
      BufferedWriter w = writerOf(jobId);
      synchronized (w) {
        w.write(stream == JobLog.Stream.WORKER ? "[buildqueue] " + text : text);
        w.newLine();
        w.flush(); // someone may be following the file
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      giveUp(jobId, e);
      toWorkerOutput(jobId, stream, text);
    }
  }

  private void toWorkerOutput(long jobId, JobLog.Stream stream, String text) {
    out.println("[job " + jobId + " " + stream.name().toLowerCase(Locale.ROOT) + "] " + text);
  }

  /** The job's open file; opened (with this attempt's header) by its first line. */
  private synchronized BufferedWriter writerOf(long jobId) throws IOException {
    BufferedWriter w = open.get(jobId);
    if (w == null) {
      Files.createDirectories(dir);
      w =
          Files.newBufferedWriter(
              file(jobId),
              StandardCharsets.UTF_8,
              StandardOpenOption.CREATE,
              StandardOpenOption.APPEND);
      w.write(
          "=== "
              + Instant.now()
              + (worker == null ? "" : " worker " + worker)
              + ": job "
              + jobId
              + " ===");
      w.newLine();
      open.put(jobId, w);
      out.println("[job " + jobId + "] output in " + file(jobId));
    }
    return w;
  }

  private void giveUp(long jobId, Exception e) {
    if (failed.put(jobId, Boolean.TRUE) == null) {
      LOG.log(
          Level.WARNING,
          "job {0}: its log file {1} cannot be written ({2}); its lines go to this worker's"
              + " output only",
          jobId,
          file(jobId),
          e.getMessage());
    }
    BufferedWriter w = open.remove(jobId);
    if (w != null) {
      try {
        w.close();
      } catch (IOException ignored) {
        // already given up
      }
    }
  }

  private Path file(long jobId) {
    return dir.resolve("job-" + jobId + ".log");
  }

  @Override
  public String location(long jobId) {
    return dir == null ? null : file(jobId).toString();
  }

  @Override
  public void close(long jobId) {
    failed.remove(jobId);
    BufferedWriter w = open.remove(jobId);
    if (w != null) {
      try {
        synchronized (w) {
          w.close();
        }
      } catch (IOException e) {
        LOG.log(Level.WARNING, "job {0}: closing its log file failed: {1}", jobId, e.getMessage());
      }
    }
  }
}
