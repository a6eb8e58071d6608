package buildqueue.core;

import buildqueue.core.JobQueries.EventPage;
import buildqueue.core.JobQueries.EventView;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.List;
import java.util.Optional;

/** A job's history, a page at a time, as {@link JobQueries#events} reads it. */
record EventReads(Database db) {
  // Cut like JobListReads.JOBS: a row costs its message, its detail (which holds the message again)
  // and the rest.
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

  EventPage events(long jobId, Long after) {
    Params params =
        Params.of("jobId", jobId, "after", after, "maxEvents", JobQueries.MAX_EVENTS_PER_PAGE)
            .and("rowFixedBytes", RowLimits.ROW_FIXED_BYTES)
            .and("budgetBytes", RowLimits.PAGE_BUDGET_BYTES);
    List<Row> rows = db.query(EVENTS, params);
    List<EventView> events =
        rows.stream()
            .map(
                r ->
                    new EventView(
                        r.longValue("id"),
                        r.string("type"),
                        r.string("message"),
                        r.json("detail"),
                        r.instant("at")))
            .toList();
    boolean more = !rows.isEmpty() && rows.get(0).bool("more");
    return new EventPage(
        events, more ? Optional.of(events.get(events.size() - 1).id()) : Optional.empty());
  }
}
