package buildqueue.aws.metrics;

import buildqueue.core.QueueClock;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;

/** The queue's state as gauges, read once per tick: how many jobs wait, and the longest wait. */
public final class QueueGauges {
  private final Database db;
  private final QueueClock clock;

  public QueueGauges(Database db, QueueClock clock) {
    this.db = db;
    this.clock = clock;
  }

  public record Reading(long queued, long longestWaitSeconds) {}

  private static final String READ =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now)
      select count(j.id) as queued,
             coalesce(floor(extract(epoch from (t.now - min(j.created_at)))), 0)::bigint as longest_wait_seconds
      from t left join build_job j on j.status = 'queued'
      group by t.now
      """;

  public Reading read() {
    Row r = db.query(READ, Params.of("now", clock.now())).get(0);
    return new Reading(r.longValue("queued"), Math.max(0, r.longValue("longest_wait_seconds")));
  }

  public void readInto(Metrics metrics) {
    Reading r = read();
    metrics.observe(Metrics.QUEUE_DEPTH, r.queued(), Metrics.Unit.COUNT);
    metrics.observe(Metrics.QUEUE_WAIT_SECONDS, r.longestWaitSeconds(), Metrics.Unit.SECONDS);
  }
}
