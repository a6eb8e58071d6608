package buildqueue.worker;

import buildqueue.artifacts.ArtifactFiles;
import buildqueue.artifacts.NoArtifactStore;
import buildqueue.kinds.ArtifactLimits;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;

/** What a running job sees of the queue. */
public interface JobContext {
  long jobId();

  String userId();

  String kind();

  JsonNode payload();

  /** The progress recorded before this attempt started: resume from here. */
  int progress();

  /** 1 for the first dispatch of this job, 2 after one interruption, and so on. */
  int attempt();

  /**
   * Records progress (fenced by this worker's token). A job that moved forward since its last
   * interruption has its recovery count reset.
   *
   * @throws JobCancelledException the owner cancelled the job: stop and return
   * @throws WorkerStoppingException the worker was told to stop: return; the job is interrupted
   * @throws WorkerFencedOffException this worker no longer owns the job: stop at once
   */
  void reportProgress(int progress);

  /**
   * Enqueues a job for the same user, committed together with this job's success and not at all if
   * it fails.
   */
  void enqueueFollowUp(String kind, JsonNode payload);

  /**
   * Ends the worker abruptly, as a crash would: a process exits with no cleanup, an in-process
   * worker stops writing and unwinds. For demos and fault tests.
   */
  void crashWorker();

  /**
   * The job's output: each line goes to the worker's log at once and to the tail the queue keeps.
   */
  JobLog log();

  /**
   * Uploads the files a program left under {@code directory} ({@code $BUILDQUEUE_ARTIFACTS}) as
   * this attempt's, for the job's end to publish (docs/architecture.md, Artifacts): checked first
   * against {@code kindLimits} within {@link ArtifactLimits#GLOBAL}, so that nothing is stored for
   * a job past a limit. Call it only once the program exited 0.
   *
   * @return null when they are uploaded (or there are none); else why they are refused, naming the
   *     limit: fail the job with it
   * @throws IOException the store failed: the attempt is interrupted, to be tried again
   * @throws WorkerFencedOffException this worker no longer owns the job: nothing was uploaded
   */
  default String uploadArtifacts(Path directory, ArtifactLimits kindLimits) throws IOException {
    try {
      return ArtifactFiles.collect(directory, kindLimits.within(ArtifactLimits.GLOBAL)).isEmpty()
          ? null
          : NoArtifactStore.REFUSAL;
    } catch (ArtifactFiles.LimitExceededException e) {
      return e.getMessage();
    }
  }

  /**
   * Copies the published artifacts of {@code parentJobId} (a succeeded job of the same user) into
   * {@code into}, for a follow-up whose payload names them ({@code "artifactsOf"}).
   *
   * @return null when copied; else why not (no such job of the user's, none published): fail the
   *     job with it
   * @throws IOException the store failed: the attempt is interrupted
   */
  default String fetchParentArtifacts(long parentJobId, Path into) throws IOException {
    return NoArtifactStore.REFUSAL;
  }

  /** What {@link #checkIn} learned. */
  enum CheckIn {
    /** Nothing to do but go on. */
    GO_ON,
    /**
     * The job's owner asked to cancel it: stop it and return; the worker ends it {@code cancelled}.
     */
    CANCEL_REQUESTED,
    /**
     * The worker was told to stop (SIGTERM, {@link WorkerStop}): stop the job within {@link
     * #stopTimeLeft} and return {@link JobOutcome.Interrupted} (or its outcome, if it finished);
     * the worker records the interruption with the job's progress and takes no further job.
     */
    STOP_REQUESTED
  }

  /**
   * Whether the worker was told to stop ({@link WorkerStop}): read without a statement, so that a
   * program is signalled before the next check-in's statement, which then answers {@link
   * CheckIn#STOP_REQUESTED} too.
   */
  /**
   * The trace context its submitter gave the job ({@code traceparent} on {@code POST /jobs}); empty
   * when none. A program gets it as {@code TRACEPARENT} with a span id of its own per attempt.
   */
  default java.util.Optional<buildqueue.core.TraceContext> traceparent() {
    return java.util.Optional.empty();
  }

  default boolean stopRequested() {
    return false;
  }

  /**
   * Once {@link CheckIn#STOP_REQUESTED}: how long the job's processes may still run, from now,
   * before the worker must record the interruption and exit (its platform's stop timeout less a
   * reserve). A program's grace is cut to this.
   */
  default java.time.Duration stopTimeLeft() {
    return WorkerStop.DEFAULT_STOP_TIMEOUT;
  }

  /**
   * For a job that runs on its own (a process) while the worker watches it: call it often (every
   * 100 ms or so). It writes one fenced statement only when one is due — new progress or new log
   * output (each at most every 2 s), or else a heartbeat (every {@link #HEARTBEAT_INTERVAL}) — and
   * otherwise returns at once with what the last one said. A cancel comes as a stop of the worker
   * ({@link CheckIn#STOP_REQUESTED}; the job still ends {@code cancelled}, by its flag); a
   * statement's reading of the flag ({@link CheckIn#CANCEL_REQUESTED}) is the fallback for a stop
   * that was lost. Once the worker is told to stop, every check-in answers {@link
   * CheckIn#STOP_REQUESTED}: a cancel seen before goes on, and a job cancelled meanwhile still ends
   * {@code cancelled}.
   *
   * @param latestProgress the job's latest progress, or null while it has reported none
   * @throws WorkerFencedOffException this worker no longer owns the job: stop it at once
   */
  CheckIn checkIn(Integer latestProgress);

  /**
   * The progress a program reached after its last check-in (its last control lines, read once it
   * exited): written with the job's end or interruption, in that statement, not in one of its own.
   */
  void finalProgress(int progress);

  /**
   * The longest a running job goes without a check-in statement (its heartbeat), by default: the
   * one that reads the cancel flag when nothing else is due. A cancel is pushed (its worker is
   * stopped, within seconds), so this bounds only a cancel whose stop was lost, and sets what a
   * quiet build costs: one statement a minute. {@link WorkerLoop#withHeartbeat} changes it.
   */
  java.time.Duration HEARTBEAT_INTERVAL = java.time.Duration.ofMinutes(1);
}
