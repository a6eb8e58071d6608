package buildqueue.core;

import buildqueue.core.JobQueries.JobView;
import buildqueue.core.OutboxTransitions.PendingEvent;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What one request ({@link BuildQueue#submit}, {@link BuildQueue#taskStopped}) still owes after its
 * transitions, folded into statements it makes anyway so that each part costs no round trip of its
 * own: the job events its statements claimed are sent (EventBridge), and the outcome is settled by
 * its next statement (the one recording a launched task, else {@link #finish}); the job a
 * submission answers is read back by its last statement.
 *
 * <p>At least once holds as with {@link OutboxTransitions#claimPending}: a claimed row is settled
 * only by a statement that runs after its send, and a request that dies between the claim and that
 * statement leaves the rows claimed until {@link OutboxTransitions#CLAIM} runs out, when the next
 * claimer (any request, the tick) takes them.
 *
 * <p>Used by one thread for one request; not shared.
 */
final class RequestTail {
  private static final System.Logger LOG = System.getLogger(RequestTail.class.getName());

  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;
  private final OutboxTransitions.Sender sender;
  private Long readBackJobId;
  private final List<PendingEvent> claimed = new ArrayList<>();
  private final List<Long> accepted = new ArrayList<>();
  private final List<Long> refused = new ArrayList<>();
  private Optional<JobView> readBack = Optional.empty();

  /**
   * @param sender null: the request claims nothing (a caller that publishes on its own, as the
   *     local runtime does, or none)
   * @param readBackJobId the job the request answers, read back by its last statement; null: none
   */
  RequestTail(
      Database db,
      QueueConfig config,
      QueueClock clock,
      OutboxTransitions.Sender sender,
      Long readBackJobId) {
    this.db = db;
    this.config = config;
    this.clock = clock;
    this.sender = sender;
    this.readBackJobId = readBackJobId;
  }

  /** From now on the request answers job {@code jobId}: its last statement reads it back. */
  void answering(long jobId) {
    readBackJobId = jobId;
  }

  /** How many events the request's statements may claim: 0 when it has nowhere to send them. */
  int claimLimit() {
    return sender == null ? 0 : OutboxTransitions.FOLDED_CLAIM;
  }

  /** Events a statement of this request claimed, as {@code build_outbox_claim} answered them. */
  void claimed(String claimedEvents) {
    claimed.addAll(OutboxTransitions.claimedOf(claimedEvents));
  }

  /**
   * Sends the events claimed so far and not yet sent. A sender that throws refuses them all: they
   * are claimed again after {@link OutboxTransitions#RETRY_AFTER}.
   */
  void send() {
    if (claimed.isEmpty()) {
      return;
    }
    List<PendingEvent> batch = List.copyOf(claimed);
    claimed.clear();
    OutboxTransitions.Sent sent;
    try {
      sent = sender.send(batch);
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "sending {0} job events failed; retried later: {1}", batch.size(), e);
      sent = new OutboxTransitions.Sent(List.of(), batch.stream().map(PendingEvent::id).toList());
    }
    accepted.addAll(sent.accepted());
    refused.addAll(sent.refused());
  }

  /** Whether the last statement still has something to do: settle, or read back the job. */
  private boolean owesStatement() {
    return !accepted.isEmpty()
        || !refused.isEmpty()
        || (readBackJobId != null && readBack.isEmpty());
  }

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String TAIL =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      %s,
      recorded as (
        update build_worker set task_id = :taskId
        where id = :workerId and token = :token::uuid and status <> 'exited'
          and (task_id is null or task_id = :taskId)
        returning id
      )
      -- One row: whether the task was recorded, and the job read back (all null when none is asked):
      -- its columns as JobReads.JOB reads them.
      select (select count(*) from recorded) as recorded, (select count(*) from settled) as settled_count,
        %s
      from (select 1) as one
      left join build_job j on j.id = :jobId
      left join build_job_log l on l.job_id = j.id
      %s
      """
          .formatted(OutboxTransitions.SETTLE_CTES, JobReads.JOB_COLUMNS, JobReads.PLACE);

  /**
   * Records the task a launch started (as {@link DispatchTransitions#recordStarted}), settles what
   * was sent, and, when {@code last}, reads back the job the request answers: one statement. Sends
   * the claimed events first, so that the settle covers them.
   */
  boolean recordStarted(WorkerLaunch launch, String taskId, boolean last) {
    send();
    Row r = run(launch, taskId, last ? readBackJobId : null);
    return r.longValue("recorded") == 1;
  }

  /**
   * Sends what is claimed and not sent, and runs the request's last statement if it still owes one:
   * the settle and the read-back. Returns the job read back (empty when none was asked).
   */
  Optional<JobView> finish() {
    send();
    if (owesStatement()) {
      run(null, null, readBackJobId);
    }
    return readBack;
  }

  private Row run(WorkerLaunch launch, String taskId, Long jobId) {
    Params params =
        OutboxTransitions.settlementParams(
                Params.of("now", clock.now(), "taskId", taskId), accepted, refused)
            .and("workerId", launch == null ? null : launch.workerId())
            .and("token", launch == null ? null : launch.token())
            .and("jobId", jobId)
            .and("fair", config.takesTurns(Lanes.SHARED));
    Row r = db.query(TAIL, params).get(0);
    accepted.clear();
    refused.clear();
    if (jobId != null && r.get("id") != null) {
      readBack = Optional.of(JobReads.jobView(r));
    }
    return r;
  }
}
