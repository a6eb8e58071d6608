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
         Where one is ahead (db-scheduler at 100 users × 20: ours ÷ it 0.72× in the re-run above, after
         issue 24's one-call exit and `V010`; 0.56× in the full run of 2026-12-01; 0.68–1.0× in four runs
         of 2026-12-02 on a machine shared with other builds, below) the two run into
         different walls: its ~5 commits a job are short one-row statements on a table of four indexes,
         no history, no foreign key, no CHECK and no fence, while ours, ~2.35 commits a job, run out of
         CPU first, most of it PostgreSQL's. 100 users × 20 costs PostgreSQL more per job than 10 × 200
         (0.71 ms against 0.52 ms of CPU after `V010`, `StatementCosts`, medians of three runs each) for
         two reasons: it starts a fresh worker per 20 jobs, whose start, last end, exit and the dispatch
         after the exit cost several times a chained end (per statement below); and its 100 workers
         keep all 20 connections busy on 2 cores, where 10 workers keep 10 (the same load on a pool of
         10, `-Dcosts.pool=10`, cost 0.03–0.4 ms less a job in four pairs of runs of 2026-12-01). The
         benchmark rig does not handicap ours against db-scheduler: both run in this JVM on a HikariCP
         pool of 20; db-scheduler gets 20 threads, ours one thread per worker (100, as on AWS, where
         each is a task), waiting for a connection from the same pool, which costs this JVM about as
         much per job as db-scheduler's threads cost it (the rows' JVM shares). What ours still pays
         per job that db-scheduler does not, statement by statement, and why it stays, is in "Where
         PostgreSQL's CPU goes" below. A dedicated lane's dispatch plans only the head of the lane
         (planning the fair lane's whole choice was 2.5 ms of CPU, and the exit's dispatch is planned
         at every call). This row moves most from run to run and day to day (the machine's fsync, its
         neighbours): to compare two builds, `OurRates` runs these rows alone; run each build in turn
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
         stays off by default. In money, the price per second is the larger lever: Fargate Spot's is a third
         of on-demand's, and a reclaim, which costs a start-up and the work since the last progress, is rare
         on builds of minutes.
      7. **Cold start: loading classes and building SDK clients** on the first event (thousands of classes
         against the trivial handler's 880). A smaller jar barely moves it; SnapStart (on in `template.yaml`)
         starts from a snapshot taken after the classes are loaded. **After priming, the round trips the
         event makes.** What a primed first event still pays is mostly its own calls, each 5–10 ms here (the
         fake's JSON and JDBC and a durable PostgreSQL commit, 3–8 ms; the SDK's marshalling, signing and
         reading, 1–3 ms): since issue 24 the API's first POST makes five (three statements, RunTask,
         PutEvents; it made eight), the tick one statement on a quiet queue (it made seven), the stop
         handler one or two, each with some 10–20 ms of the queue's own code and its log and metric lines
         around them; the schema function makes three statements
         and a secret read, beside a Secrets Manager client, an HTTP client and a thread it builds per
         deploy on purpose. The trivial handler's first event (14–35 ms) is mostly the JVM's first dynamic
         proxy (the launcher's stand-in for the runtime's context), so 1.5× it is within reach of a
         function that makes one or two calls (the stop handler: 1.0×), and out of reach of one that makes
         five, however primed: the API's warm second event alone is 2.6× it. The tick's primed first event
         (2.2×, warm 0.6×) is its one statement plus the first use of its clients. What the first event pays beyond the warm one, up to
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

      #### After `V010` (2026-12-02): a chained end in one statement, and the fresh worker's path

      `V010` makes `build_worker_end` of a job in a lane that takes its oldest job (every dedicated lane,
      all of figure 3) one statement again: the end, the lane's oldest ready job chosen inline, the take,
      both history rows in one `INSERT`, the drain. `V008` ran the end, then `build_lane_chain`, which
      called `build_lane_next_job`: each nested PL/pgSQL call with `SET` clauses saves and restores its
      settings, starts an executor per statement and returns its rows through a tuplestore that its
      caller's `RETURN QUERY` copies again. The rows written, the locks and their order, the answers are
      the same. Measured by `StatementCosts 10 100` on 2026-12-02, three runs of each build taken in
      turn (main's jar, then this branch's) while three other builds ran on the machine (load average
      6–10); CPU from `/proc` for the server's processes, in-server times from `pg_stat_statements`
      (wall-clock, so they include waiting for a core on the busy machine: read them as upper bounds of
      the CPU):

      | | before `V010` (`V008`) | after `V010` |
      |---|---|---|
      | PostgreSQL CPU per job, 10 users × 200 | 0.54 / 0.58 / 0.63 ms | 0.48 / 0.52 / 0.55 ms |
      | PostgreSQL CPU per job, 100 users × 20 | 0.64 / 0.74 / 0.75 ms | 0.66 / 0.71 / 0.72 ms |
      | `build_worker_end`, 100 users: in the server per call | 0.91–1.04 ms: the end 0.35–0.45, `build_lane_chain` 0.42–0.47 (of it the take 0.24–0.29, the choice 0.015–0.03) | 0.87–1.41 ms, one statement |
      | its buffers, WAL records, WAL bytes per call | 73, 23.2, 2.0 KB | 73, 23.2, 2.0 KB |
      | foreign-key checks per chained job: two history rows' job, the taken job's worker | 3, 4–18 µs each | 3, 4–11 µs each |

      The fresh worker's path at 100 users × 20 (per worker, after `V010`; 100 workers released at once):

      | statement (per worker) | in the server per call | what it writes |
      |---|---|---|
      | `build_worker_start` | 3.4–3.5 ms: planning 1.4–1.7 ms at 20 of 100 calls (once per connection), execution 0.9–1.2 ms of its inner statement, the rest waiting among 100 starts | the job's row lock and new version, the worker's new version, a history row: 16.7 WAL records, 246 buffers |
      | `build_worker_end`, the last (drains) | as a chained end | the job's new version, a history row, the worker `draining` |
      | the exit transition (not changed here; fused with the dispatch after it by another change) | planning 1.7–1.8 ms at every call, execution 0.36–0.69 ms | the worker `exited`, a history row if it held a job |
      | the dispatch after the exit (`build_lane_dispatch`, the lane empty) | 0.40–0.93 ms | nothing |

      What a chained end in a dedicated lane still writes, and the invariant or guarantee each write pays
      for (so what stays where ours ÷ db-scheduler is under 1.0):

      - **The ended job's new version** (4 index entries: primary key, `(user_id, idempotency_key)`,
        `build_job_user`, `build_job_finished`): not HOT, because `status` is in the predicates of the
        partial indexes that keep every choice one index probe at a million jobs (figure 4). Its WHERE
        clause is the fence (token, `running`, lease: invariant §5.2).
      - **The taken job's row lock and new version** (5 index entries: the four but `build_job_finished`,
        with `build_job_user_waiting` and `build_job_on_worker`): the lock is `skip locked`, so two
        workers of one lane never take one job; the chained job goes straight to `running` (no start
        statement, docs/architecture.md §12).
      - **Two history rows** (3 index entries each) and their foreign-key checks: the job's history and
        the outbox, written by the transition's own statement so that an event is never lost (§12).
      - **The taken job's foreign key to its worker**, and PostgreSQL 14 compiling `build_job`'s four
        CHECK constraints for each of the two writes: the schema's invariants.
      - **The commit's WAL flush**: durability (`synchronous_commit = on`, as for every peer).

      db-scheduler's job is a fetch that picks a batch of due rows in one statement, the handler's
      reschedule of the user's next job (one UPDATE, not atomic with the completion) and the delete, on a
      table with four indexes and none of the above. With ours at about 0.5–0.7 ms of PostgreSQL CPU and
      0.2 ms of this JVM's per job, 2 cores carry 2,200–2,800 chained jobs/s at the most; what is left to
      cut without giving up one of the guarantees above is the executor's per-statement setup and the
      fresh worker's start, whose in-server time at 100 users is mostly the 100 starts waiting on one
      another: its generic plan is index probes throughout (`EXPLAIN (ANALYZE, BUFFERS)` of its statement
      on a copy of the schema with 2,000 jobs and 100 workers: 0.65 ms planning, 0.85 ms execution, about
      60 buffers of which most are the history insert's), and its 246 buffers a call count the catalog
      reads of planning on each connection's first call.

      ### Why the dispatch is two statements (docs/architecture.md §12)

      Measured by `StatementCosts` on this machine. PostgreSQL plans the dispatch at nearly every call, and it plans
      every part of a statement, parts a flag switches off included: when one statement held the fair lane's whole
      choice behind a flag, a dedicated lane's dispatch spent 2.5 ms planning against 0.7 ms for its lane's head
      alone, paid at every worker's exit, whose dispatch mostly finds the lane empty. With one statement per kind of
      lane (`DISPATCH_OLDEST_FIRST`, `DISPATCH_TAKING_TURNS`), PostgreSQL's CPU per job with 2,000 users × 1 job fell
      from 6.5 to 4.4 ms.

      ### Round trips per request on AWS (issue 24)

      On AWS every statement is a Data API call over the network, so what a request costs is its calls.
      `RoundTripsTest` (functions/aws) drives the three Lambdas' handlers with API Gateway payload 2.0, the
      ECS STOPPED event and the scheduled event on the wire-level fakes (`DataApiFake` over an embedded
      PostgreSQL, `FakeEcs`, the EventBridge fake), counts every call, fails if one grows, and prints this
      table (`mvn -B -ntp -pl functions/core,functions/aws -am -Dtest=RoundTripsTest
      -Dsurefire.failIfNoSpecifiedTests=false test`, then `functions/aws/target/round-trips.md`; 2026-12-02).
      The times are medians of 5 invocations on loopback and an embedded PostgreSQL, not AWS's (where a
      Data API call is tens of milliseconds); they move with the machine's load, the counts do not. Before
      issue 24 (the same test on 1de9180): `POST /jobs` with a free slot 6 Data API calls, lane full 5, a
      stop with a job to dispatch 5, an idle tick 7, a tick that finds a stopped task and dispatches 11.

      | route / event | Data API calls | other AWS calls | ms per Data API call | ms per other call | ms per invocation |
      |---|---:|---|---:|---:|---:|
      | POST /jobs, a free slot | 3 | RunTask, PutEvents | 12.5 | 7.3 | 56.2 |
      | POST /jobs, the lane full | 3 | PutEvents | 7.2 | 3.5 | 28.3 |
      | POST /jobs, a repeated idempotency key | 2 | none | 7.6 |  | 17.8 |
      | POST /jobs, superseding a running job | 3 | StopTask, PutEvents | 6.7 | 3.9 | 30.5 |
      | GET /jobs | 1 | none | 6.5 |  | 8.3 |
      | GET /jobs/{id} | 1 | none | 6.7 |  | 8.3 |
      | GET /jobs/{id}/events | 2 | none | 4.5 |  | 11.4 |
      | GET /jobs/{id}/log | 1 | none | 4.4 |  | 6.1 |
      | POST /jobs/{id}/cancel, queued | 2 | PutEvents | 5.4 | 2.5 | 15.3 |
      | POST /jobs/{id}/cancel, running | 2 | StopTask, PutEvents | 5.2 | 3.2 | 19.8 |
      | PUT /users/{userId} | 1 | none | 4.4 |  | 6.3 |
      | GET /lanes | 3 | none | 4.0 |  | 13.8 |
      | GET /health | 1 | none | 3.7 |  | 4.8 |
      | stop event, a job queued for the slot | 2 | RunTask, PutEvents | 5.4 | 3.2 | 19.6 |
      | stop event, nothing queued | 1 | none | 5.1 |  | 7.1 |
      | stop event, a duplicate | 1 | none | 4.4 |  | 5.6 |
      | tick, an idle queue | 1 | none | 5.4 |  | 6.7 |
      | tick, a stopped task to find and a job to dispatch | 6 | RunTask, DescribeTasks, PutEvents | 4.5 | 3.3 | 38.1 |

      Medians of 5 invocations each on the wire-level fakes (loopback HTTP, embedded PostgreSQL), after one to warm up.

      ### Figure 3 re-run on 2026-12-02: before and after `V010`

      `mvn -q -B -ntp -pl bench -am package -DskipTests && java -jar bench/target/buildqueue-bench.jar
      --only=3 --out=/tmp/fig3.md`, every peer, three runs a load: main's build (before) and this
      branch's (after), in turn, four runs in all, while other builds, test suites and benchmarks ran on
      the machine (`uptime`'s load average at each run's start → end). Every row here is noisier than
      the full run above; read the ratios, each taken within one run:

      | row (jobs/s, median of 3) | before, 15:15 (0.8 → 12.7) | after, 15:37 (9.0 → 7.9) | after, 16:00 (3.2 → 6.2) | before, 16:14 (6.2 → 0.8) |
      |---|---:|---:|---:|---:|
      | ours, 1 user × 2000 | 283 | 232 | 565 | 279 |
      | db-scheduler, 1 user × 2000 | 241 | 112 | 424 | 158 |
      | ours, 10 users × 200 | 1,399 | 887 | 2,133 | 2,606 |
      | db-scheduler, 10 users × 200 | 974 | 886 | 1,395 | 1,733 |
      | ours, 100 users × 20 | 1,214 | 1,668 | 2,062 | 2,157 |
      | db-scheduler, 100 users × 20 | 1,163 | 1,760 | 2,559 | 3,195 |
      | JobRunr, 100 users × 20 | 542 | 568 | 805 | 965 |
      | graphile-worker, 100 users × 20 | 310 | 405 | 567 | 857 |

      | ours ÷ peer | 1 user × 2000 | 10 users × 200 | 100 users × 20 |
      |---|---|---|---|
      | graphile-worker | 4.3× / 4.1× / 7.4× / 4.7× | 2.9× / 2.7× / 4.3× / 3.0× | 3.9× / 4.1× / 3.6× / 2.5× |
      | graphile-worker (default pollInterval 2 s) | 499× / 436× / 1,059× / 523× | — | — |
      | pg-boss | 141× / 116× / 282× / 140× | 70× / 44× / 107× / 130× | 30× / 42× / 52× / 54× |
      | db-scheduler | 1.2× / 2.1× / 1.3× / 1.8× | 1.4× / 1.0× / 1.5× / 1.5× | **1.0× / 0.95× / 0.81× / 0.68×** |
      | JobRunr | 4.3× / 3.1× / 2.4× / 3.6× | 2.5× / 1.6× / 4.1× / 3.2× | 2.2× / 2.9× / 2.6× / 2.2× |

      (the four runs in the order of the first table: before, after, after, before.)

      Ours is ahead of every peer on every load but one: db-scheduler at 100 users × 20, level with ours
      in the busiest run and ahead in the three others, before `V010` as after it. On this machine the
      spread from run to run (db-scheduler's own rate at 100 users × 20 moved from 1,163 to 3,195 jobs/s)
      is larger than what `V010` changes (5–10 % of PostgreSQL's CPU per job, `StatementCosts` above), so
      these runs neither show that change nor rule it out. What stays, statement by statement, and what
      each write pays for is in "Where PostgreSQL's CPU goes" above.
      """;
}
