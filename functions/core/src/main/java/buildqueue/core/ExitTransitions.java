package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * A worker is gone: the one transition that frees a slot. Called only on termination evidence (a
 * stop event, a check that says stopped, a local process confirmed gone) or by lease expiry for a
 * worker that cannot be checked.
 */
public final class ExitTransitions {
  /** The message a job fails with after four consecutive interruptions without progress. */
  public static final String REPEATED_EXIT_ERROR =
      "Build worker repeatedly exited without progress. Check worker logs and retry.";

  /** Interruptions without progress that are retried; the next one fails the job. */
  public static final int MAX_RECOVERIES = 3;

  /**
   * Spot reclaims a job takes on Spot: after this many, its next attempts run on on-demand ({@link
   * DispatchTransitions#chooseCapacity}). Reclaims never count as recoveries (V012), so this bound
   * is what keeps a job from being reclaimed forever.
   */
  public static final int MAX_RECLAIMS = 3;

  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public ExitTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * The worker that exited, and what became of the job it had: {@code queued} again at the head of
   * its lane, {@code failed}, {@code cancelled}, or none. {@code slotHeld} is how long the worker
   * held its slot, from dispatch to this exit (what a slot costs, for metrics). The lane is
   * dispatched next, in a statement of its own ({@link #stopped}). {@code neverStarted}: the worker
   * exited before its start, so its job never ran and this counts as a launch failure, not an
   * interruption.
   */
  public record Exited(
      long workerId,
      String lane,
      Optional<Long> jobId,
      Optional<JobStatus> jobStatus,
      Duration slotHeld,
      boolean neverStarted) {}

  /**
   * The exit of a worker that never started, a function of the schema ({@code
   * build_exit_worker_before_start}, V009) so that the stop's one call ({@link #stopped}) runs the
   * same statement.
   */
  private static final String NOT_STARTED =
      """
      select x.*, %s as billed_ms
      from build_exit_worker_before_start(:taskId::text, :workerId::bigint, :token::uuid, :reason::text,
                                          :retryable::boolean, :maxFailures::integer, :backoffMs::bigint,
                                          :now::timestamptz) x
      """
          .formatted(Bills.BILL);

  /**
   * The worker's bill, in the exit's own statement (docs/architecture.md §4.8): {@code
   * build_ledger_bill} (V013) runs after the exit function, in a snapshot of its own, so it sees
   * the worker exited and shares its billed time among the jobs it ran. A duplicate stop matches no
   * worker, so nothing is billed twice.
   */
  static final class Bills {
    static final String BILL =
        "build_ledger_bill(x.worker_id, :billedFrom::timestamptz, :billedTo::timestamptz,"
            + " :billingStepMs::bigint,"
            + " :billingMinMs::bigint, :vcpuMilli::integer, :memoryMb::integer)";

    static Params params(Params params, Ledger ledger, BilledTime billed) {
      return params
          .and("billedFrom", billed == null ? null : billed.from())
          .and("billedTo", billed == null ? null : billed.to())
          .and("billingStepMs", ledger.billingStep().toMillis())
          .and("billingMinMs", ledger.billingMinimum().toMillis())
          .and("vcpuMilli", ledger.vcpuMilli())
          .and("memoryMb", ledger.memoryMb());
    }

    private Bills() {}
  }

  /** A worker that never started is gone, and what became of its job, which never ran. */
  public record NotStarted(Exited exited, String jobError) {}

  /**
   * The launch definitely started nothing: the worker exits at once, freeing its slot, and its job
   * is queued again with backoff (capacity shortages, a bounded number of times) or fails with a
   * message the user can act on.
   */
  public Optional<NotStarted> launchFailed(WorkerLaunch launch, String reason, boolean retryable) {
    return notStarted(launch.workerId(), launch.token(), reason, retryable);
  }

  /**
   * The platform's or the evidence's {@code reason} is cut to {@link RowLimits#MAX_ERROR_BYTES}.
   */
  private Optional<NotStarted> notStarted(
      Long workerId, UUID token, String reason, boolean retryable) {
    Params params =
        Params.of("now", clock.now(), "taskId", null, "workerId", workerId)
            .and("token", token)
            .and("reason", RowLimits.boundedError(reason))
            .and("retryable", retryable)
            .and("maxFailures", config.maxLaunchFailures())
            .and("backoffMs", config.launchBackoff().toMillis());
    params = Bills.params(params, config.ledger(), null);
    return db.queryOptional(NOT_STARTED, params)
        .map(r -> new NotStarted(exitedOf(r, true), r.string("error")));
  }

  /**
   * A stop's whole transition ({@link #stopped}): the exit, and what the dispatch after it did.
   *
   * @param dispatched the worker the dispatch put in a slot, which the caller must launch
   * @param raced a concurrent dispatcher took the free slot first: the caller dispatches again
   * @param dispatchFailed the dispatch failed (a deadlock): the exit stands, the tick dispatches
   */
  record Stopped(
      Exited exited,
      Optional<DispatchTransitions.Dispatched> dispatched,
      boolean raced,
      boolean dispatchFailed) {}

  private static final String STOPPED =
      """
      select x.*, b.billed_ms,
             -- The claim comes last, so it takes the bill's cost events with the exit's and the
             -- dispatch's. The exit function claims nothing itself (its limit is 0).
             case when :claimLimit::integer > 0
                  then build_outbox_claim(:now::timestamptz, :claimMs::bigint, :claimLimit::integer) end
               as claimed_after_bill
      from build_exit_worker_and_dispatch(:taskId::text, :workerId::bigint, :token::uuid, :reason::text,
                                          :maxRecoveries::integer, :repeatedExitError::text,
                                          :maxFailures::integer, :backoffMs::bigint,
                                          :dispatch::boolean, :sharedSlots::integer, :fairShared::boolean,
                                          :newToken::uuid, :leaseMs::bigint,
                                          :claimMs::bigint, 0, :now::timestamptz) x
        -- offset 0 keeps the bill a subquery of its own, run before the claim in the select list.
        cross join lateral (select %s as billed_ms offset 0) b
      """
          .formatted(Bills.BILL);

  /**
   * Termination evidence (a stop event, a check that says stopped, a local process confirmed gone,
   * lease expiry) in one round trip ({@code build_exit_worker_and_dispatch}, V009): a running or
   * draining worker exits and its unfinished job is recovered (the recovery count resets if the job
   * made progress on this worker and grows by one if not; up to {@value #MAX_RECOVERIES} the job
   * goes back to {@code queued}, same id, so the head of its lane; beyond that it fails); else a
   * worker that never started exits and its job counts a launch failure (it never ran: retried with
   * backoff, the error quoting the cause). Then, when {@code dispatch}, the worker's lane is
   * dispatched in a statement that starts after the exit, and up to {@code tail}'s limit of job
   * events are claimed. Empty when no live worker matched (a duplicate, late or forged event):
   * nothing is dispatched or claimed then.
   *
   * @param taskId the platform's task id, or null
   * @param workerId the worker, or null when only the task id is known
   * @param token when given, the worker's token must match (a stop event carries it). An event
   *     naming a task that was never recorded for the worker must carry it: without it, the event
   *     may be about a task we never launched
   * @param reason why the worker is gone, as the evidence says; cut to {@link
   *     RowLimits#MAX_ERROR_BYTES}
   * @param billed when the platform began and stopped billing the task; null: from the worker's
   *     launch to this exit
   */
  Optional<Stopped> stopped(
      String taskId,
      Long workerId,
      UUID token,
      String reason,
      BilledTime billed,
      boolean dispatch,
      RequestTail tail) {
    if (taskId == null && workerId == null) {
      throw new IllegalArgumentException("a worker exit needs a task id or a worker id");
    }
    UUID newToken = UUID.randomUUID();
    Params params =
        Params.of("now", clock.now(), "taskId", taskId, "workerId", workerId)
            .and("token", token)
            .and("reason", RowLimits.boundedError(reason))
            .and("maxRecoveries", MAX_RECOVERIES)
            .and("repeatedExitError", REPEATED_EXIT_ERROR)
            .and("maxFailures", config.maxLaunchFailures())
            .and("backoffMs", config.launchBackoff().toMillis())
            .and("dispatch", dispatch)
            .and("sharedSlots", config.sharedSlots())
            .and("fairShared", config.takesTurns(Lanes.SHARED))
            .and("newToken", newToken)
            .and("leaseMs", config.lease().toMillis())
            .and("claimMs", OutboxTransitions.CLAIM.toMillis())
            .and("claimLimit", tail.claimLimit());
    params = Bills.params(params, config.ledger(), billed);
    return db.queryOptional(STOPPED, params)
        .map(
            r -> {
              tail.claimed(r.string("claimed_after_bill"));
              Exited exited = exitedOf(r, r.bool("never_started"));
              String outcome = r.string("dispatch_outcome");
              Optional<DispatchTransitions.Dispatched> dispatched =
                  "dispatched".equals(outcome)
                      ? Optional.of(
                          new DispatchTransitions.Dispatched(
                              new WorkerLaunch(
                                  r.longValue("d_worker_id"),
                                  newToken,
                                  exited.lane(),
                                  r.string("d_slot")),
                              r.longValue("d_job_id"),
                              r.instant("d_expires_at"),
                              r.bool("d_more_to_do")))
                      : Optional.empty();
              return new Stopped(
                  exited, dispatched, "raced".equals(outcome), "failed".equals(outcome));
            });
  }

  private static Exited exitedOf(Row r, boolean neverStarted) {
    String jobStatus = r.string("job_status");
    return new Exited(
        r.longValue("worker_id"),
        r.string("lane"),
        Optional.ofNullable(r.longValue("job_id")),
        Optional.ofNullable(jobStatus).map(JobStatus::of),
        Duration.ofMillis(r.longOr("slot_held_ms", 0)),
        neverStarted);
  }
}
