package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The reads behind the API and the dashboard: jobs with their place in line and what holds their
 * lane, a job's history, and the lanes with their slots. Read-only; every statement is a plain
 * snapshot read, so none of them waits for a transition or makes one wait.
 */
public final class JobQueries {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public JobQueries(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * A job as its owner sees it.
   *
   * @param position 1-based place in its lane while {@code queued} (queued jobs of the lane with a
   *     smaller id, plus one); null in any other status
   * @param notBefore while queued after a worker failed to start for lack of capacity: the job is
   *     not dispatched before this; else null
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
      Optional<LogSummary> log) {}

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
   */
  public record Waiting(String lane, int capacity, int jobsAhead, List<SlotView> slots, Instant notBefore) {
    public boolean allSlotsHeld() {
      return slots.stream().noneMatch(SlotView::free);
    }
  }

  /** One entry of a job's history. {@code message} is {@code detail.message}. */
  public record EventView(long id, String type, String message, Json detail, Instant at) {}

  /** A queued job in a lane's line. */
  public record QueuedJob(long id, String userId, String kind, int position, Instant createdAt, Instant notBefore) {}

  /**
   * A lane: its slots with their workers, how many jobs wait, and the first of them in order.
   *
   * @param head the first queued jobs, at most the limit asked for
   */
  public record LaneView(String lane, int capacity, long queued, List<SlotView> slots, List<QueuedJob> head) {}

  private static final String JOB =
      """
      select j.id, j.user_id, j.kind, j.payload, j.status, j.lane, j.progress, j.attempts, j.recoveries,
             j.cancel_requested, j.error, j.worker_id, j.created_at, j.dispatched_at, j.started_at,
             j.finished_at, j.not_before, l.total_bytes as log_bytes, l.location as log_location,
             l.updated_at as log_updated_at,
             case when j.status = 'queued' then
               (select count(*) + 1 from build_job q
                where q.lane = j.lane and q.status = 'queued' and q.id < j.id)
             end as position
      from build_job j
      left join build_job_log l on l.job_id = j.id
      where j.id = :id
      """;

  /** One job, whoever owns it: the caller decides who may see it. */
  public Optional<JobView> job(long id) {
    return db.queryOptional(JOB, Params.of("id", id)).map(JobQueries::jobView);
  }

  private static final String JOBS =
      """
      select j.id, j.user_id, j.kind, j.payload, j.status, j.lane, j.progress, j.attempts, j.recoveries,
             j.cancel_requested, j.error, j.worker_id, j.created_at, j.dispatched_at, j.started_at,
             j.finished_at, j.not_before, l.total_bytes as log_bytes, l.location as log_location,
             l.updated_at as log_updated_at,
             case when j.status = 'queued' then
               (select count(*) + 1 from build_job q
                where q.lane = j.lane and q.status = 'queued' and q.id < j.id)
             end as position
      from build_job j
      left join build_job_log l on l.job_id = j.id
      where (:userId::text is null or j.user_id = :userId)
        and (:statuses::text is null or j.status = any (string_to_array(:statuses, ',')))
      order by j.id desc
      limit :limit
      """;

  /**
   * Jobs newest first.
   *
   * @param userId only this user's jobs; null for every user's
   * @param statuses only jobs in one of these; empty for all
   */
  public List<JobView> jobs(String userId, Set<JobStatus> statuses, int limit) {
    String statusList =
        statuses.isEmpty() ? null : statuses.stream().map(JobStatus::sql).sorted().collect(Collectors.joining(","));
    Params params = Params.of("userId", userId, "statuses", statusList, "limit", limit);
    return db.query(JOBS, params).stream().map(JobQueries::jobView).toList();
  }

  private static final String EVENTS =
      """
      select e.id, e.type, e.detail ->> 'message' as message, e.detail, e.at
      from build_job_event e
      where e.job_id = :jobId
      order by e.id
      """;

  /** The job's history, oldest first. */
  public List<EventView> events(long jobId) {
    return db.query(EVENTS, Params.of("jobId", jobId)).stream()
        .map(r -> new EventView(r.longValue("id"), r.string("type"), r.string("message"), r.json("detail"),
            r.instant("at")))
        .toList();
  }

  private static final String LIVE_WORKERS =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now)
      select w.id, w.lane, w.slot, w.status, w.task_id, w.launched_at, w.started_at,
             floor(extract(epoch from (w.expires_at - t.now)))::bigint as lease_left_seconds,
             j.id as job_id, j.user_id as job_user_id, j.kind as job_kind, j.status as job_status,
             j.progress as job_progress, j.payload -> 'steps' as job_steps
      from build_worker w
      cross join t
      left join lateral (
        select c.id, c.user_id, c.kind, c.status, c.progress, c.payload from build_job c
        where c.worker_id = w.id and c.status in ('dispatched', 'running')
        order by c.id
        limit 1
      ) j on true
      where w.status <> 'exited' and (:lane::text is null or w.lane = :lane)
      order by w.lane, substring(w.slot from '#([0-9]+)$')::int
      """;

  /** What holds each slot of a lane. */
  public List<SlotView> slots(String lane) {
    return slotsOf(lane, liveWorkers(lane));
  }

  /** Why a queued job waits; empty for a job that is not queued. */
  public Optional<Waiting> waiting(JobView job) {
    return waiting(List.of(job)).values().stream().findFirst();
  }

  /** Why each queued job waits, by job id; reads each lane's slots once. */
  public Map<Long, Waiting> waiting(Collection<JobView> jobs) {
    Map<String, List<SlotView>> slotsByLane = new LinkedHashMap<>();
    Map<Long, Waiting> byJob = new LinkedHashMap<>();
    for (JobView j : jobs) {
      if (j.status() != JobStatus.QUEUED) {
        continue;
      }
      List<SlotView> slots = slotsByLane.computeIfAbsent(j.lane(), this::slots);
      int ahead = j.position() == null ? 0 : j.position() - 1;
      byJob.put(j.id(), new Waiting(j.lane(), Lanes.capacity(j.lane(), config), ahead, slots, j.notBefore()));
    }
    return byJob;
  }

  private static final String LANES =
      """
      with lane as (
        select 'shared' as name
        union
        select w.lane from build_worker w where w.status <> 'exited'
        union
        select q.lane from build_job q where q.status = 'queued'
        union
        select 'user:' || u.user_id from build_user u where u.dedicated_worker
      )
      select lane.name as lane,
             (select count(*) from build_job q where q.lane = lane.name and q.status = 'queued') as queued
      from lane
      order by lane.name <> 'shared', lane.name
      """;

  private static final String LANE_HEADS =
      """
      with lane as (select distinct q.lane from build_job q where q.status = 'queued')
      select h.id, h.user_id, h.kind, h.lane, h.created_at, h.not_before, h.position
      from lane
      cross join lateral (
        select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before,
               row_number() over (order by q.id) as position
        from build_job q
        where q.lane = lane.lane and q.status = 'queued'
        order by q.id
        limit :limit
      ) h
      order by h.lane, h.position
      """;

  /**
   * Every lane that matters now: {@code shared}, dedicated users' lanes, and any lane with a live
   * worker or a queued job. Each with its slots, queued count, and first {@code headLimit} queued
   * jobs in dispatch order.
   */
  public List<LaneView> lanes(int headLimit) {
    List<WorkerView> workers = liveWorkers(null);
    Map<String, List<QueuedJob>> heads = new LinkedHashMap<>();
    for (Row r : db.query(LANE_HEADS, Params.of("limit", headLimit))) {
      heads.computeIfAbsent(r.string("lane"), k -> new ArrayList<>())
          .add(new QueuedJob(r.longValue("id"), r.string("user_id"), r.string("kind"), r.intValue("position"),
              r.instant("created_at"), r.instant("not_before")));
    }
    List<LaneView> lanes = new ArrayList<>();
    for (Row r : db.query(LANES, Params.none())) {
      String lane = r.string("lane");
      List<WorkerView> inLane = workers.stream().filter(w -> w.lane().equals(lane)).toList();
      lanes.add(new LaneView(lane, Lanes.capacity(lane, config), r.longValue("queued"), slotsOf(lane, inLane),
          heads.getOrDefault(lane, List.of())));
    }
    return lanes;
  }

  private static final String PING = "select 1 as one";

  /** Whether the database answers; throws what the adapter throws when it does not. */
  public void ping() {
    db.query(PING, Params.none());
  }

  private List<WorkerView> liveWorkers(String lane) {
    return db.query(LIVE_WORKERS, Params.of("now", clock.now(), "lane", lane)).stream()
        .map(JobQueries::workerView)
        .toList();
  }

  /**
   * The lane's slots in order, {@code <lane>#1} to its capacity, plus any slot beyond that still
   * held (the capacity was lowered while a worker ran).
   */
  private List<SlotView> slotsOf(String lane, List<WorkerView> workers) {
    Set<String> names = new TreeSet<>(java.util.Comparator.comparingInt(JobQueries::slotNumber)
        .thenComparing(java.util.Comparator.naturalOrder()));
    for (int n = 1; n <= Lanes.capacity(lane, config); n++) {
      names.add(lane + "#" + n);
    }
    workers.forEach(w -> names.add(w.slot()));
    return names.stream()
        .map(slot -> new SlotView(slot, workers.stream().filter(w -> w.slot().equals(slot)).findFirst()))
        .toList();
  }

  private static int slotNumber(String slot) {
    int hash = slot.lastIndexOf('#');
    try {
      return Integer.parseInt(slot.substring(hash + 1));
    } catch (NumberFormatException e) {
      return Integer.MAX_VALUE;
    }
  }

  private static WorkerView workerView(Row r) {
    Optional<CurrentJob> job =
        r.get("job_id") == null
            ? Optional.empty()
            : Optional.of(new CurrentJob(r.longValue("job_id"), r.string("job_user_id"), r.string("job_kind"),
                JobStatus.of(r.string("job_status")), r.intValue("job_progress"), r.json("job_steps")));
    return new WorkerView(r.longValue("id"), r.string("lane"), r.string("slot"), WorkerStatus.of(r.string("status")),
        r.string("task_id"), r.longValue("lease_left_seconds"), r.instant("launched_at"), r.instant("started_at"),
        job);
  }

  private static JobView jobView(Row r) {
    Long position = r.longValue("position");
    return new JobView(
        r.longValue("id"),
        r.string("user_id"),
        r.string("kind"),
        r.json("payload"),
        JobStatus.of(r.string("status")),
        r.string("lane"),
        position == null ? null : Math.toIntExact(position),
        r.intValue("progress"),
        r.intValue("attempts"),
        r.intValue("recoveries"),
        r.bool("cancel_requested"),
        r.string("error"),
        r.longValue("worker_id"),
        r.instant("created_at"),
        r.instant("dispatched_at"),
        r.instant("started_at"),
        r.instant("finished_at"),
        r.instant("not_before"),
        r.get("log_bytes") == null
            ? Optional.empty()
            : Optional.of(new LogSummary(r.longValue("log_bytes"), r.string("log_location"), r.instant("log_updated_at"))));
  }

  /**
   * A job's output as the queue keeps it: the last part ({@code tail}, whole lines, at most the
   * worker's tail size), with the owner and status the API needs to answer for it.
   *
   * @param tail empty when the job has written nothing (yet)
   */
  public record JobLogView(long jobId, String userId, JobStatus status, String tail, long totalBytes, String location,
      Instant updatedAt) {}

  private static final String LOG =
      """
      select j.id, j.user_id, j.status, l.tail, l.total_bytes, l.location, l.updated_at
      from build_job j
      left join build_job_log l on l.job_id = j.id
      where j.id = :id
      """;

  /** One job's log tail, whoever owns it: the caller decides who may see it. */
  public Optional<JobLogView> log(long jobId) {
    return db.queryOptional(LOG, Params.of("id", jobId))
        .map(r -> new JobLogView(r.longValue("id"), r.string("user_id"), JobStatus.of(r.string("status")),
            r.get("tail") == null ? "" : r.string("tail"), r.longOr("total_bytes", 0), r.string("location"),
            r.instant("updated_at")));
  }
}
