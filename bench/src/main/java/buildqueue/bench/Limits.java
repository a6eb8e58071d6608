package buildqueue.bench;

/**
 * What most limits each figure, and the row that shows it. Kept in words rather than numbers so it
 * stays true from run to run; the numbers are in the table above it.
 */
final class Limits {
  private Limits() {}

  static final String NOTE =
      """
      ### What limits each figure

      1. **Statements per job: the launch.** RunTask is a call to another system between two of our writes:
         the slot must be claimed and committed before it (a crash must not leave a worker nobody knows of)
         and its outcome recorded after it. The worker's start and the job's end are fenced writes of their
         own, the exit is evidence from elsewhere, and the dispatch after it serves the lane's next job.
         Everything else (history rows, the chain to the next job, the drain) rides in one of those
         statements. A chained job skips the launch: two statements.
      2. **Commit ceiling: fsync.** One connection commits as fast as the WAL can be flushed; with 16 the
         flushes are shared (group commit). Our throughput stays well below ceiling ÷ commits per job because
         the cores run out first: each of our commits is one statement of several CTEs that PostgreSQL must
         plan and run (see the plans below), on the same 2 cores as the workers.
      3. **Throughput: CPU.** With 10 and 100 users the machine's cores are busy the whole run ("CPU busy" in
         the row), most of it in PostgreSQL, the rest in the benchmark JVM's workers. With one user the lane
         is strictly serial, so one job's end-and-take-next statement after another sets the pace and the
         cores are not saturated. graphile-worker at its default is held by its poll (a queue's next job
         waits for it); pg-boss by fetching a key's next job only on its poll, 0.5 s at the least.
         db-scheduler and JobRunr keep no user's jobs apart, so each user's next job is released by
         hand from the previous one's handler, one more UPDATE a job. Their statements are short ones on
         one table; their rows' CPU says how much of PostgreSQL and of this JVM they took beside ours.
         JobRunr's first fetch comes 1 s after its server starts, which weighs most on the short
         `--quick` loads.
      4. **Scale: the number of lanes, not of jobs.** Every hot statement reaches its rows through an index
         (the plans below), so nothing reads rows in proportion to the queued jobs. What the tick pays for is
         its walk over lanes with queued jobs, one index probe per lane, and its liveness checks, one per
         live worker, each bounded per tick: O(lanes × log jobs). A probe into an index of a million
         entries goes one B-tree level deeper than into one of a thousand, the most by which the tick's
         ratio can rise above 1.
      5. **Slot turnaround: two commits in a row** (the exit, then the dispatch) and the launch call; the p99
         is the shared machine's scheduling.
      6. **Cost: Fargate's start delay and the one-minute minimum.** Both are billed from the launch request
         whether or not a build runs. One task per job pays them for every job; the chain window pays them
         once per run of work in a lane. Linger buys a chance to save a start with idle billed seconds; with
         builds of minutes and arrivals minutes apart the chance is small, so it loses on every trace and
         stays off by default.
      7. **Cold start: loading classes and building SDK clients** on the first event (thousands of classes
         against the trivial handler's 880). A smaller jar barely moves it; SnapStart (on in `template.yaml`)
         starts from a snapshot taken after the classes are loaded.
      """;
}
