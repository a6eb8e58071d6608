package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.List;
import java.util.Optional;

/** The transitions users cause: enqueue, cancel, and moving a user between lanes. */
public final class JobTransitions {
  private final Database db;
  private final QueueConfig config;
  private final QueueClock clock;

  public JobTransitions(Database db, QueueConfig config, QueueClock clock) {
    this.db = db;
    this.config = config;
    this.clock = clock;
  }

  /**
   * A new job, or the one the user already submitted with this idempotency key. {@code laneHasRoom}
   * says whether a dispatch could succeed now, so a caller skips the dispatch round trip when the
   * lane's slots are all held (the worker there will chain the job, or its exit will dispatch it).
   */
  public record Enqueued(long jobId, String lane, boolean created, boolean laneHasRoom) {}

  private static final String ENQUEUE =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      -- The payload's size as it is stored and read back, which is what a worker's row carries.
      doc as (select :payload::jsonb as payload),
      size as (select coalesce(octet_length(doc.payload::text), 0) as payload_bytes from doc),
      inserted as (
        insert into build_job (user_id, kind, payload, idempotency_key, lane, created_at)
        select :userId, :kind, doc.payload, :key, build_lane_of(:userId), t.now from t, doc, size
        where size.payload_bytes <= :maxPayloadBytes
        on conflict (user_id, idempotency_key) do nothing
        returning id, lane
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select i.id, 'enqueued', jsonb_build_object('message', 'enqueued in lane ' || i.lane, 'lane', i.lane), t.now
        from inserted i, t
      ),
      job as (
        select id, lane, true as created from inserted
        union all
        select id, lane, false from build_job
        where user_id = :userId and idempotency_key = :key and not exists (select 1 from inserted)
      )
      select size.payload_bytes, job.id, job.lane, job.created,
             -- The share lock makes a concurrent worker exit wait for this insert to commit (so
             -- its follow-up dispatch sees the job), or this count wait for the exit (so it sees
             -- the free slot): a new job never waits for the tick because of that race.
             (select count(*) from (
                select 1 from build_worker w where w.lane = job.lane and w.status <> 'exited' for share of w) live)
               < case when job.lane = 'shared' then :sharedSlots else 1 end as lane_has_room
      from size left join job on true
      """;

  /**
   * Inserts a queued job in the user's current lane, deduplicated by (user, idempotency key).
   *
   * @throws PayloadTooLargeException when the payload, as stored, is over {@link
   *     RowLimits#MAX_PAYLOAD_BYTES}; nothing is written, whether or not the key was used before
   */
  public Enqueued enqueue(String userId, String kind, Json payload, String idempotencyKey) {
    Params params =
        Params.of("now", clock.now(), "userId", userId, "kind", kind)
            .and("payload", payload)
            .and("key", idempotencyKey)
            .and("sharedSlots", config.sharedSlots())
            .and("maxPayloadBytes", RowLimits.MAX_PAYLOAD_BYTES);
    // With a concurrent insert of the same key, "do nothing" waits for it, but this statement's
    // snapshot predates it and finds no row: the next attempt sees the committed job.
    for (int attempt = 0; attempt < 3; attempt++) {
      Row r = db.query(ENQUEUE, params).get(0);
      if (r.longValue("payload_bytes") > RowLimits.MAX_PAYLOAD_BYTES) {
        throw new PayloadTooLargeException("The payload", r.longValue("payload_bytes"));
      }
      if (r.get("id") != null) {
        return new Enqueued(r.longValue("id"), r.string("lane"), r.bool("created"), r.bool("lane_has_room"));
      }
    }
    throw new buildqueue.BuildQueueException(
        "enqueue for user " + userId + " with idempotency key " + idempotencyKey
            + " found neither a new nor an existing job after 3 attempts; retry the request");
  }

  /** What a cancel request did. */
  public sealed interface Cancelled {
    /** The job was queued and is now {@code cancelled}. */
    record Now(long jobId) implements Cancelled {}

    /** The job is on a worker, which sees the flag at its next progress call. */
    record Requested(long jobId, long workerId, String taskId, String workerStatus) implements Cancelled {}

    /** The job had already finished (or was already being cancelled): nothing changed. */
    record Unchanged(long jobId, JobStatus status) implements Cancelled {}

    /** No such job, or not the caller's. */
    record NotFound(long jobId) implements Cancelled {}
  }

  private static final String CANCEL =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      target as (
        select j.id, j.status from build_job j
        where j.id = :jobId and (:userId::text is null or j.user_id = :userId)
        for update
      ),
      changed as (
        update build_job j set
          status = case when j.status = 'queued' then 'cancelled' else j.status end,
          finished_at = case when j.status = 'queued' then t.now else j.finished_at end,
          cancel_requested = true
        from target, t
        where j.id = target.id
          and (j.status = 'queued' or (j.status in ('dispatched', 'running') and not j.cancel_requested))
        returning j.id, j.status, j.worker_id
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select c.id,
               case when c.status = 'cancelled' then 'cancelled' else 'cancel-requested' end,
               jsonb_build_object('message',
                 case when c.status = 'cancelled' then 'cancelled while queued'
                      else 'cancel requested, worker ' || c.worker_id || ' stops the job at its next progress report' end),
               t.now
        from changed c, t
      )
      select target.id, target.status as old_status, changed.status as new_status, changed.worker_id,
             w.task_id, w.status as worker_status
      from target
      left join changed on true
      left join build_worker w on w.id = changed.worker_id
      """;

  /**
   * Cancels a job: a queued one at once, one on a worker by a flag the worker sees at its next
   * progress call (its job then ends {@code cancelled}). {@code userId} null means an admin.
   */
  public Cancelled cancel(long jobId, String userId) {
    Optional<Row> row =
        db.queryOptional(CANCEL, Params.of("now", clock.now(), "jobId", jobId, "userId", userId));
    if (row.isEmpty()) {
      return new Cancelled.NotFound(jobId);
    }
    Row r = row.get();
    String newStatus = r.string("new_status");
    if (newStatus == null) {
      return new Cancelled.Unchanged(jobId, JobStatus.of(r.string("old_status")));
    }
    if (newStatus.equals("cancelled")) {
      return new Cancelled.Now(jobId);
    }
    return new Cancelled.Requested(jobId, r.longValue("worker_id"), r.string("task_id"), r.string("worker_status"));
  }

  /**
   * The user's flag after the change, the lane their queued jobs are now in, how many moved.
   *
   * @param movedJobs the ids of the first {@link #MAX_MOVED_LISTED} moved jobs, in order
   */
  public record LaneChange(String userId, boolean dedicatedWorker, String lane, long movedCount, List<Long> movedJobs) {}

  /** The most moved job ids a lane change lists: the statement answers them in one row. */
  public static final int MAX_MOVED_LISTED = 1000;

  private static final String SET_DEDICATED =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      lane as (select case when :dedicated then 'user:' || :userId else 'shared' end as name),
      saved as (
        insert into build_user (user_id, dedicated_worker, updated_at)
        select :userId, :dedicated, t.now from t
        on conflict (user_id) do update set dedicated_worker = excluded.dedicated_worker, updated_at = excluded.updated_at
        returning user_id
      ),
      moved as (
        update build_job j set lane = lane.name
        from lane
        where j.user_id = :userId and j.status = 'queued' and j.lane <> lane.name
        returning j.id, j.lane
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select m.id, 'moved', jsonb_build_object('message', 'moved to lane ' || m.lane, 'lane', m.lane), t.now
        from moved m, t
      )
      -- One row however many jobs move: a lane, a count and at most MAX_MOVED_LISTED ids (20 KB).
      select lane.name as lane, (select count(*) from saved) as saved, (select count(*) from moved) as moved_count,
             (select string_agg(m.id::text, ',' order by m.id)
              from (select id from moved order by id limit :maxListed) m) as moved_ids
      from lane
      """;

  /** Gives or takes a user's dedicated worker; their queued jobs move to the new lane in order. */
  public LaneChange setDedicated(String userId, boolean dedicated) {
    Row r =
        db.query(SET_DEDICATED, Params.of("now", clock.now(), "userId", userId, "dedicated", dedicated)
                .and("maxListed", MAX_MOVED_LISTED))
            .get(0);
    String ids = r.string("moved_ids");
    List<Long> moved = ids == null ? List.of() : java.util.Arrays.stream(ids.split(",")).map(Long::valueOf).toList();
    return new LaneChange(userId, dedicated, r.string("lane"), r.longValue("moved_count"), moved);
  }
}
