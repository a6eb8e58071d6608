package buildqueue.testing;

import buildqueue.worker.JobContext;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobLogSink;
import buildqueue.worker.WorkerFencedOffException;
import buildqueue.worker.WorkerLoop;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link JobContext} without a queue, for running a job's code in a test: it records what the job
 * reports (progress, log lines, follow-ups, check-ins) and answers check-ins as the test says: go
 * on, cancel requested ({@link #requestCancel}), the worker stopping ({@link #requestStop}), or
 * fenced off ({@link #fenceOff}).
 */
public final class RecordingJobContext implements JobContext {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One line the job's log received, and when ({@link System#nanoTime}). */
  public record Line(JobLog.Stream stream, String text, long atNanos) {}

  /** One follow-up the job submitted. */
  public record FollowUp(String kind, JsonNode payload) {}

  private final long jobId;
  private final String kind;
  private final JsonNode payload;
  private final int progress;
  private final int attempt;
  private final Set<String> followUpKinds;
  private final JobLog log;
  private final List<Line> lines =
      java.util.Collections.synchronizedList(new java.util.ArrayList<>());
  private final List<Integer> checkedInProgress = new CopyOnWriteArrayList<>();
  private final List<Integer> reportedProgress = new CopyOnWriteArrayList<>();
  private final List<FollowUp> followUps = new CopyOnWriteArrayList<>();
  private final AtomicInteger checkIns = new AtomicInteger();
  private volatile Integer finalProgress;
  private volatile boolean cancelRequested;
  private volatile java.time.Duration stopTimeLeft;
  private volatile boolean fencedOff;

  private RecordingJobContext(
      long jobId,
      String kind,
      JsonNode payload,
      int progress,
      int attempt,
      Set<String> followUpKinds,
      int tailBytes) {
    this.jobId = jobId;
    this.kind = kind;
    this.payload = payload;
    this.progress = progress;
    this.attempt = attempt;
    this.followUpKinds = Set.copyOf(followUpKinds);
    JobLogSink sink = (id, stream, text) -> lines.add(new Line(stream, text, System.nanoTime()));
    this.log = new JobLog(jobId, sink, tailBytes);
  }

  /**
   * Job 42 of kind {@code kind}, first attempt, no progress; follow-ups of any kind in {@code
   * followUpKinds}.
   */
  public static RecordingJobContext of(String kind, String payloadJson, String... followUpKinds) {
    return new RecordingJobContext(
        42, kind, parse(payloadJson), 0, 1, Set.of(followUpKinds), WorkerLoop.LOG_TAIL_BYTES);
  }

  /** The same job, as a later attempt that resumes from {@code progress}. */
  public RecordingJobContext resumed(int attempt, int progress) {
    return new RecordingJobContext(
        jobId, kind, payload, progress, attempt, followUpKinds, WorkerLoop.LOG_TAIL_BYTES);
  }

  private static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(e);
    }
  }

  /**
   * From now on, check-ins answer {@link CheckIn#STOP_REQUESTED}, as its worker's would once told
   * to stop, and {@link #stopTimeLeft} is {@code timeLeft}.
   */
  public void requestStop(java.time.Duration timeLeft) {
    stopTimeLeft = timeLeft;
  }

  @Override
  public boolean stopRequested() {
    return stopTimeLeft != null;
  }

  @Override
  public java.time.Duration stopTimeLeft() {
    java.time.Duration left = stopTimeLeft;
    return left == null ? JobContext.super.stopTimeLeft() : left;
  }

  /** From now on, check-ins answer {@link CheckIn#CANCEL_REQUESTED}. */
  public void requestCancel() {
    cancelRequested = true;
  }

  /** From now on, check-ins throw {@link WorkerFencedOffException}. */
  public void fenceOff() {
    fencedOff = true;
  }

  public List<Line> lines() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  /** The texts of the lines of one stream. */
  public List<String> lines(JobLog.Stream stream) {
    return lines().stream().filter(l -> l.stream() == stream).map(Line::text).toList();
  }

  /** Whether a line of this stream contains {@code text}. */
  public boolean logged(JobLog.Stream stream, String text) {
    return lines(stream).stream().anyMatch(l -> l.contains(text));
  }

  /**
   * The non-null progress values passed to {@link #checkIn}, in order, consecutive repeats dropped.
   */
  public List<Integer> checkedInProgress() {
    return List.copyOf(checkedInProgress);
  }

  public List<Integer> reportedProgress() {
    return List.copyOf(reportedProgress);
  }

  /** What {@link #finalProgress} was given last, if anything. */
  public Integer finalProgress() {
    return finalProgress;
  }

  public List<FollowUp> followUps() {
    return List.copyOf(followUps);
  }

  public int checkIns() {
    return checkIns.get();
  }

  @Override
  public long jobId() {
    return jobId;
  }

  @Override
  public String userId() {
    return "ada";
  }

  @Override
  public String kind() {
    return kind;
  }

  @Override
  public JsonNode payload() {
    return payload;
  }

  @Override
  public int progress() {
    return progress;
  }

  @Override
  public int attempt() {
    return attempt;
  }

  @Override
  public void reportProgress(int progress) {
    if (fencedOff) {
      throw new WorkerFencedOffException(1, jobId);
    }
    reportedProgress.add(progress);
  }

  @Override
  public void enqueueFollowUp(String kind, JsonNode payload) {
    if (!followUpKinds.contains(kind)) {
      throw new IllegalArgumentException(
          "follow-up kind \"" + kind + "\" is not a kind this worker knows");
    }
    followUps.add(new FollowUp(kind, payload));
  }

  @Override
  public void crashWorker() {
    throw new UnsupportedOperationException("a recorded job cannot crash its worker");
  }

  @Override
  public JobLog log() {
    return log;
  }

  @Override
  public void finalProgress(int progress) {
    finalProgress = progress;
  }

  @Override
  public CheckIn checkIn(Integer latestProgress) {
    checkIns.incrementAndGet();
    if (latestProgress != null
        && (checkedInProgress.isEmpty()
            || !checkedInProgress.get(checkedInProgress.size() - 1).equals(latestProgress))) {
      checkedInProgress.add(latestProgress);
    }
    if (fencedOff) {
      throw new WorkerFencedOffException(1, jobId);
    }
    if (stopTimeLeft != null) {
      return CheckIn.STOP_REQUESTED;
    }
    return cancelRequested ? CheckIn.CANCEL_REQUESTED : CheckIn.GO_ON;
  }
}
