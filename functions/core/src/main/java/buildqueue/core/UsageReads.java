package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What users' jobs were billed in a time range (docs/architecture.md §4.8): a share counts in the
 * range its worker stopped in. One statement each, on {@code build_job_cost}'s index.
 */
final class UsageReads {
  /** The most users {@link #byUser} answers in one page, under a Data API row budget. */
  static final int MAX_USERS = 1000;

  private final Database db;
  private final Ledger ledger;

  UsageReads(Database db, QueueConfig config) {
    this.db = db;
    this.ledger = config.ledger();
  }

  private static final String USER =
      """
      select %s as cost_lines,
             (select count(distinct c.job_id) from build_job_cost c
              where c.user_id = :userId and c.at >= :from::timestamptz and c.at < :to::timestamptz) as jobs
      """
          .formatted(
              Cost.linesSql(
                  "c.user_id = :userId and c.at >= :from::timestamptz and c.at < :to::timestamptz"));

  /** One user's usage in [from, to): their jobs' shares of workers that stopped in it. */
  JobQueries.Usage user(String userId, Instant from, Instant to) {
    Row r = db.query(USER, Params.of("userId", userId, "from", from, "to", to)).get(0);
    return new JobQueries.Usage(
        userId, r.longValue("jobs"), Cost.of(Cost.parse(r.string("cost_lines")), ledger));
  }

  private static final String BY_USER =
      """
      select u.user_id, u.jobs, %s as cost_lines
      from (select c.user_id, count(distinct c.job_id) as jobs from build_job_cost c
            where c.at >= :from::timestamptz and c.at < :to::timestamptz
            group by c.user_id order by c.user_id limit :limit) u
      order by u.user_id
      """
          .formatted(
              Cost.linesSql(
                  "c.user_id = u.user_id and c.at >= :from::timestamptz and c.at < :to::timestamptz"));

  /** Every user's usage in [from, to), by user id, at most {@link #MAX_USERS}. */
  List<JobQueries.Usage> byUser(Instant from, Instant to) {
    List<JobQueries.Usage> out = new ArrayList<>();
    for (Row r : db.query(BY_USER, Params.of("from", from, "to", to, "limit", MAX_USERS))) {
      out.add(
          new JobQueries.Usage(
              r.string("user_id"),
              r.longValue("jobs"),
              Cost.of(Cost.parse(r.string("cost_lines")), ledger)));
    }
    return out;
  }
}
