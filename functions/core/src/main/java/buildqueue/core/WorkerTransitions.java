package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

/**
 * What a worker does to the queue. Every statement is fenced by the worker's id and token, its
 * status, and its lease: a worker that has been fenced off (its slot reclaimed, its job requeued)
 * changes nothing, and learns so from the zero rows it gets back.
 *
 * <p>Each transition is one call of its function in migration {@code V005} ({@code
 * build_worker_start}, {@code _check_in}, {@code _interrupt}, {@code _add_follow_ups}, {@code
 * _end}, {@code _take_next}, {@code _drain}), where its whole statement is written: those functions
 * are all the worker's database role may run (docs/architecture.md §6.1), so the fences above are
 * enforced by PostgreSQL for any caller holding a worker's login, not only for this class.
 */
public final class WorkerTransitions {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public WorkerTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * The same transitions for a worker that must take no further job (it was told to stop): {@link
   * #end} finds the chain window closed and leaves the worker {@code draining}.
   */
  public WorkerTransitions withoutChaining() {
    return new WorkerTransitions(
        db, config.withChainWindow(Duration.ZERO).withLinger(Duration.ZERO), clock);
  }

  /** A job this worker now runs. {@code progress} is where the last attempt got to. */
  public record AssignedJob(
      long id,
      String userId,
      String kind,
      Json payload,
      int progress,
      int attempt,
      boolean cancelRequested) {}

  /** The worker is running. {@code job} is empty when its job went away (it was cancelled). */
  public record Started(Instant databaseNow, Instant expiresAt, Optional<AssignedJob> job) {}

  /**
   * Each worker transition is a function of V005: the worker's database role may call nothing else.
   */
  private static final String START =
      """
      select * from build_worker_start(:workerId::bigint, :token::uuid, :deadlineMarginMs::bigint, :now::timestamptz)
      """;

  /**
   * {@code launching → running} with the right token and before the lease, and its dispatched job
   * {@code → running}, in one statement. Empty means: wrong token, already started, or too late
   * (the slot may already be someone else's) — the worker must exit without doing anything.
   */
  public Optional<Started> start(long workerId, UUID token) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("deadlineMarginMs", config.deadlineMargin().toMillis());
    return db.queryOptional(START, params)
        .map(r -> new Started(r.instant("database_now"), r.instant("expires_at"), assignedJob(r)));
  }

  /**
   * A job's log tail to store: its last part, every byte of output so far, and where the whole log
   * is (null: unchanged).
   */
  public record LogWrite(String tail, long totalBytes, String location) {}

  private static final String CHECK_IN =
      """
      select * from build_worker_check_in(:workerId::bigint, :token::uuid, :jobId::bigint, :progress::integer,
                                          :logTail::text, :logBytes::bigint, :logLocation::text, :now::timestamptz)
      """;

  /** Outcome of a progress report or check-in. */
  public enum ProgressAck {
    /** Recorded; go on. */
    RECORDED,
    /** Recorded, and the job's owner asked to cancel it: stop and end it {@code cancelled}. */
    CANCEL_REQUESTED,
    /** Nothing was written: this worker no longer owns the job. Stop at once. */
    FENCED_OFF
  }

  public ProgressAck progress(long workerId, UUID token, long jobId, int progress) {
    return checkIn(workerId, token, jobId, progress, null);
  }

  /**
   * Records the job's progress (null: unchanged) and its log tail (null: unchanged), fenced, in one
   * statement, and reads whether its owner asked to cancel it. With neither, it is only the cancel
   * check a running program needs, since a program may never report progress.
   */
  public ProgressAck checkIn(
      long workerId, UUID token, long jobId, Integer progress, LogWrite log) {
    Params params =
        logParams(Params.of("now", clock.now(), "workerId", workerId, "token", token), log)
            .and("jobId", jobId)
            .and("progress", progress);
    return db.queryOptional(CHECK_IN, params)
        .map(r -> r.bool("cancel_requested") ? ProgressAck.CANCEL_REQUESTED : ProgressAck.RECORDED)
        .orElse(ProgressAck.FENCED_OFF);
  }

  private static Params logParams(Params params, LogWrite log) {
    return params
        .and("logTail", log == null ? null : log.tail())
        .and("logBytes", log == null ? 0L : log.totalBytes())
        .and("logLocation", log == null ? null : log.location());
  }

  private static final String INTERRUPT =
      """
      select * from build_worker_interrupt(:workerId::bigint, :token::uuid, :jobId::bigint, :progress::integer,
                                           :reason::text, :maxRecoveries::integer, :repeatedExitError::text,
                                           :logTail::text, :logBytes::bigint, :logLocation::text, :now::timestamptz)
      """;

  /**
   * The job's program asked to be retried (one of its kind's retry exit codes): the job is
   * interrupted as if its worker had exited — back to the head of its lane, or failed after too
   * many interruptions without progress — while this worker stays {@code running}. The caller takes
   * the next job with {@link #takeNext}, which sees the requeued job at the head of the lane.
   *
   * @param reason why, for the job's history; cut to {@link RowLimits#MAX_ERROR_BYTES}
   * @return the job's new status ({@code queued}, {@code failed}, {@code cancelled}), or empty if
   *     this worker was fenced off
   */
  public Optional<JobStatus> interrupt(
      long workerId, UUID token, long jobId, String reason, LogWrite log) {
    return interrupt(workerId, token, jobId, reason, null, log);
  }

  /**
   * As {@link #interrupt(long, UUID, long, String, LogWrite)}, recording the job's latest progress
   * first (null: unchanged): where the next attempt resumes, and what decides whether the job moved
   * forward on this attempt.
   */
  public Optional<JobStatus> interrupt(
      long workerId, UUID token, long jobId, String reason, Integer progress, LogWrite log) {
    Params params =
        logParams(Params.of("now", clock.now(), "workerId", workerId, "token", token), log)
            .and("jobId", jobId)
            .and("progress", progress)
            .and("reason", RowLimits.boundedError(reason))
            .and("maxRecoveries", ExitTransitions.MAX_RECOVERIES)
            .and("repeatedExitError", ExitTransitions.REPEATED_EXIT_ERROR);
    return db.queryOptional(INTERRUPT, params).map(r -> JobStatus.of(r.string("status")));
  }

  private static final String ADD_FOLLOW_UPS =
      """
      select * from build_worker_add_follow_ups(:workerId::bigint, :token::uuid, :jobId::bigint, :followUps::jsonb,
                                                :now::timestamptz)
      """;

  /** What {@link #addFollowUps} did. */
  public sealed interface FollowUps {
    /** All were inserted. */
    record Added() implements FollowUps {}

    /** Nothing was written: this worker no longer owns the job. Stop at once. */
    record FencedOff() implements FollowUps {}

    /**
     * None was inserted: follow-up {@code position} (1-based) has a payload over {@link
     * RowLimits#MAX_PAYLOAD_BYTES} as stored, or a kind over {@link RowLimits#MAX_KIND_BYTES}.
     */
    record TooLarge(long position, long payloadBytes, long kindBytes) implements FollowUps {
      /** Why the job fails, for its error. */
      public String message() {
        return payloadBytes > RowLimits.MAX_PAYLOAD_BYTES
            ? "Follow-up job "
                + position
                + " has a payload of "
                + payloadBytes
                + " bytes as stored; the limit is "
                + RowLimits.MAX_PAYLOAD_BYTES
                + " bytes. No follow-up was submitted. Keep large inputs in object"
                + " storage (e.g. S3) and pass a reference in the payload."
            : "Follow-up job "
                + position
                + " has a kind of "
                + kindBytes
                + " bytes; the limit is "
                + RowLimits.MAX_KIND_BYTES
                + " bytes. No follow-up was submitted.";
      }
    }
  }

  /**
   * Inserts follow-up jobs for the job's user, fenced like every worker write, all or none. Call it
   * in the same transaction as {@link #end}, so the follow-ups commit together with the success or
   * not at all.
   *
   * @param followUps a JSON array of {@code {"kind": …, "payload": {…}}}
   */
  public FollowUps addFollowUps(
      Database tx, long workerId, UUID token, long jobId, Json followUps) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("jobId", jobId)
            .and("followUps", followUps);
    Row r = tx.query(ADD_FOLLOW_UPS, params).get(0);
    if (r.longValue("fenced_in") == 0) {
      return new FollowUps.FencedOff();
    }
    if (r.get("too_large_n") != null) {
      return new FollowUps.TooLarge(
          r.longValue("too_large_n"), r.longValue("payload_bytes"), r.longValue("kind_bytes"));
    }
    return new FollowUps.Added();
  }

  /** What ending a job led to. */
  public sealed interface Ended {
    /** The chain window was open: this worker now runs {@code next}, keeping its slot and lease. */
    record Chained(AssignedJob next) implements Ended {}

    /** No job to chain (or the window closed): the worker is {@code draining} and must exit. */
    record Drained() implements Ended {}

    /** Nothing was written: this worker no longer owns the job. Stop at once. */
    record FencedOff() implements Ended {}

    /**
     * No job to chain yet, and the worker lingers ({@link QueueConfig#linger()}): it is still
     * {@code running} and must poll with {@link #takeNext} or {@link #drain}.
     */
    record Idle() implements Ended {}
  }

  private static final String END =
      """
      select * from build_worker_end(:workerId::bigint, :token::uuid, :jobId::bigint, :status::text, :error::text,
                                     :progress::integer, :logTail::text, :logBytes::bigint, :logLocation::text,
                                     :chainWindowMs::bigint, :deadlineMarginMs::bigint, :linger::boolean,
                                     :fair::boolean, :now::timestamptz)
      """;

  /**
   * Ends the worker's job ({@code succeeded}, {@code failed} with an error, or {@code cancelled})
   * and, in the same statement, takes the next job of its lane (as dispatch would, {@link
   * LaneTurns}) if the chain window is open, or else marks the worker {@code draining}. The slot
   * stays held either way: only the evidence of the worker's exit frees it. A failure's {@code
   * error} is cut to {@link RowLimits#MAX_ERROR_BYTES}.
   */
  public Ended end(
      Database tx,
      long workerId,
      UUID token,
      long jobId,
      JobStatus status,
      String error,
      LogWrite log) {
    return end(tx, workerId, token, jobId, status, error, null, log);
  }

  /**
   * As {@link #end(Database, long, UUID, long, JobStatus, String, LogWrite)}, also recording the
   * job's latest progress (null: unchanged), which a program may have reported after the last
   * check-in wrote it.
   */
  public Ended end(
      Database tx,
      long workerId,
      UUID token,
      long jobId,
      JobStatus status,
      String error,
      Integer progress,
      LogWrite log) {
    return ended(
        tx.query(END, endParams(workerId, token, jobId, status, error, progress, log)).get(0));
  }

  private static final String END_PUBLISHING =
      """
      select * from build_worker_end_publishing(:workerId::bigint, :token::uuid, :jobId::bigint, :status::text,
                                                :error::text, :progress::integer, :logTail::text, :logBytes::bigint,
                                                :logLocation::text, :chainWindowMs::bigint, :deadlineMarginMs::bigint,
                                                :linger::boolean, :fair::boolean, :artifacts::jsonb, :now::timestamptz)
      """;

  /**
   * As {@link #end(Database, long, UUID, long, JobStatus, String, Integer, LogWrite)} with {@code
   * succeeded}, and in the same statement, only if that end is fenced in, the files this attempt
   * uploaded ({@link #stageArtifacts}) become the job's artifacts (V018, {@code
   * build_worker_end_publishing}). {@link Ended.FencedOff} means nothing was published: remove the
   * uploads.
   *
   * @param artifacts a JSON array of {@code {"name", "bytes", "sha256"}}
   */
  public Ended endPublishing(
      Database tx,
      long workerId,
      UUID token,
      long jobId,
      Json artifacts,
      Integer progress,
      LogWrite log) {
    Params params =
        endParams(workerId, token, jobId, JobStatus.SUCCEEDED, null, progress, log)
            .and("artifacts", artifacts);
    return ended(tx.query(END_PUBLISHING, params).get(0));
  }

  /** {@link #endPublishing(Database, long, UUID, long, Json, Integer, LogWrite)} on its own. */
  public Ended endPublishing(
      long workerId, UUID token, long jobId, Json artifacts, Integer progress, LogWrite log) {
    return endPublishing(db, workerId, token, jobId, artifacts, progress, log);
  }

  private static final String STAGE_ARTIFACTS =
      """
      select * from build_worker_stage_artifacts(:workerId::bigint, :token::uuid, :jobId::bigint, :now::timestamptz)
      """;

  /**
   * Records, fenced like every worker write, that this attempt of the job is about to upload
   * artifacts, so that its files are found and removed if it never publishes them ({@code
   * ArtifactSweep}). Answers the attempt (the job's own count) the uploads go under; empty means
   * fenced off: upload nothing.
   */
  public java.util.OptionalInt stageArtifacts(long workerId, UUID token, long jobId) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token).and("jobId", jobId);
    return db.queryOptional(STAGE_ARTIFACTS, params)
        .map(r -> java.util.OptionalInt.of(r.intValue("attempt")))
        .orElse(java.util.OptionalInt.empty());
  }

  private static final String PARENT_ARTIFACTS =
      """
      select * from build_worker_parent_artifacts(:workerId::bigint, :token::uuid, :jobId::bigint, :parentId::bigint,
                                                  :now::timestamptz)
      """;

  /** One published file of a parent job, and the attempt whose files it is. */
  public record ParentArtifact(
      String name, long bytes, String sha256, int attempt, long workerId) {}

  /**
   * The published artifacts of {@code parentId} for this worker's running job {@code jobId}, fenced
   * like every worker read, and only when the parent is a succeeded job of the same user (V018).
   * Empty: fenced off, no such job of the user's, or it published none.
   */
  public java.util.List<ParentArtifact> parentArtifacts(
      long workerId, UUID token, long jobId, long parentId) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("jobId", jobId)
            .and("parentId", parentId);
    return db.query(PARENT_ARTIFACTS, params).stream()
        .map(
            r ->
                new ParentArtifact(
                    r.string("name"),
                    r.longValue("bytes"),
                    r.string("sha256"),
                    r.intValue("attempt"),
                    r.longValue("worker_id")))
        .toList();
  }

  private Params endParams(
      long workerId,
      UUID token,
      long jobId,
      JobStatus status,
      String error,
      Integer progress,
      LogWrite log) {
    if (!status.finished()) {
      throw new IllegalArgumentException(
          "a job ends succeeded, failed or cancelled, not " + status);
    }
    return logParams(Params.of("now", clock.now(), "workerId", workerId, "token", token), log)
        .and("jobId", jobId)
        .and("status", status.sql())
        .and("progress", progress)
        .and(
            "error",
            status == JobStatus.FAILED
                ? (error == null ? "failed" : RowLimits.boundedError(error))
                : null)
        .and("chainWindowMs", config.chainWindow().toMillis())
        .and("deadlineMarginMs", config.deadlineMargin().toMillis())
        .and("linger", !config.linger().isZero())
        .and("fair", config.takesTurns(Lanes.SHARED));
  }

  /** What {@link #END} and {@link #TAKE_NEXT} answered, as the worker's next step. */
  private static Ended ended(Row r) {
    if (r.longValue("fenced_in") == 0) {
      return new Ended.FencedOff();
    }
    Optional<AssignedJob> next = assignedJob(r);
    if (next.isPresent()) {
      return new Ended.Chained(next.get());
    }
    return r.longValue("drained") == 1 ? new Ended.Drained() : new Ended.Idle();
  }

  public Ended end(long workerId, UUID token, long jobId, JobStatus status, String error) {
    return end(db, workerId, token, jobId, status, error, null);
  }

  public Ended end(
      long workerId, UUID token, long jobId, JobStatus status, String error, LogWrite log) {
    return end(db, workerId, token, jobId, status, error, log);
  }

  public Ended end(
      long workerId,
      UUID token,
      long jobId,
      JobStatus status,
      String error,
      Integer progress,
      LogWrite log) {
    return end(db, workerId, token, jobId, status, error, progress, log);
  }

  /** Runs worker writes that must commit together (follow-ups with their job's end). */
  public <T> T transactionally(java.util.function.Function<Database, T> work) {
    return db.transaction(work);
  }

  private static final String TAKE_NEXT =
      """
      select * from build_worker_take_next(:workerId::bigint, :token::uuid, :chainWindowMs::bigint,
                                           :deadlineMarginMs::bigint, :fair::boolean, :now::timestamptz)
      """;

  /**
   * For a lingering worker: takes the next ready job of its lane if its chain window and lease
   * still allow ({@link Ended.Chained}), finds none ({@link Ended.Idle}), or finds the window
   * closed and marks the worker {@code draining} ({@link Ended.Drained}), fenced like every write.
   */
  public Ended takeNext(long workerId, UUID token) {
    Params params =
        Params.of("now", clock.now(), "workerId", workerId, "token", token)
            .and("chainWindowMs", config.chainWindow().toMillis())
            .and("deadlineMarginMs", config.deadlineMargin().toMillis())
            .and("fair", config.takesTurns(Lanes.SHARED));
    return ended(db.query(TAKE_NEXT, params).get(0));
  }

  private static final String DRAIN =
      """
      select build_worker_drain(:workerId::bigint, :token::uuid) as drained
      """;

  /** For a worker that started without a job to run: {@code running → draining}. */
  public boolean drain(long workerId, UUID token) {
    return db.query(DRAIN, Params.of("workerId", workerId, "token", token)).get(0).bool("drained");
  }

  private static final String TRACEPARENT =
      """
      select build_worker_job_traceparent(:workerId::bigint, :token::uuid, :jobId::bigint,
                                          :now::timestamptz) as traceparent
      """;

  /**
   * The W3C traceparent its submitter gave the running job {@code jobId} of this worker (V019),
   * fenced by the token; empty when it has none, or the worker is fenced off. One statement, made
   * only for a job whose program is started (docs/architecture.md "Trace context").
   */
  public Optional<TraceContext> traceparent(long workerId, UUID token, long jobId) {
    Params params =
        Params.of("workerId", workerId, "token", token, "jobId", jobId).and("now", clock.now());
    return TraceContext.parse(db.query(TRACEPARENT, params).get(0).string("traceparent"));
  }

  private static Optional<AssignedJob> assignedJob(Row r) {
    if (r.get("id") == null) {
      return Optional.empty();
    }
    return Optional.of(
        new AssignedJob(
            r.longValue("id"),
            r.string("user_id"),
            r.string("kind"),
            r.json("payload"),
            r.intValue("progress"),
            r.intValue("attempts"),
            r.bool("cancel_requested")));
  }
}
