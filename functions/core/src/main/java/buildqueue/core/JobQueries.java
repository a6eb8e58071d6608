package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The reads behind the API and the dashboard: jobs with their place in line and what holds their
 * lane, a job's history, and the lanes with their slots. Read-only; every statement is a plain
 * snapshot read, so none of them waits for a transition or makes one wait.
 *
 * <p>The read model's types live here; each read, with its SQL beside it, lives in the class for
 * what it reads: {@link JobReads} (one job), {@link JobListReads} (pages of jobs), {@link
 * EventReads} (a job's history), {@link SlotReads} (slots and what a queued job waits for), {@link
 * LaneReads} (the lanes page) and {@link LogReads} (a job's log tail).
 */
public final class JobQueries {
  /** The most events on one page, whatever their size. */
  public static final int MAX_EVENTS_PER_PAGE = 500;

  /** The most lanes on one page, whatever their size. */
  public static final int MAX_LANES_PER_PAGE = LaneReads.MAX_LANES_PER_PAGE;

  private final Database db;
  private final JobReads job;
  private final JobListReads jobs;
  private final EventReads events;
  private final SlotReads slots;
  private final LaneReads lanes;
  private final LogReads log;
  private final UsageReads usage;
  private final Ledger ledger;
  private final LaneHistory history;
  private final ArtifactReads artifacts;

  public JobQueries(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.job = new JobReads(db, config);
    this.jobs = new JobListReads(db, config);
    this.events = new EventReads(db);
    this.slots = new SlotReads(db, config, clock);
    this.lanes = new LaneReads(db, config, slots);
    this.log = new LogReads(db);
    this.usage = new UsageReads(db, config);
    this.ledger = config.ledger();
    this.history = new LaneHistory(db, clock);
    this.artifacts = new ArtifactReads(db);
  }

  /**
   * One artifact a job published: its name, size and hash, and the attempt whose files it is (where
   * the store keeps it).
   */
  public record PublishedArtifact(
      String name, long bytes, String sha256, int attempt, long workerId) {}

  /** A job's owner and status with its published artifacts (empty until it succeeded with some). */
  public record JobArtifacts(
      long jobId, String userId, JobStatus status, List<PublishedArtifact> artifacts) {}

  /** A job's artifacts; empty when there is no such job. */
  public Optional<JobArtifacts> artifacts(long jobId) {
    return artifacts.artifacts(jobId);
  }

  /**
   * A user's usage in a time range.
   *
   * @param jobs how many of their jobs were billed in it
   * @param cost what they were billed; null when nothing
   */
  public record Usage(String userId, long jobs, Cost cost) {}

  /** What {@code userId}'s jobs were billed by workers that stopped in [from, to). */
  public Usage usage(String userId, Instant from, Instant to) {
    return usage.user(userId, from, to);
  }

  /** Every user's usage in [from, to), by user id (at most 1,000 users). */
  public List<Usage> usageByUser(Instant from, Instant to) {
    return usage.byUser(from, to);
  }

  /** A job's cost so far, priced: null until a worker that ran it stopped. */
  public Cost cost(JobView job) {
    return Cost.of(job.cost(), ledger);
  }

  /** The prices and billing the queue runs with. */
  public Ledger ledger() {
    return ledger;
  }

  /**
   * A job as its owner sees it.
   *
   * @param position 1-based place in its lane while {@code queued}: how many jobs the lane takes
   *     before it, plus one (in a FIFO lane its queued jobs of a higher priority, or of its own and
   *     a smaller id; in one that takes turns by user, see {@code JobReads.PLACE}); null in any
   *     other status
   * @param notBefore while queued after a worker failed to start for lack of capacity: the job is
   *     not dispatched before this; else null
   * @param supersedeKey the key it was submitted with: a later job of its user with the same key
   *     supersedes it; null if none
   * @param supersededBy the job that superseded it (it was then cancelled, or its cancel requested)
   * @param priority -1 low, 0 normal, 1 high, 2 run next (an admin's): orders its user's queued
   *     jobs ({@link Priority})
   * @param retryOf the failed or cancelled job this one retries ({@code POST /jobs/{id}/retry})
   * @param retriedBy the job that retries this one; null until it is retried
   * @param turns while queued in a lane that takes turns by user: its place in the turns, from
   *     which {@code position} is counted; else empty
   * @param cost its shares of the workers that ran it and have stopped (docs/architecture.md §4.8),
   *     by capacity; empty until one of them stopped
   */
  public record JobView(
      long id,
      String userId,
      String kind,
      Json payload,
      JobStatus status,
      String lane,
      Integer position,
      int progress,
      int attempts,
      int recoveries,
      boolean cancelRequested,
      String error,
      Long workerId,
      Instant createdAt,
      Instant dispatchedAt,
      Instant startedAt,
      Instant finishedAt,
      Instant notBefore,
      Optional<LogSummary> log,
      String supersedeKey,
      Long supersededBy,
      int priority,
      Long retryOf,
      Long retriedBy,
      Optional<Turns> turns,
      List<Cost.Line> cost) {}

  /**
   * What is known of a job's output: how many bytes it wrote (the queue keeps the last part, read
   * it with {@link #log}), where the whole of it is ({@code location}: a file, a CloudWatch Logs
   * stream; null when only the tail exists), and when the tail was last saved.
   */
  public record LogSummary(long totalBytes, String location, Instant updatedAt) {}

  /**
   * The job a worker is running.
   *
   * @param payloadSteps the job payload's {@code steps} field (as JSON), when it has one: a
   *     progress bar's end for kinds that count steps
   */
  public record CurrentJob(
      long id, String userId, String kind, JobStatus status, int progress, Json payloadSteps) {}

  /**
   * A live worker (not {@code exited}).
   *
   * @param leaseLeftSeconds whole seconds until its lease expires, by the queue's clock; negative
   *     once expired (its slot is then reclaimed on evidence, or by the tick if it cannot be
   *     checked)
   */
  public record WorkerView(
      long id,
      String lane,
      String slot,
      WorkerStatus status,
      String taskId,
      long leaseLeftSeconds,
      Instant launchedAt,
      Instant startedAt,
      Optional<CurrentJob> job) {}

  /** One slot of a lane and the worker holding it, if any. */
  public record SlotView(String slot, Optional<WorkerView> worker) {
    public boolean free() {
      return worker.isEmpty();
    }
  }

  /**
   * Why a queued job has not been dispatched yet.
   *
   * @param jobsAhead queued jobs of the lane that go first
   * @param slots every slot of the lane with its worker; all held means the job waits for one of
   *     them to exit
   * @param notBefore when a launch for it failed for lack of capacity: not retried before this
   * @param turns in a lane that takes turns by user, where the job's user is in them; empty in a
   *     FIFO lane
   * @param estimatedStart when it will probably start; empty while the lane has no recently
   *     finished job to estimate from, or is paused
   * @param pause when and by whom its lane was paused: nothing starts until it is resumed
   */
  public record Waiting(
      String lane,
      int capacity,
      int jobsAhead,
      List<SlotView> slots,
      Instant notBefore,
      Optional<Turns> turns,
      Optional<StartEstimate> estimatedStart,
      Optional<Pause> pause) {
    public boolean allSlotsHeld() {
      return slots.stream().noneMatch(SlotView::free);
    }
  }

  /**
   * A queued job's place in a lane that takes turns by user.
   *
   * @param retry the job ran and came back: it goes before every turn, oldest retry first
   * @param ownJobsAhead the user's own queued jobs that go before it (FIFO within a user)
   * @param usersAhead other users whose turn comes before the user's next one
   * @param otherUsersWaiting other users with queued jobs: each gets a turn in every round
   */
  public record Turns(boolean retry, int ownJobsAhead, int usersAhead, int otherUsersWaiting) {}

  /** One entry of a job's history. {@code message} is {@code detail.message}. */
  public record EventView(long id, String type, String message, Json detail, Instant at) {}

  /** A queued job in a lane's line. */
  public record QueuedJob(
      long id,
      String userId,
      String kind,
      int position,
      Instant createdAt,
      Instant notBefore,
      int priority) {}

  /**
   * A lane: its slots with their workers, how many jobs wait, and the first of them in order.
   *
   * @param head the first queued jobs, at most the limit asked for
   * @param pause when and by whom the lane was paused (PUT /lanes/{lane}); empty while it runs
   */
  public record LaneView(
      String lane,
      int capacity,
      long queued,
      List<SlotView> slots,
      List<QueuedJob> head,
      Optional<Pause> pause) {}

  /** A paused lane starts no job until it is resumed; its running jobs finish. */
  public record Pause(Instant pausedAt, String pausedBy) {}

  /**
   * One page of jobs, newest first.
   *
   * @param nextBefore where the next page starts (pass it as {@code before}); empty on the last
   *     page
   */
  public record JobPage(List<JobView> jobs, Optional<Long> nextBefore) {}

  /**
   * One page of a job's history, oldest first.
   *
   * @param nextAfter where the next page starts (pass it as {@code after}); empty on the last page
   */
  public record EventPage(List<EventView> events, Optional<Long> nextAfter) {}

  /**
   * A page of lanes and where the next page starts (pass it as {@code after}); empty on the last
   * page.
   */
  public record LanePage(List<LaneView> lanes, Optional<String> nextAfter) {}

  /**
   * A job's output as the queue keeps it: the last part ({@code tail}, whole lines, at most the
   * worker's tail size), with the owner and status the API needs to answer for it.
   *
   * @param tail empty when the job has written nothing (yet)
   */
  public record JobLogView(
      long jobId,
      String userId,
      JobStatus status,
      String tail,
      long totalBytes,
      String location,
      Instant updatedAt) {}

  /** One job, whoever owns it: the caller decides who may see it. */
  public Optional<JobView> job(long id) {
    return job.job(id);
  }

  /**
   * Jobs newest first, a page at a time: at most {@code limit}, fewer when their size would pass
   * {@link RowLimits#PAGE_BUDGET_BYTES}.
   *
   * @param userId only this user's jobs; null for every user's
   * @param statuses only jobs in one of these; empty for all
   * @param before only jobs with a smaller id (a page's {@link JobPage#nextBefore}); null for the
   *     newest
   */
  public JobPage jobs(String userId, Set<JobStatus> statuses, int limit, Long before) {
    return jobs.jobs(userId, statuses, limit, before);
  }

  /**
   * The job's history, oldest first, a page at a time: at most {@link #MAX_EVENTS_PER_PAGE}, fewer
   * when their size would pass {@link RowLimits#PAGE_BUDGET_BYTES}.
   *
   * @param after only events with a larger id (a page's {@link EventPage#nextAfter}); null for the
   *     oldest
   */
  public EventPage events(long jobId, Long after) {
    return events.events(jobId, after);
  }

  /** What holds each slot of a lane. */
  public List<SlotView> slots(String lane) {
    return slots.slots(lane);
  }

  /** Why a queued job waits; empty for a job that is not queued. */
  public Optional<Waiting> waiting(JobView job) {
    return slots.waiting(List.of(job)).values().stream().findFirst();
  }

  /** Why each queued job waits, by job id; reads each lane's slots once. */
  public Map<Long, Waiting> waiting(Collection<JobView> jobs) {
    return slots.waiting(jobs);
  }

  /**
   * Every lane that matters now: {@code shared}, dedicated users' lanes, and any lane with a live
   * worker or a queued job, in name order, a page at a time. Each with its slots, queued count, and
   * first {@code headLimit} queued jobs in dispatch order.
   *
   * @param after only lanes after this one (a page's {@link LanePage#nextAfter}); null for the
   *     first
   */
  public LanePage lanes(String after, int headLimit) {
    return lanes.lanes(after, null, headLimit);
  }

  /** One lane as {@link #lanes} shows it, if it matters now (or is paused). */
  public Optional<LaneView> lane(String lane, int headLimit) {
    return lanes.lanes(null, lane, headLimit).lanes().stream().findFirst();
  }

  /**
   * Each lane's queue depth and waits over the last {@code hours} ({@link LaneHistory}), in one
   * statement.
   */
  public LaneHistory.History history(int hours) {
    return history.history(hours);
  }

  /** One job's log tail, whoever owns it: the caller decides who may see it. */
  public Optional<JobLogView> log(long jobId) {
    return log.log(jobId);
  }

  private static final String PING = "select 1 as one";

  /** Whether the database answers; throws what the adapter throws when it does not. */
  public void ping() {
    db.query(PING, Params.none());
  }
}
