package buildqueue.bench;

/**
 * What most limits each figure, and the row that shows it. Kept in words rather than numbers so it
 * stays true from run to run, the numbers being in the table above it, except where PostgreSQL's
 * CPU per chained job goes, statement by statement: that needs pg_stat_statements, which the
 * benchmark's server runs without, so those numbers are {@link StatementCosts}' on this machine.
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
         the cores run out first: a chained job's commit is one call of `build_worker_end`, which costs
         PostgreSQL about 1 ms of CPU where pgbench's one-row commit costs a tenth of that, on the same 2 cores
         as the workers. Where that millisecond goes, and why it stays, is below.
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
         Where one is ahead (db-scheduler at 100 users × 20) the two run into different walls: its ~5
         commits a job are near the commit ceiling figure 2 measures, while ours, ~2.35 commits a job, run
         out of CPU first, most of it PostgreSQL's; see the per-statement costs below. 100 users × 20 costs
         PostgreSQL more per job than 10 × 200 (about 1.4 ms against 1.0, `StatementCosts`) for two reasons:
         it starts a fresh worker per 20 jobs, and a worker's start, its last end, its exit and the dispatch
         after the exit cost about 3.5 ms of PostgreSQL CPU together (measured with 2,000 users × 1 job); and
         its 100 workers keep all 20 connections busy on 2 cores, where 10 workers keep 10 (the same load
         on a pool of 10, `-Dcosts.pool=10`, cost 0.03–0.4 ms less a job in four pairs of runs). A dedicated lane's dispatch plans only the head of
         the lane (planning the fair lane's whole choice was 2.5 ms of CPU, and the exit's dispatch is
         planned at every call). This row moves most from run to run and day to day (the machine's fsync,
         its neighbours): to compare two builds, `OurRates` runs these rows alone; run each build in turn
         in one sitting.
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

      ### Where PostgreSQL's CPU goes per chained job (figures 2 and 3)

      Measured by `StatementCosts` (`java -cp bench/target/buildqueue-bench.jar buildqueue.bench.StatementCosts`:
      figure 3's load on this benchmark's PostgreSQL with `pg_stat_statements`, `track = all`, so statements inside
      functions count; CPU from `/proc` for the server's processes alone) on 2026-12-01, on this machine while
      others used it, before and after migration `V006`. Per call, with 1 / 10 / 100 users; times are inside the
      server and wall-clock, so under load they include waiting for a core:

      | statement (calls per chained job) | before V006 | after V006 |
      |---|---|---|
      | `select * from build_worker_end(…)`, the worker's one statement per job (1) | 4.8 / 15.2 / 35.7 ms | 0.79 / 1.13 / 1.88 ms |
      | its statement, planning | 2.9 / 9.6 / 21.8 ms, at every call | once per connection (≤ 0.07 ms a call) |
      | its statement, execution | 0.58 / 3.3 / 6.9 ms; 110 buffers | 0.50 / 0.70 / 1.30 ms; 73 buffers |
      | the lane check that picks the statement without the turns (1) | — | 0.035 / 0.075 / 0.06 ms |
      | foreign-key checks: two history rows' job, the taken job's worker (3) | 0.005–0.1 ms each | 0.004–0.03 ms each |
      | PostgreSQL CPU per chained job | 4.7 / 5.1 / 6.2 ms | 0.94 / 0.97 / 1.55 ms |
      | the enqueue before it (1, not in the timed part), `build_lane_of` inside it | 0.5–0.8 ms, of it 0.07 ms planning `build_lane_of` | 0.4–0.8 ms, `build_lane_of` planned once |

      Before V006 the worker's functions were SQL functions: PostgreSQL never inlines a `SECURITY DEFINER`
      function and plans a non-inlined SQL function's body at every call, five times the cost of running it.
      They are PL/pgSQL now, their plans kept per connection (docs/architecture.md §12), and a job of a lane that
      takes its oldest job (every dedicated lane, as here) ends with the statement without the fair lane's turns.

      What is left of the ~1 ms, from a `perf` profile of the server at 10 users, and why each part stays:

      - **The writes, about 40 %.** Each job writes a new version of two job rows (the one that ended, the one
        taken), two history rows and a row lock on the taken job: 23 WAL records, 2 KB. The job rows' new versions
        cannot be HOT: `status` is in the predicate of the partial indexes every choice reads (`build_job_queued`,
        `_retry`, `_on_worker`, `_user_waiting`), which are what keep each choice one index probe at a million jobs
        (figure 4); so each version adds 4–5 index entries (12 % of the CPU). PostgreSQL 14 also reads each CHECK
        constraint back from its stored text and compiles it at every execution of every part of a statement that
        writes the table (10 %: build_job has four, written twice per job). The history rows are the outbox and the
        job's history; the checks are the schema's invariants.
      - **Building the executor's state, about 20 %**, at every execution even of a kept plan: one node per part of
        the statement (the end, its history row, the fence, the head of the lane, the take, its history row, the
        drain). With the fair lane's turns in every end it was 31 %.
      - **Foreign-key checks, about 7 %**, and the commit with its WAL flush, about 8 %: integrity and durability.
      - **The plan cache's revalidation and locks, about 5 %**, the client protocol about 3 %.

      With about 1 ms of PostgreSQL CPU and about 0.25 ms of the worker JVM's per chained job, 2 cores carry at most
      about 1,600–2,000 chained jobs/s when nothing else runs: 16–20 % of figure 2's bound on a quiet machine
      (about 10,000 chained jobs/s). A third of that bound would need at most about 0.35 ms of PostgreSQL CPU per
      chained job, less than the writes above cost alone.

      ### Why the dispatch is two statements (docs/architecture.md §12)

      Measured by `StatementCosts` on this machine. PostgreSQL plans the dispatch at nearly every call, and it plans
      every part of a statement, parts a flag switches off included: when one statement held the fair lane's whole
      choice behind a flag, a dedicated lane's dispatch spent 2.5 ms planning against 0.7 ms for its lane's head
      alone, paid at every worker's exit, whose dispatch mostly finds the lane empty. With one statement per kind of
      lane (`DISPATCH_OLDEST_FIRST`, `DISPATCH_TAKING_TURNS`), PostgreSQL's CPU per job with 2,000 users × 1 job fell
      from 6.5 to 4.4 ms.
      """;
}
