package buildqueue.core;

import buildqueue.core.JobQueries.LanePage;
import buildqueue.core.JobQueries.LaneView;
import buildqueue.core.JobQueries.QueuedJob;
import buildqueue.core.JobQueries.WorkerView;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The lanes page ({@link JobQueries#lanes}): lanes in name order, each with its slots and its first
 * queued jobs.
 */
record LaneReads(Database db, QueueConfig config, SlotReads slots) {
  /** One row of LANE_HEADS at most: a lane, a user id, a kind. */
  static final int HEAD_ROW_BYTES =
      RowLimits.MAX_LANE_BYTES
          + RowLimits.MAX_USER_ID_BYTES
          + RowLimits.MAX_KIND_BYTES
          + RowLimits.ROW_FIXED_BYTES;

  /** One row of LANES at most. */
  static final int LANE_ROW_BYTES = RowLimits.MAX_LANE_BYTES + RowLimits.ROW_FIXED_BYTES;

  // Lanes in name order ("shared" sorts before every "user:…" lane), cut like JOBS by a running sum
  // of what each lane costs here and in LANE_HEADS and LIVE_WORKERS, by their widest rows: so the
  // page's three answers stay within the budget together. The first lane is always taken: alone,
  // its
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
        union
        select p.lane from build_lane_pause p
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
          where (:after::text is null or lane.name > :after) and (:only::text is null or lane.name = :only)
          order by lane.name
          limit :maxLanes + 1
        ) l
      ),
      page as (
        select c.name, c.queued from candidate c where c.n <= :maxLanes and (c.n = 1 or c.running_bytes <= :budgetBytes)
      )
      select page.name as lane, page.queued, (select count(*) from candidate) > (select count(*) from page) as more,
             p.paused_at, p.paused_by
      from page
      left join build_lane_pause p on p.lane = page.name
      order by page.name
      """;

  // The first queued jobs of each lane from :firstLane to :lastLane, in the order the lane takes
  // them, found by a loose index scan of the queued-job index (one probe per lane, however many
  // jobs
  // wait). A FIFO lane takes them by priority, then id. The shared lane with :fair takes its jobs
  // to run next first, then its retries, then rounds: round k serves the k-th job of each waiting
  // user (by priority, then age) in turn order (as PLACE counts);
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
      select h.id, h.user_id, h.kind, h.lane, h.created_at, h.not_before, h.priority, h.position
      from lane
      cross join lateral (
        select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before, q.priority,
               row_number() over (order by q.priority desc, q.id) as position
        from build_job q
        where q.lane = lane.name and q.status = 'queued' and not (:fair and lane.name = 'shared')
        order by q.priority desc, q.id
        limit :limit
      ) h
      where lane.name <= :lastLane
      union all
      select h.id, h.user_id, h.kind, h.lane, h.created_at, h.not_before, h.priority, h.position
      from lane
      cross join lateral (
        select x.id, x.user_id, x.kind, x.lane, x.created_at, x.not_before, x.priority,
               row_number() over (order by x.round, x.turn, x.user_id, x.id) as position
        from (
          (select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before, q.priority,
                  case when q.priority = 2 then -1 else 0 end::bigint as round, 0::bigint as turn
           from build_job q
           where q.lane = lane.name and q.status = 'queued' and (q.attempts > 0 or q.priority = 2)
           order by q.priority = 2 desc, q.id
           limit :limit)
          union all
          select o.id, o.user_id, o.kind, o.lane, o.created_at, o.not_before, o.priority, o.round, u.turn
          from (
            select u.user_id, u.turn from build_lane_turn u
            where u.lane = lane.name and u.waiting
              and exists (select 1 from build_job e
                          where e.user_id = u.user_id and e.lane = u.lane and e.status = 'queued' and e.attempts = 0
                            and e.priority < 2)
            order by u.turn, u.user_id
            limit :limit
          ) u
          cross join lateral (
            select q.id, q.user_id, q.kind, q.lane, q.created_at, q.not_before, q.priority,
                   row_number() over (order by q.priority desc, q.id) as round
            from build_job q
            where q.user_id = u.user_id and q.lane = lane.name and q.status = 'queued' and q.attempts = 0
              and q.priority < 2
            order by q.priority desc, q.id
            limit :limit
          ) o
        ) x
        order by position
        limit :limit
      ) h
      where :fair and lane.name = 'shared'
      order by lane, position
      """;

  /** The most lanes on one page: as many as fit the budget at their narrowest. */
  static final int MAX_LANES_PER_PAGE = RowLimits.PAGE_BUDGET_BYTES / LANE_ROW_BYTES;

  /** {@code only}: that lane alone (null: every lane after {@code after}). */
  LanePage lanes(String after, String only, int headLimit) {
    Params pageParams =
        Params.of("after", after, "headLimit", headLimit, "maxLanes", MAX_LANES_PER_PAGE)
            .and("only", only)
            .and("laneRowBytes", LANE_ROW_BYTES)
            .and("workerRowBytes", SlotReads.WORKER_ROW_BYTES)
            .and("headRowBytes", HEAD_ROW_BYTES)
            .and("budgetBytes", RowLimits.PAGE_BUDGET_BYTES);
    List<Row> page = db.query(LANES, pageParams);
    if (page.isEmpty()) {
      return new LanePage(List.of(), Optional.empty());
    }
    String first = page.get(0).string("lane");
    String last = page.get(page.size() - 1).string("lane");
    List<WorkerView> workers = slots.liveWorkers(first, last);
    Map<String, List<QueuedJob>> heads = new LinkedHashMap<>();
    if (headLimit > 0) {
      for (Row r :
          db.query(
              LANE_HEADS,
              Params.of("firstLane", first, "lastLane", last, "limit", headLimit)
                  .and("fair", config.takesTurns(Lanes.SHARED)))) {
        heads
            .computeIfAbsent(r.string("lane"), k -> new ArrayList<>())
            .add(
                new QueuedJob(
                    r.longValue("id"),
                    r.string("user_id"),
                    r.string("kind"),
                    r.intValue("position"),
                    r.instant("created_at"),
                    r.instant("not_before"),
                    r.intValue("priority")));
      }
    }
    List<LaneView> lanes = new ArrayList<>();
    for (Row r : page) {
      String lane = r.string("lane");
      List<WorkerView> inLane = workers.stream().filter(w -> w.lane().equals(lane)).toList();
      lanes.add(
          new LaneView(
              lane,
              Lanes.capacity(lane, config),
              r.longValue("queued"),
              slots.slotsOf(lane, inLane),
              heads.getOrDefault(lane, List.of()),
              Optional.ofNullable(r.instant("paused_at"))
                  .map(at -> new JobQueries.Pause(at, r.string("paused_by")))));
    }
    return new LanePage(lanes, page.get(0).bool("more") ? Optional.of(last) : Optional.empty());
  }
}
