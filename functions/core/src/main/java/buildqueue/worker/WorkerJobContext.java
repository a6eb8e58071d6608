package buildqueue.worker;

import buildqueue.artifacts.ArtifactFiles;
import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.artifacts.NoArtifactStore;
import buildqueue.core.WorkerTransitions;
import buildqueue.core.WorkerTransitions.AssignedJob;
import buildqueue.core.WorkerTransitions.ProgressAck;
import buildqueue.db.Json;
import buildqueue.kinds.ArtifactLimits;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.UUID;

/**
 * The {@link JobContext} the {@link WorkerLoop} gives one job: its check-ins are fenced statements
 * of its worker, paced by {@link CheckInPacing}; it collects the job's follow-ups (committed with
 * its end) and remembers what the statements said (cancelled, fenced off, a fault of the queue's
 * own database) for the loop to act on when the handler returns.
 */
final class WorkerJobContext implements JobContext {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final long workerId;
  private final UUID token;
  private final AssignedJob job;
  private final WorkerTransitions transitions;
  private final JobHandlers handlers;
  private final WorkerStop stop;
  private final WorkerLoop.Listener listener;
  private final WorkerProcess process;
  private final JobLog log;
  private final CheckInPacing pacing;
  private final ArrayNode followUps = JSON.createArrayNode();
  private JsonNode payload;
  private volatile boolean cancelled;
  private boolean checkedInAtStop;
  private volatile boolean fencedOff;
  private volatile RuntimeException queueFault;
  private final ArtifactStore artifacts;
  private AttemptKey uploadedTo;
  private ArrayNode uploaded;
  private boolean published;

  WorkerJobContext(
      long workerId,
      UUID token,
      AssignedJob job,
      WorkerTransitions transitions,
      JobHandlers handlers,
      WorkerStop stop,
      WorkerLoop.Listener listener,
      WorkerProcess process,
      JobLog log,
      CheckInPacing pacing,
      ArtifactStore artifacts) {
    this.workerId = workerId;
    this.token = token;
    this.job = job;
    this.transitions = transitions;
    this.handlers = handlers;
    this.stop = stop;
    this.listener = listener;
    this.process = process;
    this.log = log;
    this.pacing = pacing;
    this.artifacts = artifacts;
  }

  long workerId() {
    return workerId;
  }

  private java.util.Optional<buildqueue.core.TraceContext> traceparent;

  /** Read once per attempt, when a program asks (a statement only a program job pays). */
  @Override
  public java.util.Optional<buildqueue.core.TraceContext> traceparent() {
    if (traceparent == null) {
      try {
        traceparent = transitions.traceparent(workerId, token, job.id());
      } catch (RuntimeException e) {
        queueFault = e; // the queue's failure, not a verdict on the job
        throw e;
      }
    }
    return traceparent;
  }

  UUID token() {
    return token;
  }

  AssignedJob job() {
    return job;
  }

  /** The owner cancelled the job (a check-in said so). */
  boolean cancelled() {
    return cancelled;
  }

  /** A check-in changed nothing: the worker no longer owns the job. */
  boolean fencedOff() {
    return fencedOff;
  }

  /** A check-in failed in the queue's own database; null if none did. */
  RuntimeException queueFault() {
    return queueFault;
  }

  /** The follow-ups the job submitted, as the end's statement takes them; empty if none. */
  ArrayNode followUps() {
    return followUps;
  }

  @Override
  public long jobId() {
    return job.id();
  }

  @Override
  public String userId() {
    return job.userId();
  }

  @Override
  public String kind() {
    return job.kind();
  }

  @Override
  public JsonNode payload() {
    if (payload == null) {
      try {
        payload = JSON.readTree(job.payload().text());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return payload;
  }

  @Override
  public int progress() {
    return job.progress();
  }

  @Override
  public int attempt() {
    return job.attempt();
  }

  @Override
  public void reportProgress(int progress) {
    boolean logDue;
    synchronized (this) {
      logDue = pacing.logDue();
    }
    if (write(progress, logDue ? unsavedLog() : null) == CheckIn.CANCEL_REQUESTED) {
      throw new JobCancelledException(job.id());
    }
    if (stop.requested()) {
      throw new WorkerStoppingException(workerId, job.id());
    }
  }

  @Override
  public synchronized CheckIn checkIn(Integer latestProgress) {
    boolean stopping = stop.requested();
    CheckInPacing.Due due = pacing.due(latestProgress);
    CheckIn said;
    if (cancelled) {
      said = CheckIn.CANCEL_REQUESTED;
    } else if (stopping && !checkedInAtStop) {
      // The first check-in after a stop reads the cancel flag at once: a cancel arrives as a stop,
      // and the job must end cancelled even if its program then exits 0 in its grace. It saves
      // what is unsaved while it is at it. One statement per stop, none per minute.
      checkedInAtStop = true;
      said = write(pacing.unsavedProgress(), unsavedLog());
    } else if (due.any()) {
      said =
          write(due.progress() ? pacing.latestProgress() : null, due.log() ? unsavedLog() : null);
    } else {
      said = CheckIn.GO_ON;
    }
    // A stop cuts a cancel's grace too; a job cancelled meanwhile still ends cancelled (the flag).
    return stopping ? CheckIn.STOP_REQUESTED : said;
  }

  @Override
  public boolean stopRequested() {
    return stop.requested();
  }

  @Override
  public Duration stopTimeLeft() {
    return stop.programTimeLeft();
  }

  /** One fenced check-in statement; remembers what it saved. */
  private synchronized CheckIn write(Integer progress, WorkerTransitions.LogWrite logWrite) {
    ProgressAck ack;
    try {
      ack = transitions.checkIn(workerId, token, job.id(), progress, logWrite);
    } catch (RuntimeException e) {
      queueFault = e;
      throw e;
    }
    pacing.wrote(logWrite != null);
    if (ack == ProgressAck.FENCED_OFF) {
      fencedOff = true;
      throw new WorkerFencedOffException(workerId, job.id());
    }
    if (progress != null) {
      pacing.saved(progress);
      listener.at(WorkerLoop.Point.AFTER_PROGRESS, workerId);
    }
    if (ack == ProgressAck.CANCEL_REQUESTED) {
      cancelled = true;
      return CheckIn.CANCEL_REQUESTED;
    }
    return CheckIn.GO_ON;
  }

  @Override
  public synchronized void finalProgress(int progress) {
    pacing.finalProgress(progress);
  }

  /** The latest progress the job reported if no statement has written it yet, else null. */
  synchronized Integer unsavedProgress() {
    return pacing.unsavedProgress();
  }

  /** The log tail if it changed since it was last saved (and marks it saved), else null. */
  synchronized WorkerTransitions.LogWrite unsavedLog() {
    return pacing.unsavedLog();
  }

  @Override
  public JobLog log() {
    return log;
  }

  /**
   * Checked here, where every kind's follow-ups pass, so that a job never commits a follow-up its
   * worker's own catalogue would refuse at the API.
   */
  @Override
  public void enqueueFollowUp(String kind, JsonNode payload) {
    JobHandler handler =
        handlers
            .get(kind)
            .orElseThrow(
                () ->
                    new IllegalArgumentException(
                        "follow-up kind \""
                            + kind
                            + "\" is not a kind this worker knows ("
                            + String.join(", ", handlers.kinds())
                            + ")"));
    JsonNode p = payload == null || payload.isNull() ? JSON.createObjectNode() : payload;
    try {
      handler.validate(p.deepCopy());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "follow-up of kind \"" + kind + "\" has a payload its kind refuses: " + e.getMessage(),
          e);
    }
    followUps.addObject().put("kind", kind).set("payload", p);
  }

  /**
   * Checks the files against the kind's limits within the queue's, records the upload (fenced),
   * then puts each file under this attempt's place; the job's end publishes them.
   */
  @Override
  public String uploadArtifacts(Path directory, ArtifactLimits kindLimits) throws IOException {
    List<ArtifactFiles.LocalArtifact> files;
    try {
      files = ArtifactFiles.collect(directory, kindLimits.within(ArtifactLimits.GLOBAL));
    } catch (ArtifactFiles.LimitExceededException e) {
      return e.getMessage();
    }
    if (files.isEmpty()) {
      return null;
    }
    if (artifacts == NoArtifactStore.NONE) {
      return NoArtifactStore.REFUSAL;
    }
    OptionalInt attempt;
    try {
      attempt = transitions.stageArtifacts(workerId, token, job.id());
    } catch (RuntimeException e) {
      queueFault = e;
      throw e;
    }
    if (attempt.isEmpty()) {
      fencedOff = true;
      throw new WorkerFencedOffException(workerId, job.id());
    }
    uploadedTo = new AttemptKey(job.id(), attempt.getAsInt(), workerId);
    uploaded = JSON.createArrayNode();
    for (ArtifactFiles.LocalArtifact f : files) {
      ArtifactStore.StoredArtifact stored = artifacts.put(uploadedTo, f.name(), f.file());
      uploaded
          .addObject()
          .put("name", stored.name())
          .put("bytes", stored.bytes())
          .put("sha256", stored.sha256());
    }
    log.line(
        JobLog.Stream.WORKER,
        "uploaded " + files.size() + " artifact(s); the job's end publishes them");
    return null;
  }

  @Override
  public String fetchParentArtifacts(long parentJobId, Path into) throws IOException {
    List<WorkerTransitions.ParentArtifact> files;
    try {
      files = transitions.parentArtifacts(workerId, token, job.id(), parentJobId);
    } catch (RuntimeException e) {
      queueFault = e;
      throw e;
    }
    if (files.isEmpty()) {
      return "the payload's artifactsOf names job "
          + parentJobId
          + ", which is not a succeeded job of this user's with artifacts";
    }
    for (WorkerTransitions.ParentArtifact f : files) {
      Path target = into.resolve(f.name()).normalize();
      if (!target.startsWith(into)) {
        throw new IOException("artifact " + f.name() + " would leave " + into);
      }
      ParentDownloads.fetch(
          artifacts.download(
              new AttemptKey(parentJobId, f.attempt(), f.workerId()),
              f.name(),
              java.time.Duration.ofMinutes(15)),
          into,
          target);
    }
    log.line(
        JobLog.Stream.WORKER,
        "fetched " + files.size() + " artifact(s) of job " + parentJobId + " into " + into);
    return null;
  }

  /** Where this attempt uploaded its artifacts; null if it uploaded none. */
  AttemptKey uploadedTo() {
    return uploadedTo;
  }

  /** The uploaded artifacts as the publishing end takes them; null if none. */
  Json uploaded() {
    return uploaded == null ? null : new Json(uploaded.toString());
  }

  /** The end published them: they are the job's, not to be removed. */
  void markPublished() {
    published = true;
  }

  boolean published() {
    return published;
  }

  @Override
  public void crashWorker() {
    process.kill("job " + job.id() + " asked its worker to crash");
  }
}
