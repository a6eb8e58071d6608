/**
 * The queue under faults: a seeded simulation of the real core on real PostgreSQL, input fuzzing,
 * and isolation tests (issue 5).
 *
 * <h2>The simulation</h2>
 *
 * {@link buildqueue.faults.FaultInjectionTest} runs 2,000 scenarios by default and prints one line:
 * scenarios, operations, statements, jobs, faults injected by type, outages, frozen workers stopped
 * at the queue's request, what the program jobs did (started, timed out, SIGKILLed after the grace,
 * exited with the retry code, died with their worker, uploaded artifacts, published them, had their
 * uploads swept), the longest recovery, violations; it fails if a fault type was never injected. A
 * scenario ({@link buildqueue.faults.Simulation}) wires the production {@code BuildQueue}, {@code
 * HttpApi}, {@code WorkerLoop} and {@code InProcessPlatform} to a database of its own and drives
 * them with actors, each a real thread: API clients (submit, with retries under the same
 * idempotency key; cancel; reads; admin lane changes), ticks, stop-event deliveries and in-process
 * workers. The {@link buildqueue.faults.Scheduler} lets exactly one actor run from one statement
 * (or platform call) to the next, chosen from the scenario's seed, and checks the invariants of
 * docs/architecture.md §5 against the rows after every step that wrote ({@link
 * buildqueue.faults.Invariants}). A fault phase is followed by a recovery phase without faults that
 * must end every job within 15 simulated minutes.
 *
 * <p>Faults ({@link buildqueue.faults.Fault}): a worker crashes at every {@code WorkerLoop.Point}
 * or is killed from outside at any moment; a worker freezes (as under SIGSTOP: the platform still
 * reports it running, it writes nothing, its own deadline timer is stopped with it) and outlives
 * its lease until the queue asks the platform to stop it, which ends it only a while later; a
 * process that knows a live worker's id but not its token makes the worker's writes; a job kills
 * its worker at the same step on every attempt; a launch fails definitely or for capacity, ends
 * with an unknown outcome (the task starting or not), or starts after its lease; a redeploy (in
 * about half the scenarios, once, at a step of the fault phase) opens a window, shorter than the
 * launch backoff's budget, in which every launch and relaunch is refused as ECS refuses RunTask
 * mid-deploy (IAM's denial, an INACTIVE revision: retryable, before the token is looked at), and
 * the invariants check that such a refusal is never final at first sight, backs off, and that no
 * job fails for the deploy alone (docs/architecture.md §4.4); a caller dies before or after its
 * launch, or outlives its timeout; stop evidence is duplicated, delayed, reordered, lost or forged;
 * a stop the queue asks of the platform (a cancel's, a supersede's, the tick's: the worker's
 * SIGTERM, which the in-process platform turns into the worker's {@code WorkerStop}) is lost, or
 * arrives a few steps late, so that it reaches a worker already gone (nothing happens) or one whose
 * cancelled job has ended meanwhile (it stops whatever the worker does now: the job it chained is
 * interrupted, §5.6), each counted as it happens, and cancels are aimed at jobs whose worker is
 * about to end them; a backend is terminated ({@code pg_terminate_backend}) mid-statement, after
 * commit with the reply lost, or mid-transaction; the database is unreachable for a while (on the
 * Data API adapter: {@code DatabaseResumingException} from the wire-level fake, see the aws
 * module's {@code DataApiFaultInjectionTest}). Time is a settable clock: leases are seconds long
 * and expire on demand, and workers' hard deadlines fall on the simulated clock ({@code
 * WorkerLoop.DeadlineTimer}).
 *
 * <p>The tick's schedule (docs/architecture.md §4.5, "Idle at zero"; {@link
 * buildqueue.faults.SimSchedule}): the queue's arm after an enqueue that found the tick disarmed
 * and its tick's disarm go through a simulated schedule, each call a scheduling point; the minute
 * tick fires only while it is on, and a fallback tick once a simulated day (template.yaml's rates)
 * whatever it is. An arm is lost (the caller dies between its commit and the call), duplicated (it
 * lands again up to 90 s later) or late (it lands up to 90 s later, after a disarm that raced it or
 * while work waits). The queue goes idle: in the fault phase, whenever nothing is left to do, for 2
 * minutes to 3 hours; and after the recovery, for 10 minutes to 36 hours. Time jumps over what
 * nothing happens in (no tick while the schedule is off, to the next late arm or fallback), and the
 * recovery, when only a tick could move the queue on and an arm went astray, jumps to the fallback
 * (its bound grows by the jump). The ticks publish the job events as {@code TickFunction} does (an
 * unpublished event is work). The invariants of §5's "Idle at zero" paragraph are checked after
 * every step: the schedule is on while work exists unless an arm went astray; no job waits with a
 * free slot longer than a day and a minute; from the first tick that finds the queue without work
 * to the next enqueue the ticks send at most two statements per arm that lands and per fallback
 * tick (the summary line counts the idle periods, their tick statements, fallback ticks and arms
 * landed).
 *
 * <p>Job processes (docs/architecture.md §10.1): about half the scenarios submit program jobs, of a
 * command kind whose timeout and grace are drawn per scenario. The production {@code ProcessRunner}
 * runs them inside the real worker loop, on {@link buildqueue.faults.SimProgram}s instead of
 * processes (its {@code ProcessLauncher}, {@code JobProcess} and {@code MonotonicClock} seams, on
 * the simulated clock), so the outcome mapping under test is the runner's own. A program reports
 * progress through the real control file, then exits 0 (with a follow-up), crashes with a code
 * (with or without an error line), dies of a signal, exits with its kind's retry code on its first
 * attempts, or hangs past its timeout; it dies on SIGTERM, after a while, or ignores it; it may
 * leave a child that outlives it; its owner cancels it while it runs, or in the grace after its
 * timeout's SIGTERM. The invariants check the runner's timing (SIGTERM at the timeout, at the
 * runner's first poll after a stop reached its worker (a cancel is pushed as that stop: a cancel
 * that never reaches the program is caught here, on the simulation's clock), within the heartbeat
 * interval of a cancel whose stop was lost, SIGKILL once the grace is over, leftovers signalled and
 * not waited for past the grace), the job's outcome (a timed-out job fails "timed out after …", a
 * cancelled one ends cancelled, a crash fails with the program's error or its code, a signal fails
 * naming it, a retry code is an interruption under §5.6), and that no process of a job outlives its
 * attempt, its worker or its worker's slot (no job runs twice).
 *
 * <p>Artifacts (docs/architecture.md §4.10): a drawn share of program jobs write 1 to 3 files under
 * {@code $BUILDQUEUE_ARTIFACTS}, whose contents name their attempt (job, attempt, worker, pid), as
 * their program reaches its own end. The workers upload them to the production {@code
 * DirectoryArtifactStore} in the scenario's folder ({@link buildqueue.faults.SimArtifactStore}),
 * and the ticks run {@code ArtifactSweep} while the store holds anything, as the local runtime's
 * do; the recovery also waits until nothing is left for the sweep. Faults: a worker killed between
 * its uploads and its end statement (the files stay until the sweep; the job is retried), or paused
 * there until its lease is over (a long GC pause, a suspended VM), its deadline timer paused with
 * it, so that its end is refused by the lease: a fenced-off late end with artifacts, counted when
 * it happens. (Superseded and cancelled jobs do not fence their worker off: the job stays running,
 * flagged, until its worker ends it cancelled, publishing nothing.) The invariant, §5.10, after
 * every step: only a succeeded job has published artifacts, all of the attempt that succeeded it,
 * and exactly the files that attempt's program wrote (names, sizes, SHA-256); and at the end: the
 * store holds the published files and nothing else (no upload of a dead, failed, cancelled or
 * fenced-off attempt).
 *
 * <p>Properties: {@code -Dfaults.scenarios=N} (soak), {@code -Dfaults.baseSeed=B} (scenario i has
 * seed B + i; a default run has a fixed B, {@code -Dbuildqueue.seed=random} draws one), {@code
 * -Dfaults.seed=S -Dfaults.steps=n} (replay one and print its log), {@code -Dfaults.disable=a,b}
 * (leave fault types out), {@code -Dfaults.parallel=P} (databases side by side, default 3). A
 * failure is shrunk (shortest fault phase, fault types left out while it still fails) and printed
 * with its seed, its replay line and its event log, and replayed once more to show the log is the
 * same.
 *
 * <h2>Do the checks bite?</h2>
 *
 * {@code scripts/mutants.sh -o} breaks the core on purpose, one {@link buildqueue.faults.Mutants
 * mutant} at a time (an unknown launch taken for a failed one; a deploy's refusal taken for a final
 * one; lease reclaim of a worker the platform can check; a fifth interruption without progress
 * retried; the progress fence without the token; no stop for a worker running past its lease; the
 * worker start without the lease; and in the job runner: a timeout that succeeds, no SIGKILL after
 * the grace, a cancel whose stop never signals the program, a retry code that fails the job; the
 * ledger's remainder lost; a tick that disarms without checking for work, a tick that never
 * disarms; a fenced-off end that publishes its artifacts, a sweep that removes published files),
 * runs this suite's default scenarios against each in a copy of the working tree, and prints which
 * invariant caught it, with the seed, the scenarios it took and the time; it exits non-zero if one
 * went uncaught. {@code --base-seed=B} repeats a batch, {@code --only=name,name} picks mutants.
 * Each mutant is an exact text replacement that must find its text once; {@link
 * buildqueue.faults.MutantsTest} checks that on every build, so a change to the core that moves a
 * mutant's text fails there rather than leaving a mutant that tests nothing.
 *
 * <h2>What is deterministic</h2>
 *
 * Everything a scenario decides comes from its seed (through one {@code Random}, a second one for
 * the faults added after {@link buildqueue.faults.FaultSeedRegressionTest} pinned its seeds, a
 * third for the program jobs' faults, and more for later ones: the deploy, the stops, the arming
 * and idle stretches, the artifacts); a program's state is a function of the simulated clock;
 * actors run one at a time and evidence that arrives during a step is ordered by task; ids restart
 * per scenario; every {@code :now} is the simulated clock as of when the statement runs; tick
 * claims come back in id order. So a seed gives the same event log on any database, whatever ran on
 * it before ({@link buildqueue.faults.ReplayTest}). Not deterministic, and not read by anything
 * that decides: worker tokens (random UUIDs), wall-clock durations, the base seed under {@code
 * -Dbuildqueue.seed=random} (printed).
 *
 * <h2>An assumption the core rests on</h2>
 *
 * The tick relaunches a launch whose outcome was never recorded after the launch grace. That is
 * safe only if every caller that could still be launching it is dead by then: Lambda timeouts must
 * end inside {@code QueueConfig#launchGrace()}. The simulation models caller timeouts; with them
 * left out it finds the race ({@link buildqueue.faults.FaultSeedRegressionTest}).
 */
package buildqueue.faults;
