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
         starts from a snapshot taken after the classes are loaded. **After priming, the round trips the
         event makes.** What a primed first event still pays is mostly its own calls, each 5–10 ms here (the
         fake's JSON and JDBC and a durable PostgreSQL commit, 3–8 ms; the SDK's marshalling, signing and
         reading, 1–3 ms): the API's first POST makes eight (six statements, RunTask, PutEvents), about
         60 ms, the tick seven statements, about 50 ms, each with some 20 ms of the queue's own code and
         its log and metric lines around them; the stop handler two statements, the schema function three
         and a secret read, beside a Secrets Manager client, an HTTP client and a thread it builds per
         deploy on purpose. The trivial handler's first event (20–35 ms) is mostly the JVM's first dynamic
         proxy (the launcher's stand-in for the runtime's context), so 1.5× it is within reach of a
         function that makes one or two calls, and out of reach of one that makes seven or eight, however
         primed: the warm second event alone is 2–4× it. What the first event pays beyond the warm one, up to
         30 ms, is the SDK's credential chain built and read on first use (on Lambda, the container
         credentials fetched after the restore, as they must be) and paths priming runs too rarely to
         compile.
      """;
}
