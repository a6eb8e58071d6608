package buildqueue.core;

import buildqueue.core.JobQueries.JobPage;
import buildqueue.core.JobQueries.JobView;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Pages of jobs, newest first, as {@link JobQueries#jobs} reads them: {@link JobReads}' columns,
 * cut to a budget.
 */
record JobListReads(Database db, QueueConfig config) {
  // Each candidate's share of the answer (its values' octets plus RowLimits.ROW_FIXED_BYTES for the
  // rest) is summed down the page, and the page ends before the sum passes the budget: so the
  // answer
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
          .formatted(JobReads.JOB_COLUMNS, JobReads.PLACE);

  JobPage jobs(String userId, Set<JobStatus> statuses, int limit, Long before) {
    String statusList =
        statuses.isEmpty()
            ? null
            : statuses.stream().map(JobStatus::sql).sorted().collect(Collectors.joining(","));
    Params params =
        Params.of("userId", userId, "statuses", statusList, "limit", limit)
            .and("before", before)
            .and("rowFixedBytes", RowLimits.ROW_FIXED_BYTES)
            .and("budgetBytes", RowLimits.PAGE_BUDGET_BYTES)
            .and("fair", config.takesTurns(Lanes.SHARED));
    List<Row> rows = db.query(JOBS, params);
    List<JobView> jobs = rows.stream().map(JobReads::jobView).toList();
    boolean more = !rows.isEmpty() && rows.get(0).bool("more");
    return new JobPage(jobs, more ? Optional.of(jobs.get(jobs.size() - 1).id()) : Optional.empty());
  }
}
