package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.List;
import java.util.Objects;

/**
 * The transitions operators cause on many jobs or on a finished one: a bulk cancel by filter, and
 * the link between a failed or cancelled job and its retry. (A retry itself is an enqueue.)
 */
public final class OperatorTransitions {
  /**
   * The most jobs one bulk cancel statement changes. A filter that matches more is cancelled by
   * repeated calls, each answering how many still match: one statement never touches an unbounded
   * number of rows, and its one-row answer (at most this many ids, the requested jobs' task ARNs of
   * ~110 bytes each, and the outbox claim's 48,000 bytes, V011) stays under the Data API's 64 KB.
   */
  public static final int MAX_BULK_CANCEL = 100;

  /**
   * How far a bulk cancel counts the matching jobs it left: {@code remaining} is exact below this
   * and means "at least this many" at it, so the count reads a bounded number of index entries.
   */
  public static final int MAX_REMAINING_COUNTED = 10_000;

  private final Database db;
  private final QueueClock clock;

  public OperatorTransitions(Database db, QueueClock clock) {
    this.db = db;
    this.clock = clock;
  }

  /**
   * Which unfinished jobs a bulk cancel takes: a null field matches any value.
   *
   * @param queued whether queued jobs match
   * @param running whether jobs on a worker (dispatched or running) match, those whose cancel was
   *     not yet requested
   */
  public record CancelFilter(String userId, String kind, boolean queued, boolean running) {
    public CancelFilter {
      if (!queued && !running) {
        throw new IllegalArgumentException("a bulk cancel matches queued or running jobs, or both");
      }
    }
  }

  /**
   * What one bulk cancel statement did.
   *
   * @param cancelled the queued jobs it cancelled, in id order
   * @param cancelRequested the jobs on a worker whose cancel it requested, in id order
   * @param cancelRequestedTaskIds the tasks of those jobs' workers (those with one yet), which the
   *     caller asks the platform to stop, as a single cancel does
   * @param remaining how many jobs still match the filter, counted to at most {@link
   *     #MAX_REMAINING_COUNTED} (some may have been held by a concurrent transition, or be past
   *     this call's {@link #MAX_BULK_CANCEL})
   */
  public record BulkCancelled(
      List<Long> cancelled,
      List<Long> cancelRequested,
      List<String> cancelRequestedTaskIds,
      long remaining) {}

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  // The matching jobs are chosen as an array, by two branches that each fit a partial index
  // (build_job_queued, build_job_on_worker) or the user's (build_job_user), oldest first, and
  // locked skipping those a concurrent transition holds (see TickTransitions' HOUSEKEEP for why an
  // array). The update re-checks each job's status under its lock, as CANCEL does: a job that
  // moved since (dispatched, finished) is left as the filter and the guards say.
  // (Each job is cancelled by the single cancel's own text, JobTransitions.CANCELLING, with the
  // filter's statuses as a further guard.)
  private static final String CANCEL_MATCHING =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      target as (
        select j.id from build_job j
        where j.id = any(array(
          select m.id from (
            select q.id from build_job q
            where :queued and q.status = 'queued'
              and (:userId::text is null or q.user_id = :userId) and (:kind::text is null or q.kind = :kind)
            union all
            select r.id from build_job r
            where :running and r.status in ('dispatched', 'running') and not r.cancel_requested
              and (:userId::text is null or r.user_id = :userId) and (:kind::text is null or r.kind = :kind)
          ) m
          order by m.id
          limit :limit))
        for update skip locked
      ),
      %s
      select (select string_agg(c.id::text, ',' order by c.id) from changed c where c.status = 'cancelled')
               as cancelled_ids,
             (select string_agg(c.id::text, ',' order by c.id) from changed c where c.status <> 'cancelled')
               as requested_ids,
             (select string_agg(w.task_id, ',' order by c.id) from changed c
              join build_worker w on w.id = c.worker_id where c.status <> 'cancelled' and w.task_id is not null)
               as requested_task_ids,
             -- This statement's snapshot still sees the jobs it changed as they were: leave them out.
             (select count(*) from (
                select 1 from build_job q
                where :queued and q.status = 'queued'
                  and (:userId::text is null or q.user_id = :userId) and (:kind::text is null or q.kind = :kind)
                  and not exists (select 1 from changed c where c.id = q.id)
                union all
                select 1 from build_job r
                where :running and r.status in ('dispatched', 'running') and not r.cancel_requested
                  and (:userId::text is null or r.user_id = :userId) and (:kind::text is null or r.kind = :kind)
                  and not exists (select 1 from changed c where c.id = r.id)
                limit :maxCounted) left_over) as remaining,
             -- As the single cancel's: the claim (V009) runs after the history rows are written.
             case when event_done.n > 0 and :claimLimit::integer > 0
                  then build_outbox_claim(t.now, :claimMs::bigint, :claimLimit::integer) end as claimed_events
      from (select count(*) as n from event) as event_done
        cross join t
      """
          .formatted(
              JobTransitions.CANCELLING.formatted(
                  "\n    and ((:queued and j.status = 'queued') or (:running and j.status <> 'queued'))"));

  /**
   * Cancels at most {@link #MAX_BULK_CANCEL} of the jobs {@code filter} matches, oldest first, as a
   * single cancel does each: a queued one at once, one on a worker by its flag; each gets the
   * history row a single cancel writes.
   */
  public BulkCancelled cancelMatching(CancelFilter filter) {
    return cancelMatching(filter, null);
  }

  BulkCancelled cancelMatching(CancelFilter filter, RequestTail tail) {
    Objects.requireNonNull(filter, "filter");
    Row r =
        db.query(
                CANCEL_MATCHING,
                Params.of("now", clock.now(), "userId", filter.userId(), "kind", filter.kind())
                    .and("queued", filter.queued())
                    .and("running", filter.running())
                    .and("limit", MAX_BULK_CANCEL)
                    .and("maxCounted", MAX_REMAINING_COUNTED)
                    .and("claimMs", OutboxTransitions.CLAIM.toMillis())
                    .and("claimLimit", tail == null ? 0 : tail.claimLimit()))
            .get(0);
    if (tail != null) {
      tail.claimed(r.string("claimed_events"));
    }
    return new BulkCancelled(
        JobTransitions.ids(r.string("cancelled_ids")),
        JobTransitions.ids(r.string("requested_ids")),
        JobTransitions.taskIds(r.string("requested_task_ids")),
        r.longValue("remaining"));
  }

  /** What linking a retry found. */
  public sealed interface RetryLink {
    /** The old job now names the new one as its retry (or already did: a repeated request). */
    record Linked(long retriedBy) implements RetryLink {}

    /** The old job was already retried by another job, which stays its retry. */
    record RetriedBefore(long retriedBy) implements RetryLink {}

    /** The old job is gone (deleted after its retention) or no longer failed or cancelled. */
    record Gone() implements RetryLink {}
  }

  private static final String LINK_RETRY =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      old as (
        select o.id, o.retried_by from build_job o
        where o.id = :oldId::bigint and o.status in ('failed', 'cancelled')
        for update
      ),
      linked_old as (
        update build_job j set retried_by = :newId::bigint
        from old
        where j.id = old.id and old.retried_by is null
        returning j.id
      ),
      linked_new as (
        update build_job j set retry_of = :oldId::bigint
        where j.id = :newId::bigint and j.retry_of is null
          and (exists (select 1 from linked_old) or (select o.retried_by from old o) = :newId::bigint)
        returning j.id
      ),
      event as (
        insert into build_job_event (job_id, type, detail, at)
        select l.id, 'retried', jsonb_build_object('message', 'retried as job ' || :newId::bigint, 'retriedBy', :newId::bigint), t.now
        from linked_old l, t
        returning id
      )
      select old.id, coalesce((select l.id from linked_old l), 0) > 0 as linked, old.retried_by,
             (select count(*) from linked_new) as new_linked
      from (select count(*) from event) as event_done
        cross join t
        left join old on true
      """;

  /**
   * Links job {@code oldId} (failed or cancelled) and its retry {@code newId} both ways, once: a
   * job is retried by one job only. The retry is enqueued first (with an idempotency key naming the
   * old job), so a request that died between the two is repeated safely: its enqueue answers the
   * same job, which this then links.
   */
  public RetryLink linkRetry(long oldId, long newId) {
    Row r =
        db.query(LINK_RETRY, Params.of("now", clock.now(), "oldId", oldId, "newId", newId)).get(0);
    if (r.get("id") == null) {
      return new RetryLink.Gone();
    }
    if (r.bool("linked")) {
      return new RetryLink.Linked(newId);
    }
    long retriedBy = r.longValue("retried_by");
    return retriedBy == newId
        ? new RetryLink.Linked(newId)
        : new RetryLink.RetriedBefore(retriedBy);
  }
}
