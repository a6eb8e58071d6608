package buildqueue.worker;

import buildqueue.core.WorkerTransitions;
import buildqueue.core.WorkerTransitions.AssignedJob;
import buildqueue.core.WorkerTransitions.ProgressAck;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
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
      CheckInPacing pacing) {
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
  }

  long workerId() {
    return workerId;
  }

  private java.util.Optional<buildqueue.core.TraceContext> traceparent;

  /** Read once per attempt, when a program asks (a statement only a program job pays). */
  @Override
  public java.util.Optional<buildqueue.core.TraceContext> traceparent() {
    if (traceparent == null) {
      traceparent = transitions.traceparent(workerId, token, job.id());
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

  @Override
  public void crashWorker() {
    process.kill("job " + job.id() + " asked its worker to crash");
  }
}
