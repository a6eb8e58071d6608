package buildqueue.worker;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.core.JobStatus;
import buildqueue.core.WorkerTransitions;
import buildqueue.core.WorkerTransitions.AssignedJob;
import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.core.WorkerTransitions.FollowUps;
import buildqueue.db.Json;
import buildqueue.worker.WorkerLoop.Listener;
import buildqueue.worker.WorkerLoop.Point;
import java.lang.System.Logger.Level;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongSupplier;

/**
 * One job on a worker, for {@link WorkerLoop}: its handler runs, and its outcome becomes the one
 * fenced statement that ends it (with its follow-ups, in one transaction) and chains the next, or
 * the interruption that sends it back to its lane. A worker told to stop sends a job chained to it
 * as the stop came back unrun, and takes none after it.
 */
final class JobRun {
  private static final System.Logger LOG = System.getLogger(JobRun.class.getName());

  private final WorkerTransitions transitions;
  private final JobHandlers handlers;
  private final WorkerProcess process;
  private final Listener listener;
  private final JobLogSink logSink;
  private final LongSupplier nanoTime;
  private final WorkerStop stop;
  private final long maxLogBytes;
  private final java.time.Duration heartbeat;
  private final ArtifactStore artifacts;

  JobRun(
      WorkerTransitions transitions,
      JobHandlers handlers,
      WorkerProcess process,
      Listener listener,
      JobLogSink logSink,
      LongSupplier nanoTime,
      WorkerStop stop,
      long maxLogBytes,
      java.time.Duration heartbeat,
      ArtifactStore artifacts) {
    this.transitions = transitions;
    this.handlers = handlers;
    this.process = process;
    this.listener = listener;
    this.logSink = logSink;
    this.nanoTime = nanoTime;
    this.stop = stop;
    this.maxLogBytes = maxLogBytes;
    this.heartbeat = heartbeat;
    this.artifacts = artifacts;
  }

  /**
   * Runs the job and ends it. Files its attempt uploaded but did not publish (its end refused, the
   * job failed or was interrupted after the upload) are removed here; a worker killed first leaves
   * them to {@code ArtifactSweep}.
   */
  Ended run(long workerId, UUID token, AssignedJob job) {
    WorkerJobContext context = context(workerId, token, job);
    Ended ended = runAndEnd(context);
    if (context.uploadedTo() != null && !context.published()) {
      try {
        artifacts.removeAttempt(context.uploadedTo());
      } catch (java.io.IOException | RuntimeException e) {
        LOG.log(
            Level.WARNING,
            "job {0}: could not remove its unpublished artifacts (the sweep will): {1}",
            job.id(),
            e.toString());
      }
    }
    return ended;
  }

  private WorkerJobContext context(long workerId, UUID token, AssignedJob job) {
    JobLog jobLog = new JobLog(job.id(), logSink, WorkerLoop.LOG_TAIL_BYTES, maxLogBytes);
    return new WorkerJobContext(
        workerId,
        token,
        job,
        transitions,
        handlers,
        stop,
        listener,
        process,
        jobLog,
        new CheckInPacing(nanoTime, jobLog, job.progress(), heartbeat),
        artifacts);
  }

  private Ended runAndEnd(WorkerJobContext context) {
    long workerId = context.workerId();
    UUID token = context.token();
    AssignedJob job = context.job();
    JobStatus status;
    String error = null;
    if (stop.requested() && !job.cancelRequested()) {
      // Chained to this worker as the stop came: back to the head of its lane, not run here.
      listener.at(Point.AFTER_JOB_BEFORE_END, workerId);
      return interrupted(context, stopReason());
    }
    if (job.cancelRequested()) {
      status = JobStatus.CANCELLED;
    } else {
      JobOutcome outcome;
      try {
        outcome = runHandler(context);
      } finally {
        context.log().finish();
        logSink.close(job.id());
      }
      if (context.queueFault() != null) {
        // The queue's own database failed under the handler: a worker fault, not the job's. The
        // worker dies with it and the job is requeued once the exit is seen.
        throw context.queueFault();
      }
      if (context.fencedOff()) {
        return new Ended.FencedOff();
      }
      if (context.cancelled()) {
        status = JobStatus.CANCELLED;
      } else if (outcome instanceof JobOutcome.Failed f) {
        status = JobStatus.FAILED;
        error = f.message();
      } else if (outcome instanceof JobOutcome.Interrupted i) {
        listener.at(Point.AFTER_JOB_BEFORE_END, workerId);
        return interrupted(context, i.reason());
      } else {
        status = JobStatus.SUCCEEDED;
      }
    }
    listener.at(Point.AFTER_JOB_BEFORE_END, workerId);
    JobStatus finalStatus = status;
    String finalError = error;
    WorkerTransitions.LogWrite log = context.unsavedLog();
    Integer progress = context.unsavedProgress();
    // Read once: a stop that comes after this end is seen at the next job, which it sends back.
    WorkerTransitions ending = stop.requested() ? transitions.withoutChaining() : transitions;
    Json published = status == JobStatus.SUCCEEDED ? context.uploaded() : null;
    if (status == JobStatus.SUCCEEDED && !context.followUps().isEmpty()) {
      Json followUps = new Json(context.followUps().toString());
      return ending.transactionally(
          tx -> {
            FollowUps added = ending.addFollowUps(tx, workerId, token, job.id(), followUps);
            if (added instanceof FollowUps.TooLarge tooLarge) {
              return ending.end(
                  tx,
                  workerId,
                  token,
                  job.id(),
                  JobStatus.FAILED,
                  tooLarge.message(),
                  progress,
                  log);
            }
            if (!(added instanceof FollowUps.Added)) {
              return new Ended.FencedOff();
            }
            return published == null
                ? ending.end(tx, workerId, token, job.id(), finalStatus, finalError, progress, log)
                : publishing(
                    context,
                    ending.endPublishing(tx, workerId, token, job.id(), published, progress, log));
          });
    }
    if (published != null) {
      return publishing(
          context, ending.endPublishing(workerId, token, job.id(), published, progress, log));
    }
    return ending.end(workerId, token, job.id(), finalStatus, finalError, progress, log);
  }

  /** An end that published unless it was fenced off. */
  private static Ended publishing(WorkerJobContext context, Ended ended) {
    if (!(ended instanceof Ended.FencedOff)) {
      context.markPublished();
    }
    return ended;
  }

  /**
   * The job asked to be retried: it goes back to the head of its lane (or fails after too many
   * interruptions without progress), and this worker takes the oldest ready job of its lane next,
   * which may be the same one, as a fresh attempt. A worker told to stop takes none: it drains.
   *
   * <p>An interruption for a stop counts as any other does (the rule of {@code
   * build_job_interruption}): a job that moved forward on this attempt starts counting again, one
   * that did not counts one more, and after {@link buildqueue.core.ExitTransitions#MAX_RECOVERIES}
   * in a row it fails. It is what the stop's evidence would decide without it, with the progress
   * the program wrote in its grace; a job stopped again and again without progress must end.
   */
  private Ended interrupted(WorkerJobContext context, String reason) {
    Optional<JobStatus> now =
        transitions.interrupt(
            context.workerId(),
            context.token(),
            context.jobId(),
            reason,
            context.unsavedProgress(),
            context.unsavedLog());
    if (now.isEmpty()) {
      return new Ended.FencedOff();
    }
    if (stop.requested()) {
      LOG.log(
          Level.INFO,
          "worker {0}: told to stop; job {1} interrupted with its progress, now {2}; draining",
          context.workerId(),
          context.jobId(),
          now.get().sql());
      return transitions.drain(context.workerId(), context.token())
          ? new Ended.Drained()
          : new Ended.FencedOff();
    }
    return transitions.takeNext(context.workerId(), context.token());
  }

  private String stopReason() {
    return WorkerStop.INTERRUPTION_REASON_PREFIX + stop.reason();
  }

  private JobOutcome runHandler(WorkerJobContext context) {
    AssignedJob job = context.job();
    Optional<JobHandler> handler = handlers.get(job.kind());
    if (handler.isEmpty()) {
      return JobOutcome.failed(
          "This worker has no handler for job kind \""
              + job.kind()
              + "\"; deploy a worker image that knows it, then resubmit.");
    }
    try {
      JobOutcome outcome = handler.get().run(context);
      return outcome == null
          ? JobOutcome.failed("handler for " + job.kind() + " returned no outcome")
          : outcome;
    } catch (JobCancelledException | WorkerFencedOffException expected) {
      return JobOutcome.failed(expected.getMessage()); // the flags decide; this outcome is unused
    } catch (WorkerStoppingException stopping) {
      return JobOutcome.interrupted(stopReason());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return JobOutcome.failed("interrupted");
    } catch (Exception e) {
      String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      return JobOutcome.failed(message);
    }
  }
}
