package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What operators watch, per lane over the last hours: how many jobs waited at the end of each
 * bucket, and how long the jobs dispatched in it had waited (p50, p90). One aggregate statement
 * over the job history, whatever the number of jobs: {@link #BUCKETS} buckets of {@code hours × 100
 * s} (10 minutes over 6 hours).
 *
 * <p>Read from each job's {@code created_at}, {@code dispatched_at} and {@code finished_at}: a job
 * waits from its creation to its (last) dispatch, or to its end when cancelled while queued. A job
 * that ran and came back to the queue counts as waiting from its creation to its last dispatch.
 */
public record LaneHistory(Database db, QueueClock clock) {
  /** Buckets per answer, whatever the span. */
  public static final int BUCKETS = 36;

  public static final int DEFAULT_HOURS = 6;
  public static final int MAX_HOURS = 24;

  // The jobs that finished within the span (build_job_lane_finished, V017, or build_job_finished)
  // and those that have not finished (queued: build_job_queued; dispatched or running:
  // build_job_on_worker): nothing older is read. A job counts in bucket n (ending t0 + n·B) while
  // created_at <= end < the time it left the queue, so it touches only the buckets it waited
  // through: generate_series over those, not a row per job and bucket.
  private static final String HISTORY =
      """
      with b as (
        select coalesce(:now::timestamptz, now()) as t1,
               coalesce(:now::timestamptz, now()) - make_interval(secs => :bucketSeconds * :buckets) as t0
      ),
      j as (
        select q.lane, q.created_at, q.dispatched_at, q.finished_at
        from build_job q, b where q.finished_at is not null and q.finished_at >= b.t0
        union all
        select q.lane, q.created_at, q.dispatched_at, q.finished_at
        from build_job q where q.status in ('queued', 'dispatched', 'running')
      ),
      depth as (
        select j.lane, n, count(*) as queued
        from j cross join b
        cross join lateral generate_series(
          greatest(1, ceil(extract(epoch from (j.created_at - b.t0)) / :bucketSeconds)::int),
          least(:buckets,
                ceil(extract(epoch from (coalesce(j.dispatched_at, j.finished_at, b.t1 + interval '1 day') - b.t0))
                     / :bucketSeconds)::int - 1)) n
        group by j.lane, n
      ),
      waits as (
        select j.lane, greatest(1, ceil(extract(epoch from (j.dispatched_at - b.t0)) / :bucketSeconds)::int) as n,
               count(*) as started,
               percentile_cont(0.5) within group (order by extract(epoch from (j.dispatched_at - j.created_at))) as p50,
               percentile_cont(0.9) within group (order by extract(epoch from (j.dispatched_at - j.created_at))) as p90
        from j cross join b
        where j.dispatched_at > b.t0 and j.dispatched_at <= b.t1
        group by 1, 2
      )
      select coalesce(d.lane, w.lane) as lane, coalesce(d.n, w.n) as n, coalesce(d.queued, 0) as queued,
             coalesce(w.started, 0) as started,
             round(w.p50)::bigint as p50, round(w.p90)::bigint as p90, (select t1 from b) as t1
      from depth d full join waits w on w.lane = d.lane and w.n = d.n
      order by 1, 2
      """;

  /**
   * One bucket of a lane: the jobs waiting at its end, and how many it dispatched with their waits
   * in whole seconds (null when it dispatched none).
   */
  public record Bucket(Instant end, long queued, long started, Long waitP50, Long waitP90) {}

  /** A lane's buckets, oldest first, every one present. */
  public record LaneSeries(String lane, List<Bucket> buckets) {}

  /** The answer: the span's end, its bucket size, and every lane with a job in it. */
  public record History(Instant to, Duration bucket, List<LaneSeries> lanes) {}

  public History history(int hours) {
    long bucketSeconds = hours * 3600L / BUCKETS;
    List<Row> rows =
        db.query(
            HISTORY,
            Params.of("now", clock.now(), "bucketSeconds", bucketSeconds, "buckets", BUCKETS));
    Map<String, Bucket[]> byLane = new LinkedHashMap<>();
    Instant to = null;
    for (Row r : rows) {
      to = r.instant("t1");
      Instant t0 = to.minusSeconds(bucketSeconds * BUCKETS);
      int n = r.intValue("n");
      byLane.computeIfAbsent(r.string("lane"), k -> new Bucket[BUCKETS])[n - 1] =
          new Bucket(
              t0.plusSeconds(bucketSeconds * n),
              r.longValue("queued"),
              r.longValue("started"),
              r.longValue("p50"),
              r.longValue("p90"));
    }
    if (to == null) {
      Instant now = clock.now() == null ? Instant.now() : clock.now();
      return new History(now, Duration.ofSeconds(bucketSeconds), List.of());
    }
    List<LaneSeries> lanes = new ArrayList<>();
    Instant t0 = to.minusSeconds(bucketSeconds * BUCKETS);
    byLane.forEach(
        (lane, buckets) -> {
          List<Bucket> all = new ArrayList<>();
          for (int i = 0; i < BUCKETS; i++) {
            all.add(
                buckets[i] != null
                    ? buckets[i]
                    : new Bucket(t0.plusSeconds(bucketSeconds * (i + 1)), 0, 0, null, null));
          }
          lanes.add(new LaneSeries(lane, all));
        });
    return new History(to, Duration.ofSeconds(bucketSeconds), lanes);
  }
}
