package buildqueue.core;

import buildqueue.core.JobQueries.CurrentJob;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobQueries.SlotView;
import buildqueue.core.JobQueries.Waiting;
import buildqueue.core.JobQueries.WorkerView;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The live workers of lanes and the slots they hold: what a queued job waits for ({@link
 * JobQueries#waiting}), and the slots of each lane on the lanes page ({@link LaneReads}).
 */
record SlotReads(Database db, QueueConfig config, QueueClock clock) {
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

  /**
   * A waiting job's lane in one read: its live workers as {@link #LIVE_WORKERS} reads them, each
   * with how long its job has held the slot, and the lane's recent finished jobs ({@link
   * StartEstimate}'s samples) on the first row (on a row of nulls when no worker is live). The
   * samples are the last {@link StartEstimate#MAX_SAMPLES} jobs that ran and finished in the lane
   * within {@link StartEstimate#WINDOW}, found on build_job_lane_finished (V017): at most
   * MAX_SAMPLES × (a kind and two numbers), well within a row. Every row also says whether the lane
   * is paused (V015): a paused lane starts nothing, so its jobs get no estimate.
   */
  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String WAITING_LANE =
      """
      with recent as (
        select coalesce(:now::timestamptz, now()) as read_at,
               (select p.paused_at from build_lane_pause p where p.lane = :firstLane) as paused_at,
               (select p.paused_by from build_lane_pause p where p.lane = :firstLane) as paused_by,
               coalesce(jsonb_agg(jsonb_build_array(f.kind, f.start_ms, f.slot_ms) order by f.finished_at desc),
                        '[]'::jsonb) as samples
        from (
          select f.kind, f.finished_at,
                 floor(extract(epoch from (f.started_at - f.dispatched_at)) * 1000)::bigint as start_ms,
                 floor(extract(epoch from (f.finished_at - f.dispatched_at)) * 1000)::bigint as slot_ms
          from build_job f
          where f.lane = :firstLane and f.finished_at is not null
            and f.finished_at > coalesce(:now::timestamptz, now()) - make_interval(secs => :windowSeconds)
            and f.started_at is not null and f.dispatched_at is not null
          order by f.finished_at desc
          limit :maxSamples
        ) f
      )
      select lw.*, recent.read_at, recent.paused_at, recent.paused_by, case when lw.first is not false then recent.samples end as samples,
             floor(extract(epoch from (recent.read_at - j.dispatched_at)) * 1000)::bigint as job_held_ms
      from recent
      left join lateral (select w.*, row_number() over () = 1 as first from (%s) w) lw on true
      left join build_job j on j.id = lw.job_id
      """
          .formatted(LIVE_WORKERS.strip());

  /** The most a task id takes, as ECS (a task ARN) and the local platform write it. */
  static final int MAX_TASK_ID_BYTES = 400;

  /** One row of LIVE_WORKERS at most: a lane, a slot, a task id, a job's user id and kind. */
  static final int WORKER_ROW_BYTES =
      2 * (RowLimits.MAX_LANE_BYTES + 4)
          + MAX_TASK_ID_BYTES
          + RowLimits.MAX_USER_ID_BYTES
          + RowLimits.MAX_KIND_BYTES
          + RowLimits.ROW_FIXED_BYTES;

  List<SlotView> slots(String lane) {
    return slotsOf(lane, liveWorkers(lane, lane));
  }

  Map<Long, Waiting> waiting(Collection<JobView> jobs) {
    Map<String, LaneNow> byLane = new LinkedHashMap<>();
    Map<Long, Waiting> byJob = new LinkedHashMap<>();
    for (JobView j : jobs) {
      if (j.status() != JobStatus.QUEUED) {
        continue;
      }
      LaneNow lane = byLane.computeIfAbsent(j.lane(), this::laneNow);
      int ahead = j.position() == null ? 0 : j.position() - 1;
      int capacity = Lanes.capacity(j.lane(), config);
      // A paused lane starts nothing until an admin resumes it: no time can be promised.
      Optional<StartEstimate> estimate =
          lane.pause().isPresent()
              ? Optional.empty()
              : StartEstimate.of(
                  lane.readAt(),
                  capacity,
                  config.chainWindow(),
                  lane.busy(),
                  ahead,
                  j.notBefore(),
                  lane.samples(),
                  j.id());
      byJob.put(
          j.id(),
          new Waiting(
              j.lane(),
              capacity,
              ahead,
              lane.slots(),
              j.notBefore(),
              j.turns(),
              estimate,
              lane.pause()));
    }
    return byJob;
  }

  /**
   * A lane as {@link #WAITING_LANE} read it: its slots, the jobs holding them (kind and how long
   * held), its recent finished jobs, the time of the read, and its pause if paused.
   */
  private record LaneNow(
      List<SlotView> slots,
      List<StartEstimate.Held> busy,
      List<StartEstimate.Sample> samples,
      Instant readAt,
      Optional<JobQueries.Pause> pause) {}

  private LaneNow laneNow(String lane) {
    List<Row> rows =
        db.query(
            WAITING_LANE,
            Params.of("now", clock.now(), "firstLane", lane, "lastLane", lane)
                .and("windowSeconds", StartEstimate.WINDOW.toSeconds())
                .and("maxSamples", StartEstimate.MAX_SAMPLES));
    List<WorkerView> workers = new ArrayList<>();
    List<StartEstimate.Held> busy = new ArrayList<>();
    List<StartEstimate.Sample> samples = new ArrayList<>();
    List<Row> held = new ArrayList<>();
    for (Row r : rows) {
      if (r.get("samples") != null) {
        samples.addAll(StartEstimate.samples(r.json("samples")));
      }
      if (r.get("id") == null) {
        continue;
      }
      WorkerView w = workerView(r);
      workers.add(w);
      if (w.job().isPresent() && r.get("job_held_ms") != null) {
        held.add(r);
      }
    }
    Row first = rows.get(0);
    Instant readAt = first.instant("read_at");
    Optional<JobQueries.Pause> pause =
        Optional.ofNullable(first.instant("paused_at"))
            .map(at -> new JobQueries.Pause(at, first.string("paused_by")));
    for (Row r : held) {
      Instant started = r.instant("started_at");
      busy.add(
          new StartEstimate.Held(
              r.string("job_kind"),
              r.longValue("job_held_ms"),
              started == null ? 0 : Math.max(0, Duration.between(started, readAt).toMillis())));
    }
    return new LaneNow(slotsOf(lane, workers), busy, samples, readAt, pause);
  }

  /** Live workers of the lanes from {@code firstLane} to {@code lastLane}, in name order. */
  List<WorkerView> liveWorkers(String firstLane, String lastLane) {
    return db
        .query(
            LIVE_WORKERS,
            Params.of("now", clock.now(), "firstLane", firstLane, "lastLane", lastLane))
        .stream()
        .map(SlotReads::workerView)
        .toList();
  }

  /**
   * The lane's slots in order, {@code <lane>#1} to its capacity, plus any slot beyond that still
   * held (the capacity was lowered while a worker ran).
   */
  List<SlotView> slotsOf(String lane, List<WorkerView> workers) {
    Set<String> names =
        new TreeSet<>(
            java.util.Comparator.comparingInt(SlotReads::slotNumber)
                .thenComparing(java.util.Comparator.naturalOrder()));
    for (int n = 1; n <= Lanes.capacity(lane, config); n++) {
      names.add(lane + "#" + n);
    }
    workers.forEach(w -> names.add(w.slot()));
    return names.stream()
        .map(
            slot ->
                new SlotView(slot, workers.stream().filter(w -> w.slot().equals(slot)).findFirst()))
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
            : Optional.of(
                new CurrentJob(
                    r.longValue("job_id"),
                    r.string("job_user_id"),
                    r.string("job_kind"),
                    JobStatus.of(r.string("job_status")),
                    r.intValue("job_progress"),
                    r.json("job_steps")));
    return new WorkerView(
        r.longValue("id"),
        r.string("lane"),
        r.string("slot"),
        WorkerStatus.of(r.string("status")),
        r.string("task_id"),
        r.longValue("lease_left_seconds"),
        r.instant("launched_at"),
        r.instant("started_at"),
        job);
  }
}
