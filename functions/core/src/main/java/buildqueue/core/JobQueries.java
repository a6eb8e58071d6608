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
   * @param position 1-based place in its lane while {@code queued}: how many jobs the lane takes
   *     before it, plus one (in a FIFO lane its queued jobs with a smaller id; in one that takes turns
   *     by user, see {@link #PLACE}); null in any other status
   * @param notBefore while queued after a worker failed to start for lack of capacity: the job is
   *     not dispatched before this; else null
   * @param supersedeKey the key it was submitted with: a later job of its user with the same key
   *     supersedes it; null if none
   * @param supersededBy the job that superseded it (it was then cancelled, or its cancel requested)
   * @param turns while queued in a lane that takes turns by user: its place in the turns, from
   *     which {@code position} is counted; else empty
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
      Optional<Turns> turns) {}

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
   */
  public record Waiting(String lane, int capacity, int jobsAhead, List<SlotView> slots, Instant notBefore,
      Optional<Turns> turns) {
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
  public record QueuedJob(long id, String userId, String kind, int position, Instant createdAt, Instant notBefore) {}

  /**
   * A lane: its slots with their workers, how many jobs wait, and the first of them in order.
   *
   * @param head the first queued jobs, at most the limit asked for
   */
  public record LaneView(String lane, int capacity, long queued, List<SlotView> slots, List<QueuedJob> head) {}

  /**
   * A queued job's place in a lane that takes turns by user ({@link LaneTurns}), as a lateral join
   * on job {@code j}: with {@code :fair} and {@code j} queued in the shared lane, one row; else
   * none. A retry goes after the older retries. Any other job is the user's k-th ({@code own_ahead}
   * + 1): every retry goes first, then in each round every other user with queued jobs is served
   * once in turn order, so a user whose turn comes before this user's takes up to k of its jobs
   * before it, one whose turn comes after up to k − 1. Costs one probe per waiting user, and up to k
   * index entries each.
   */
  static final String PLACE =
      """
      left join lateral (
        select p.retry, p.own_ahead, o.users_ahead, o.others_waiting,
               case when p.retry then p.retries_before + 1
                    else p.retries + p.own_ahead + o.jobs_ahead + 1 end as position
        from (
          select j.attempts > 0 as retry,
                 (select count(*) from build_job q
                  where q.lane = j.lane and q.status = 'queued' and q.attempts > 0 and q.id < j.id) as retries_before,
                 (select count(*) from build_job q
                  where q.lane = j.lane and q.status = 'queued' and q.attempts > 0) as retries,
                 (select count(*) from build_job q
                  where q.user_id = j.user_id and q.lane = j.lane and q.status = 'queued' and q.attempts = 0
                    and q.id < j.id) as own_ahead,
                 coalesce((select u.turn from build_lane_turn u where u.lane = j.lane and u.user_id = j.user_id), 0)
                   as turn
        ) p
        cross join lateral (
          select count(*) filter (where x.has and x.before) as users_ahead,
                 count(*) filter (where x.has) as others_waiting,
                 coalesce(sum(x.n), 0)::bigint as jobs_ahead
          from (
            select exists (select 1 from build_job q
                           where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued' and q.attempts = 0)
                     as has,
                   (u.turn, u.user_id) < (p.turn, j.user_id) as before,
                   (select count(*) from (
                      select 1 from build_job q
                      where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued' and q.attempts = 0
                      limit p.own_ahead + case when (u.turn, u.user_id) < (p.turn, j.user_id) then 1 else 0 end) c)
                     as n
            from build_lane_turn u
            where u.lane = j.lane and u.waiting and u.user_id <> j.user_id
          ) x
        ) o
        where :fair and j.status = 'queued' and j.lane = 'shared'
      ) fair on true""";

  /**
   * A job's columns as {@link #jobView} reads them, over job {@code j}, its log {@code l} and its
   * {@link #PLACE} {@code fair}: one list for {@link #JOB} and {@link #JOBS}.
   */
  private static final String JOB_COLUMNS =
      """
      j.id, j.user_id, j.kind, j.payload, j.status, j.lane, j.progress, j.attempts, j.recoveries,
        j.cancel_requested, j.error, j.worker_id, j.created_at, j.dispatched_at, j.started_at,
        j.finished_at, j.not_before, j.supersede_key, j.superseded_by, l.total_bytes as log_bytes,
        l.location as log_location, l.updated_at as log_updated_at,
        case when j.status = 'queued' and fair.retry is null then
          (select count(*) + 1 from build_job q
           where q.lane = j.lane and q.status = 'queued' and q.id < j.id)
        when j.status = 'queued' then fair.position end as position,
        fair.retry as turn_retry, fair.own_ahead as turn_own_ahead, fair.users_ahead as turn_users_ahead,
        fair.others_waiting as turn_others_waiting""";

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String JOB =
      """
      select %s
      from build_job j
      left join build_job_log l on l.job_id = j.id
      %s
      where j.id = :id
      """
          .formatted(JOB_COLUMNS, PLACE);

  private boolean fair() {
    return config.takesTurns(Lanes.SHARED);
  }

  /** One job, whoever owns it: the caller decides who may see it. */
  public Optional<JobView> job(long id) {
    return db.queryOptional(JOB, Params.of("id", id).and("fair", fair())).map(JobQueries::jobView);
  }

  /**
   * One page of jobs, newest first.
   *
   * @param nextBefore where the next page starts (pass it as {@code before}); empty on the last page
   */
  public record JobPage(List<JobView> jobs, Optional<Long> nextBefore) {}

  // Each candidate's share of the answer (its values' octets plus RowLimits.ROW_FIXED_BYTES for the
  // rest) is summed down the page, and the page ends before the sum passes the budget: so the answer
  // stays under the Data API's 1 MiB however large the jobs are. The first row is always taken (one
  // job row fits; see RowLimits), so a page is never empty while jobs remain.
  private static final String JOBS =
      """
      with candidate as (
        select j.id,
               sum(octet_length(j.payload::text) + coalesce(octet_length(j.error), 0) + octet_length(j.user_id)
                   + octet_length(j.lane) + octet_length(j.kind) + coalesce(octet_length(l.location), 0)
                   + :rowFixedBytes)
                 over (order by j.id desc) as running_bytes,
               row_number() over (order by j.id desc) as n
        from build_job j
        left join build_job_log l on l.job_id = j.id
        where (:userId::text is null or j.user_id = :userId)
          and (:statuses::text is null or j.status = any (string_to_array(:statuses, ',')))
          and (:before::bigint is null or j.id < :before)
        order by j.id desc
        limit :limit + 1
      ),
      page as (
        select c.id from candidate c where c.n <= :limit and (c.n = 1 or c.running_bytes <= :budgetBytes)
      )
      select %s,
        (select count(*) from candidate) > (select count(*) from page) as more
      from page
      join build_job j on j.id = page.id
      left join build_job_log l on l.job_id = j.id
      %s
      order by j.id desc
      """
          .formatted(JOB_COLUMNS, PLACE);

  /**
   * Jobs newest first, a page at a time: at most {@code limit}, fewer when their size would pass
   * {@link RowLimits#PAGE_BUDGET_BYTES}.
   *
   * @param userId only this user's jobs; null for every user's
   * @param statuses only jobs in one of these; empty for all
   * @param before only jobs with a smaller id (a page's {@link JobPage#nextBefore}); null for the newest
   */
  public JobPage jobs(String userId, Set<JobStatus> statuses, int limit, Long before) {
    String statusList =
        statuses.isEmpty() ? null : statuses.stream().map(JobStatus::sql).sorted().collect(Collectors.joining(","));
    Params params =
        Params.of("userId", userId, "statuses", statusList, "limit", limit)
            .and("before", before)
            .and("rowFixedBytes", RowLimits.ROW_FIXED_BYTES)
            .and("budgetBytes", RowLimits.PAGE_BUDGET_BYTES)
            .and("fair", fair());
    List<Row> rows = db.query(JOBS, params);
    List<JobView> jobs = rows.stream().map(JobQueries::jobView).toList();
    boolean more = !rows.isEmpty() && rows.get(0).bool("more");
    return new JobPage(jobs, more ? Optional.of(jobs.get(jobs.size() - 1).id()) : Optional.empty());
  }

  /**
   * One page of a job's history, oldest first.
   *
   * @param nextAfter where the next page starts (pass it as {@code after}); empty on the last page
   */
  public record EventPage(List<EventView> events, Optional<Long> nextAfter) {}

  /** The most events on one page, whatever their size. */
  public static final int MAX_EVENTS_PER_PAGE = 500;

  // Cut like JOBS: a row costs its message, its detail (which holds the message again) and the rest.
  private static final String EVENTS =
      """
      with candidate as (
        select e.id,
               sum(octet_length(e.detail::text) + coalesce(octet_length(e.detail ->> 'message'), 0)
                   + octet_length(e.type) + :rowFixedBytes)
                 over (order by e.id) as running_bytes,
               row_number() over (order by e.id) as n
        from build_job_event e
        where e.job_id = :jobId and (:after::bigint is null or e.id > :after)
        order by e.id
        limit :maxEvents + 1
      ),
      page as (
        select c.id from candidate c where c.n <= :maxEvents and (c.n = 1 or c.running_bytes <= :budgetBytes)
      )
      select e.id, e.type, e.detail ->> 'message' as message, e.detail, e.at,
             (select count(*) from candidate) > (select count(*) from page) as more
      from page join build_job_event e on e.id = page.id
      order by e.id
      """;

  /**
   * The job's history, oldest first, a page at a time: at most {@link #MAX_EVENTS_PER_PAGE}, fewer
   * when their size would pass {@link RowLimits#PAGE_BUDGET_BYTES}.
   *
   * @param after only events with a larger id (a page's {@link EventPage#nextAfter}); null for the oldest
   */
  public EventPage events(long jobId, Long after) {
    Params params =
        Params.of("jobId", jobId, "after", after, "maxEvents", MAX_EVENTS_PER_PAGE)
            .and("rowFixedBytes", RowLimits.ROW_FIXED_BYTES)
            .and("budgetBytes", RowLimits.PAGE_BUDGET_BYTES);
    List<Row> rows = db.query(EVENTS, params);
    List<EventView> events =
        rows.stream()
            .map(r -> new EventView(r.longValue("id"), r.string("type"), r.string("message"), r.json("detail"),
                r.instant("at")))
            .toList();
    boolean more = !rows.isEmpty() && rows.get(0).bool("more");
    return new EventPage(events, more ? Optional.of(events.get(events.size() - 1).id()) : Optional.empty());
  }

  // A lane's workers: at most its capacity (QueueConfig.MAX_SHARED_SLOTS for shared, 1 otherwise),
  // each row at most WORKER_ROW_BYTES; the steps of a job's payload only when a short number (a
  // progress bar's end), never a payload's worth of JSON.
  private static final String LIVE_WORKERS =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now)
      select w.id, w.lane, w.slot, w.status, w.task_id, w.launched_at, w.started_at,
             floor(extract(epoch from (w.expires_at - t.now)))::bigint as lease_left_seconds,
             j.id as job_id, j.user_id as job_user_id, j.kind as job_kind, j.status as job_status,
             j.progress as job_progress,
             case when jsonb_typeof(j.payload -> 'steps') = 'number' and octet_length((j.payload -> 'steps')::text) <= 11
                  then j.payload -> 'steps' end as job_steps
      from build_worker w
      cross join t
      left join lateral (
        select c.id, c.user_id, c.kind, c.status, c.progress, c.payload from build_job c
        where c.worker_id = w.id and c.status in ('dispatched', 'running')
        order by c.id
        limit 1
      ) j on true
      where w.status <> 'exited' and w.lane >= :firstLane and w.lane <= :lastLane
      order by w.lane, substring(w.slot from '#([0-9]+)$')::int
      """;

  /** The most a task id takes, as ECS (a task ARN) and the local platform write it. */
  static final int MAX_TASK_ID_BYTES = 400;

  /** One row of LIVE_WORKERS at most: a lane, a slot, a task id, a job's user id and kind. */
  static final int WORKER_ROW_BYTES = 2 * (RowLimits.MAX_LANE_BYTES + 4) + MAX_TASK_ID_BYTES
      + RowLimits.MAX_USER_ID_BYTES + RowLimits.MAX_KIND_BYTES + RowLimits.ROW_FIXED_BYTES;

  /** One row of LANE_HEADS at most: a lane, a user id, a kind. */
  static final int HEAD_ROW_BYTES = RowLimits.MAX_LANE_BYTES + RowLimits.MAX_USER_ID_BYTES + RowLimits.MAX_KIND_BYTES
      + RowLimits.ROW_FIXED_BYTES;

  /** One row of LANES at most. */
  static final int LANE_ROW_BYTES = RowLimits.MAX_LANE_BYTES + RowLimits.ROW_FIXED_BYTES;

  /** What holds each slot of a lane. */
  public List<SlotView> slots(String lane) {
    return slotsOf(lane, liveWorkers(lane, lane));
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
      byJob.put(j.id(), new Waiting(j.lane(), Lanes.capacity(j.lane(), config), ahead, slots, j.notBefore(), j.turns()));
    }
    return byJob;
  }

  /**
   * A page of lanes and where the next page starts (pass it as {@code after}); empty on the last
   * page.
   */
  public record LanePage(List<LaneView> lanes, Optional<String> nextAfter) {}

  // Lanes in name order ("shared" sorts before every "user:…" lane), cut like JOBS by a running sum
  // of what each lane costs here and in LANE_HEADS and LIVE_WORKERS, by their widest rows: so the
  // page's three answers stay within the budget together. The first lane is always taken: alone, its
  // workers (at most QueueConfig.MAX_SHARED_SLOTS) and its head (at most the API's 200) each fit.
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
      ),
      candidate as (
        select l.name, l.queued,
               sum(:laneRowBytes + l.live * :workerRowBytes + least(l.queued, :headLimit) * :headRowBytes)
                 over (order by l.name) as running_bytes,
               row_number() over (order by l.name) as n
        from (
          select lane.name,
                 (select count(*) from build_job q where q.lane = lane.name and q.status = 'queued') as queued,
                 (select count(*) from build_worker w where w.lane = lane.name and w.status <> 'exited') as live
          from lane
          where :after::text is null or lane.name > :after
          order by lane.name
          limit :maxLanes + 1
        ) l
      ),
      page as (
        select c.name, c.queued from candidate c where c.n <= :maxLanes and (c.n = 1 or c.running_bytes <= :budgetBytes)
      )
      select page.name as lane, page.queued, (select count(*) from candidate) > (select count(*) from page) as more
      from page
      order by page.name
      """;

  // The first queued jobs of each lane from :firstLane to :lastLane, in the order the lane takes
  // them, found by a loose index scan of the queued-job index (one probe per lane, however many jobs
  // wait). A FIFO lane takes them by id. The shared lane with :fair takes its retries first, then
  // rounds: round k serves the k-th oldest job of each waiting user in turn order (as PLACE counts);
  // the first :limit users with queued jobs and their first :limit jobs hold every job of the head.
  private static final String LANE_HEADS =
      """
      with recursive lane(name) as (
        (select q.lane from build_job q where q.status = 'queued' and q.lane >= :firstLane order by q.lane limit 1)
        union all
        select (select q.lane from build_job q where q.status = 'queued' and q.lane > lane.name
                order by q.lane limit 1)
        from lane where lane.name is not null and lane.name < :lastLane
      )
      select h.id, h.user_id, h.kind, h.lane, h.created_at, h.not_before, h.position
      from lane
      cross join lateral (
        select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before,
               row_number() over (order by q.id) as position
        from build_job q
        where q.lane = lane.name and q.status = 'queued' and not (:fair and lane.name = 'shared')
        order by q.id
        limit :limit
      ) h
      where lane.name <= :lastLane
      union all
      select h.id, h.user_id, h.kind, h.lane, h.created_at, h.not_before, h.position
      from lane
      cross join lateral (
        select x.id, x.user_id, x.kind, x.lane, x.created_at, x.not_before,
               row_number() over (order by x.round, x.turn, x.user_id, x.id) as position
        from (
          (select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before, 0::bigint as round, 0::bigint as turn
           from build_job q
           where q.lane = lane.name and q.status = 'queued' and q.attempts > 0
           order by q.id
           limit :limit)
          union all
          select o.id, o.user_id, o.kind, o.lane, o.created_at, o.not_before, o.round, u.turn
          from (
            select u.user_id, u.turn from build_lane_turn u
            where u.lane = lane.name and u.waiting
              and exists (select 1 from build_job e
                          where e.user_id = u.user_id and e.lane = u.lane and e.status = 'queued' and e.attempts = 0)
            order by u.turn, u.user_id
            limit :limit
          ) u
          cross join lateral (
            select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before,
                   row_number() over (order by q.id) as round
            from build_job q
            where q.user_id = u.user_id and q.lane = lane.name and q.status = 'queued' and q.attempts = 0
            order by q.id
            limit :limit
          ) o
        ) x
        order by position
        limit :limit
      ) h
      where :fair and lane.name = 'shared'
      order by lane, position
      """;

  /** The most lanes on one page, whatever their size. */
  public static final int MAX_LANES_PER_PAGE = RowLimits.PAGE_BUDGET_BYTES / LANE_ROW_BYTES;

  /**
   * Every lane that matters now: {@code shared}, dedicated users' lanes, and any lane with a live
   * worker or a queued job, in name order, a page at a time. Each with its slots, queued count, and
   * first {@code headLimit} queued jobs in dispatch order.
   *
   * @param after only lanes after this one (a page's {@link LanePage#nextAfter}); null for the first
   */
  public LanePage lanes(String after, int headLimit) {
    Params pageParams =
        Params.of("after", after, "headLimit", headLimit, "maxLanes", MAX_LANES_PER_PAGE)
            .and("laneRowBytes", LANE_ROW_BYTES)
            .and("workerRowBytes", WORKER_ROW_BYTES)
            .and("headRowBytes", HEAD_ROW_BYTES)
            .and("budgetBytes", RowLimits.PAGE_BUDGET_BYTES);
    List<Row> page = db.query(LANES, pageParams);
    if (page.isEmpty()) {
      return new LanePage(List.of(), Optional.empty());
    }
    String first = page.get(0).string("lane");
    String last = page.get(page.size() - 1).string("lane");
    List<WorkerView> workers = liveWorkers(first, last);
    Map<String, List<QueuedJob>> heads = new LinkedHashMap<>();
    if (headLimit > 0) {
      for (Row r : db.query(LANE_HEADS, Params.of("firstLane", first, "lastLane", last, "limit", headLimit)
          .and("fair", fair()))) {
        heads.computeIfAbsent(r.string("lane"), k -> new ArrayList<>())
            .add(new QueuedJob(r.longValue("id"), r.string("user_id"), r.string("kind"), r.intValue("position"),
                r.instant("created_at"), r.instant("not_before")));
      }
    }
    List<LaneView> lanes = new ArrayList<>();
    for (Row r : page) {
      String lane = r.string("lane");
      List<WorkerView> inLane = workers.stream().filter(w -> w.lane().equals(lane)).toList();
      lanes.add(new LaneView(lane, Lanes.capacity(lane, config), r.longValue("queued"), slotsOf(lane, inLane),
          heads.getOrDefault(lane, List.of())));
    }
    return new LanePage(lanes, page.get(0).bool("more") ? Optional.of(last) : Optional.empty());
  }

  private static final String PING = "select 1 as one";

  /** Whether the database answers; throws what the adapter throws when it does not. */
  public void ping() {
    db.query(PING, Params.none());
  }

  /** Live workers of the lanes from {@code firstLane} to {@code lastLane}, in name order. */
  private List<WorkerView> liveWorkers(String firstLane, String lastLane) {
    return db.query(LIVE_WORKERS, Params.of("now", clock.now(), "firstLane", firstLane, "lastLane", lastLane)).stream()
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
            : Optional.of(new LogSummary(r.longValue("log_bytes"), r.string("log_location"), r.instant("log_updated_at"))),
        r.string("supersede_key"),
        r.longValue("superseded_by"),
        r.get("turn_retry") == null
            ? Optional.empty()
            : Optional.of(new Turns(r.bool("turn_retry"), r.intValue("turn_own_ahead"), r.intValue("turn_users_ahead"),
                r.intValue("turn_others_waiting"))));
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
