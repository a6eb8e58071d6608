package buildqueue.faults;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.Caller;
import buildqueue.api.CheckedApi;
import buildqueue.api.HttpApi;
import buildqueue.artifacts.ArtifactStore;
import buildqueue.core.ArtifactSweep;
import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.core.JobStatus;
import buildqueue.core.MonotonicClock;
import buildqueue.core.OutboxTransitions;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.TickBudget;
import buildqueue.core.TickSchedule;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.faults.Scheduler.Actor;
import buildqueue.testing.InProcessPlatform;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.WorkerLoop;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * One scenario: a queue on a real database, clients, ticks, stop-event deliveries and in-process
 * workers as actor threads stepped one at a time by a seeded {@link Scheduler}, with faults from
 * the same seed. A fault phase of a seeded number of steps is followed by a recovery phase without
 * faults, which must bring every job to an end within a bounded (simulated) time. The invariants
 * are checked against the database after every step that ran a statement or moved time.
 *
 * <p>Deterministic: every choice comes from one {@link Random}; actors run one at a time; ids
 * restart per scenario; time is a settable clock. Not deterministic: tokens (random UUIDs, which
 * nothing orders by) and wall-clock durations.
 *
 * <p>A violation names the invariant it breaks as §5.N: invariant N of docs/architecture.md §5.
 */
final class Simulation {
  static final Instant START = Instant.parse("2026-12-01T10:00:00Z");
  private static final int MAX_CLIENTS = 6;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int MAX_RECOVERY_STEPS = 6000;
  private static final Duration RECOVERY_BOUND = Duration.ofMinutes(15);

  /**
   * What to run: a seed, and for shrinking, a shorter fault phase or faults left out. {@code
   * tenants} false runs a seed as it ran before the shared lane took turns (FIFO, no one
   * supersedes): for seeds recorded then.
   */
  record Options(
      long seed, Integer faultSteps, Set<Fault> disabled, boolean tenants, boolean schedule) {
    static Options of(long seed) {
      return new Options(seed, null, EnumSet.noneOf(Fault.class), true, true);
    }

    Options withFaultSteps(int n) {
      return new Options(seed, n, disabled, tenants, schedule);
    }

    Options without(Fault f) {
      Set<Fault> d = EnumSet.noneOf(Fault.class);
      d.addAll(disabled);
      d.add(f);
      return new Options(seed, faultSteps, d, tenants, schedule);
    }

    Options withoutTenants() {
      return new Options(seed, faultSteps, disabled, false, schedule);
    }

    /**
     * The tick runs at every tick move, as before the simulation modelled its schedule (issue 25):
     * no arming, no idle stretches, no fallback, no publishing. For seeds recorded then.
     */
    Options withoutSchedule() {
      return new Options(seed, faultSteps, disabled, tenants, false);
    }

    String replay() {
      StringBuilder b = new StringBuilder("-Dfaults.seed=" + seed);
      if (faultSteps != null) {
        b.append(" -Dfaults.steps=").append(faultSteps);
      }
      if (!disabled.isEmpty()) {
        b.append(" -Dfaults.disable=")
            .append(disabled.stream().map(Fault::label).collect(Collectors.joining(",")));
      }
      if (!tenants) {
        b.append(" -Dfaults.tenants=false");
      }
      if (!schedule) {
        b.append(" -Dfaults.schedule=false");
      }
      return b.toString();
    }
  }

  /** What a scenario did. {@code violation} is null when every invariant held. */
  record Outcome(
      Options options,
      String parameters,
      String violation,
      List<String> log,
      long operations,
      long statements,
      Map<Fault, Integer> faults,
      int outages,
      int jobs,
      Duration recovery,
      int frozenStopped,
      Map<String, Integer> programs,
      Idle idle) {

    String report() {
      StringBuilder b = new StringBuilder();
      b.append("seed ")
          .append(options.seed())
          .append(" — replay with ")
          .append(options.replay())
          .append('\n');
      b.append(parameters).append('\n');
      log.forEach(l -> b.append(l).append('\n'));
      b.append("VIOLATION: ").append(violation).append('\n');
      return b.toString();
    }
  }

  /**
   * What the idle periods of a scenario cost (docs/architecture.md §4.5, "Idle at zero"): an idle
   * period runs from the first tick that finds the queue without work to the next enqueue (or the
   * scenario's end); in it, every statement a tick sends is counted ({@link #statementStarts}, by
   * the actor that sends it through the gated database), and so are the fallback ticks and the arms
   * that land, each of which may cost a survey and a clear.
   */
  record Idle(int periods, int tickStatements, int fallbackTicks, int armsLanded) {
    static final Idle NONE = new Idle(0, 0, 0, 0);

    Idle plus(Idle o) {
      return new Idle(
          periods + o.periods,
          tickStatements + o.tickStatements,
          fallbackTicks + o.fallbackTicks,
          armsLanded + o.armsLanded);
    }
  }

  /** The idle period under way: counts from its first idle tick on. */
  private static final class IdlePeriod {
    boolean begun;
    int tickStatements;
    int fallbackTicks;
    int armsLanded;
  }

  /** The minute schedule's period (template.yaml's {@code rate(1 minute)}). */
  static final Duration TICK_PERIOD = Duration.ofMinutes(1);

  /**
   * The fallback schedule's period, which nothing turns off (template.yaml's {@code rate(1 day)}).
   */
  static final Duration FALLBACK = Duration.ofDays(1);

  /** A violation found on some thread; ends the scenario at the end of the step. */
  private static final class Violation extends RuntimeException {
    Violation(String message) {
      super(message, null, false, false);
    }
  }

  private final Lane lane;
  private final Options options;
  private final Random random;
  private final Random second;
  private final Random third;

  /** The deploy's draws ({@link Fault#DEPLOYS}): when, how long, which refusal. */
  private final Random fourth;

  /** The stops' draws ({@link Fault#STOPS}): lost or late, and how late. */
  private final Random fifth;

  /** The arming's draws ({@link Fault#ARMING}), and the idle stretches' lengths. */
  private final Random sixth;

  /** The tick's schedule, when the scenario models it ({@link Options#schedule}). */
  private final SimSchedule schedule;

  /** When the fallback tick fires next. */
  private Instant nextFallback;

  private IdlePeriod idle;
  private Idle idleDone = Idle.NONE;

  /** The actor of the step under way, when it is one that was granted. */
  private Actor granted;

  /** The artifacts' draws ({@link Fault#ARTIFACTS}): which programs write files, and how many. */
  private final Random seventh;

  /** Who supersedes what: a stream of its own, so the other draws of a seed stay as they were. */
  private final Random supersedes;

  /**
   * Which priority a submission asks for, and which earlier job of its user it then reorders (PATCH
   * /jobs/{id}): a stream of its own, drawn only in scenarios with tenants.
   */
  private final Random priorities;

  private static final String[] PRIORITIES = {null, "low", "normal", "high"};

  private final Faults faults;
  private final QueueClock.Settable clock = new QueueClock.Settable(START);
  private final QueueConfig config;
  private final Scheduler scheduler;
  private final GatedDatabase db;
  private final GatedDatabase workerDb;
  private final InProcessPlatform inProcess;
  private final FaultyPlatform platform;
  private final BuildQueue queue;

  /** Every answer the simulated clients get is held to openapi.json. */
  private final CheckedApi api;

  private final Invariants invariants;
  private final List<String> users;
  private final int jobsToSubmit;
  private final int faultSteps;
  private final String parameters;
  private final Duration callerTimeout;
  private final SimPrograms programs;
  private final Path workDir;

  /**
   * Where the workers upload artifacts and the ticks' sweep removes them (docs/architecture.md
   * §4.10): a directory store in the scenario's folder, empty until a program job's worker uploads.
   */
  private final SimArtifactStore store;

  /**
   * Workers paused after their upload ({@link Fault#WORKER_PAUSED_AFTER_UPLOAD}), by task: until.
   */
  private final Map<String, Instant> paused =
      new TreeMap<>(Comparator.comparingLong(StopEvents::taskNumber));

  private final List<String> log = Collections.synchronizedList(new ArrayList<>());
  private final StopEvents events = new StopEvents();
  private final Map<Long, Boolean> lateWorkers = new HashMap<>();
  private final Map<String, Deadline> deadlines =
      new TreeMap<>(Comparator.comparingLong(StopEvents::taskNumber));
  private final Map<Long, Set<String>> inHandler = new HashMap<>();
  private final Map<String, Set<Long>> acknowledged = new TreeMap<>();
  private final Map<String, Boolean> dedicated = new HashMap<>();
  private final Map<Actor, Consumer<Actor>> expectations = new HashMap<>();
  private final Map<Actor, Instant> born = new HashMap<>();
  private final Set<Actor> expectNoChange = new HashSet<>();

  /**
   * Frozen tasks, and when a stop asked of the platform ends each (after SIGTERM's grace, SIGKILL).
   */
  private final Set<String> frozen =
      new TreeSet<>(Comparator.comparingLong(StopEvents::taskNumber));

  private final Map<String, Instant> stopsTakeEffect =
      new TreeMap<>(Comparator.comparingLong(StopEvents::taskNumber));
  private int frozenStopped;
  private volatile String violation;
  private volatile boolean outage;
  private volatile boolean tearingDown;
  private Snapshot current = Snapshot.EMPTY;
  private int step;
  private long operations;
  private long statements;
  private long writesInStep;
  private int outages;
  private int submitted;
  private final int deployAt;
  private final Duration deployLength;

  /** When the deploy window closes; null before it opens. */
  private Instant deployEnds;

  private record Deadline(Instant at, Runnable kill) {}

  private Simulation(Lane lane, Options options) {
    this.lane = lane;
    this.options = options;
    // Neighbouring seeds give java.util.Random nearly the same first draws; mix them first.
    SplittableRandom mixer = new SplittableRandom(options.seed());
    this.random = new Random(mixer.nextLong());
    this.second = new Random(mixer.nextLong());
    this.third = new Random(mixer.nextLong());
    this.fourth = new Random(mixer.nextLong());
    this.fifth = new Random(mixer.nextLong());
    this.sixth = new Random(mixer.nextLong());
    this.seventh = new Random(mixer.nextLong());
    this.faults =
        new Faults(random, second, third, fourth, fifth, sixth, seventh, options.disabled());
    // Most scenarios take turns in the shared lane (the default); every fourth keeps FIFO.
    this.config =
        configFrom(random)
            .withSharedOrder(
                !options.tenants() || Math.floorMod(options.seed(), 4) == 3
                    ? QueueConfig.SharedOrder.FIFO
                    : QueueConfig.SharedOrder.FAIR);
    this.supersedes = new Random(options.seed() * 31 + 17);
    this.priorities = new Random(options.seed() * 37 + 29);
    this.users = new ArrayList<>();
    int userCount = 1 + random.nextInt(3);
    for (int i = 1; i <= userCount; i++) {
      users.add("u" + i);
    }
    this.jobsToSubmit = 2 + random.nextInt(5);
    int drawnSteps = 15 + random.nextInt(45);
    this.faultSteps =
        options.faultSteps() == null ? drawnSteps : Math.min(options.faultSteps(), drawnSteps);
    // The deploy comes at a step of the fault phase and lasts less than the launch backoff's
    // budget,
    // the time a job's first maxLaunchFailures - 1 retries take at the least: then no job can meet
    // the limit through refusals of the deploy alone, whatever the scheduling.
    this.deployAt = fourth.nextInt(drawnSteps);
    this.deployLength =
        Duration.ofMillis(
            (long) (backoffBudget(config).toMillis() * (0.3 + 0.65 * fourth.nextDouble())));
    // A caller (a Lambda) lives at most its timeout, which must end inside the launch grace: only
    // then is a launch the tick retries one that no caller is still making.
    this.callerTimeout =
        Duration.ofMillis(
            (long) (config.launchGrace().toMillis() * (0.5 + 0.45 * random.nextDouble())));
    this.scheduler = new Scheduler(this::tasksStarted);
    this.db = new GatedDatabase(lane.faults(), scheduler, this);
    this.programs = new SimPrograms(this, scheduler, faults, third, seventh);
    // Made by the runner on the first program job; removed when the scenario ends.
    this.workDir = PROGRAM_DIRS.resolve("scenario-" + options.seed() + "-" + UUID.randomUUID());
    this.store = new SimArtifactStore(workDir.resolve("artifact-store"), scheduler);
    JobHandlers handlers =
        JobHandlers.builtIn().with(new SimHandler(this), programs.handler(workDir));
    // Workers run as the worker role (V005), through the same gate as every other caller.
    this.workerDb =
        new GatedDatabase(lane.faults(), lane.faults().workerAdapter(), scheduler, this);
    this.inProcess = new InProcessPlatform(workerDb, config, clock, handlers);
    inProcess.useArtifacts(store);
    inProcess.onPoint(this::workerAt);
    this.platform = new FaultyPlatform(inProcess, scheduler, this);
    this.schedule = options.schedule() ? new SimSchedule(this, scheduler, sixth) : null;
    // The fallback fires once a day, at a drawn time of it.
    this.nextFallback = START.plus(Duration.ofMinutes(10 + sixth.nextInt(24 * 60 - 10)));
    this.queue =
        new BuildQueue(
            db,
            platform,
            config,
            clock,
            BuildQueue.ExitListener.NONE,
            null,
            schedule == null ? TickSchedule.ALWAYS : schedule);
    this.api = new CheckedApi(new HttpApi(queue, new JobQueries(db, config, clock), handlers));
    this.invariants = new Invariants(config);
    invariants.watch(programs);
    inProcess.onStopped(this::evidence);
    inProcess.deadlineTimer(this::armDeadline);
    inProcess.nanoTime(this::nanoTime);
    this.parameters =
        "parameters: "
            + users.size()
            + " users, "
            + jobsToSubmit
            + " jobs, "
            + faultSteps
            + " fault steps, "
            + config.sharedSlots()
            + " shared slots ("
            + config.sharedOrder().label()
            + "), lifetime "
            + config.workerLifetime().toMillis()
            + " ms + slack "
            + config.leaseSlack().toMillis()
            + " ms (margin "
            + config.deadlineMargin().toMillis()
            + " ms), chain window "
            + config.chainWindow().toMillis()
            + " ms, liveness "
            + config.livenessInterval().toMillis()
            + " ms, launch grace "
            + config.launchGrace().toMillis()
            + " ms, caller timeout "
            + callerTimeout.toMillis()
            + " ms, max launch failures "
            + config.maxLaunchFailures()
            + ", program timeout "
            + programs.kind.timeout().toMillis()
            + " ms + grace "
            + programs.kind.cancelGracePeriod().toMillis()
            + " ms"
            + "\nfault rates: "
            + faults.rates().entrySet().stream()
                .filter(e -> e.getValue() > 0)
                .map(e -> e.getKey().label() + "=" + String.format("%.3f", e.getValue()))
                .collect(Collectors.joining(" "));
  }

  private int tasksStarted() {
    return inProcess.tasksStarted();
  }

  private static QueueConfig configFrom(Random r) {
    Duration lifetime = Duration.ofMillis(6_000 + r.nextInt(10_000));
    Duration slack = Duration.ofMillis(2_000 + r.nextInt(3_000));
    Duration margin = Duration.ofMillis(500 + r.nextInt(1_000));
    Duration[] windows = {Duration.ZERO, Duration.ofSeconds(2), Duration.ofSeconds(60)};
    return QueueConfig.builder()
        .sharedSlots(1 + r.nextInt(2))
        .workerLifetime(lifetime)
        .leaseSlack(slack)
        .deadlineMargin(margin)
        .chainWindow(windows[r.nextInt(windows.length)])
        .livenessInterval(Duration.ofMillis(1_000 + r.nextInt(2_000)))
        .launchGrace(Duration.ofMillis(2_000 + r.nextInt(4_000)))
        .maxLaunchFailures(2 + r.nextInt(3))
        .launchBackoff(Duration.ofMillis(500))
        // Past every scenario's end, idle stretches and fallback days included: no housekeeping.
        .retention(Duration.ofDays(30))
        .build();
  }

  /** Runs one scenario on a lane (emptied first). */
  static Outcome run(Lane lane, Options options) {
    lane.reset();
    Simulation sim = new Simulation(lane, options);
    Instant recoveryStart = null;
    try {
      sim.current = lane.snapshot();
      for (int i = 0; i < sim.faultSteps && sim.violation == null; i++) {
        if (i == sim.deployAt) {
          sim.deployBegins();
        }
        sim.faultMove();
      }
      sim.stopFaults();
      recoveryStart = sim.clock.now();
      sim.recover();
      if (sim.violation == null) {
        sim.violation = sim.invariants.atEnd(sim.current, lane.database(), sim.acknowledged);
      }
      if (sim.violation == null) {
        sim.violation = sim.invariants.artifactsAtEnd(sim.current, sim.store.contents());
      }
      sim.current.artifacts().keySet().forEach(job -> sim.programs.count("published artifacts"));
      if (sim.violation == null && sim.schedule != null) {
        sim.finalIdle();
      }
    } catch (Violation v) {
      sim.violation = v.getMessage();
    } catch (Scheduler.Stuck s) {
      sim.violation = "the schedule got stuck: " + s.getMessage();
    } catch (RuntimeException | Error e) {
      sim.violation = "the simulation itself failed: " + e + stack(e);
    } finally {
      sim.tearingDown = true;
      sim.scheduler.abort();
      deleteTree(sim.workDir);
    }
    Duration recovery =
        recoveryStart == null ? Duration.ZERO : Duration.between(recoveryStart, sim.clock.now());
    return new Outcome(
        options,
        sim.parameters,
        sim.violation,
        List.copyOf(sim.log),
        sim.operations,
        sim.statements,
        new EnumMap<>(
            sim.faults.injected().isEmpty() ? Map.of(Fault.NONE, 0) : sim.faults.injected()),
        sim.outages,
        sim.submitted,
        recovery,
        sim.frozenStopped,
        sim.programs.counts(),
        sim.idleDone);
  }

  /**
   * Where scenarios' programs get their job directories (one folder per scenario, removed after
   * it).
   */
  private static final Path PROGRAM_DIRS =
      Path.of(System.getProperty("java.io.tmpdir"), "buildqueue-faults");

  private static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (var files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not remove " + dir, e);
    }
  }

  private static String stack(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (StackTraceElement s : e.getStackTrace()) {
      b.append("\n    at ").append(s);
    }
    return b.toString();
  }

  // ---------------------------------------------------------------- the two phases

  private void faultMove() {
    if (ownerCancelsInGrace()) {
      return;
    }
    List<Actor> eligible = eligible();
    int clients = scheduler.live(false);
    List<Runnable> moves = new ArrayList<>();
    List<Double> weights = new ArrayList<>();
    if (!eligible.isEmpty()) {
      add(moves, weights, 12, () -> grant(eligible.get(random.nextInt(eligible.size()))));
    }
    if (clients < MAX_CLIENTS) {
      if (submitted < jobsToSubmit) {
        add(moves, weights, 3, this::enqueue);
      }
      if (ticking()) {
        add(moves, weights, 2, this::tick);
      }
      if (schedule != null && schedule.latePending()) {
        add(moves, weights, 2, this::landALateArm);
      }
      if (schedule != null && idleNow()) {
        add(moves, weights, 2, this::idleInFaultPhase);
      }
      if (events.first(clock.now()) != null) {
        add(moves, weights, 3, this::deliverWithFaults);
      }
      if (!acknowledged.isEmpty()) {
        add(moves, weights, 0.4, this::cancel);
      }
      if (faults.rate(Fault.PROGRAM_CANCELLED) > 0 && !programs.running(clock.now()).isEmpty()) {
        // Weighted up: a program runs for a few steps only, and most scenarios start few of them.
        add(moves, weights, 4, this::cancelARunningProgram);
      }
      if ((faults.rate(Fault.STOP_DELAYED) > 0 || faults.rate(Fault.STOP_LOST) > 0)
          && current.jobs().values().stream().anyMatch(Simulation::cancellableOnWorker)) {
        // Only when the stop faults are on, so a scenario without them moves as it did before.
        add(moves, weights, 1.5, this::cancelAJobOnAWorker);
        if (!aboutToEnd().isEmpty()) {
          // Weighted up: a worker waits at its job's end for a step or two only.
          add(moves, weights, 3, this::cancelAJobAboutToEnd);
        }
      }
      if (lateStopDeliverable()) {
        add(moves, weights, 2, this::deliverALateStop);
      }
      add(moves, weights, 0.3, this::toggleDedicated);
      add(moves, weights, 0.5, this::read);
      if (faults.rate(Fault.EVIDENCE_FORGED) > 0) {
        add(moves, weights, 0.5, this::forge);
      }
      if (faults.rate(Fault.WORKER_FORGED) > 0
          && current.workers().values().stream().anyMatch(w -> !w.exited())) {
        add(moves, weights, 0.5, this::forgeWorkerWrites);
      }
    }
    add(moves, weights, 2, this::advanceClock);
    if (faults.rate(Fault.WORKER_KILLED) > 0 && !scheduler.liveTasks().isEmpty()) {
      add(moves, weights, 1, this::killAWorker);
    }
    if (faults.rate(Fault.WORKER_FROZEN) > 0 && !freezable().isEmpty()) {
      // Weighted up: a worker's task lives for a few steps only, and only once its id is recorded.
      add(moves, weights, 3, this::freezeAWorker);
    }
    if (faults.rate(Fault.DATABASE_UNREACHABLE) > 0) {
      add(moves, weights, outage ? 1.5 : 0.3, this::toggleOutage);
    }
    double total = weights.stream().mapToDouble(Double::doubleValue).sum();
    double draw = random.nextDouble() * total;
    for (int i = 0; i < moves.size(); i++) {
      draw -= weights.get(i);
      if (draw < 0 || i == moves.size() - 1) {
        moves.get(i).run();
        return;
      }
    }
  }

  private static void add(
      List<Runnable> moves, List<Double> weights, double weight, Runnable move) {
    moves.add(move);
    weights.add(weight);
  }

  /**
   * How long a job's launch may be refused over and over without meeting the limit: its first
   * {@code maxLaunchFailures - 1} refusals put it back with backoffs of 1, 2, 4, … times {@code
   * launchBackoff}, so its next launch comes that long after its first refusal at the least.
   */
  static Duration backoffBudget(QueueConfig config) {
    return config.launchBackoff().multipliedBy((1L << (config.maxLaunchFailures() - 1)) - 1);
  }

  /**
   * The redeploy: from now until {@link #deployEnds}, every launch is refused ({@link
   * #deployRefusal}).
   */
  private void deployBegins() {
    if (faults.rate(Fault.DEPLOY_WINDOW) <= 0) {
      return;
    }
    faults.count(Fault.DEPLOY_WINDOW);
    deployEnds = clock.now().plus(deployLength);
    log(
        "⚡ a redeploy: a new task definition revision, the one in use deregistered, IAM denying RunTask;"
            + " launches are refused for "
            + deployLength.toMillis()
            + " ms (the backoff's budget is "
            + backoffBudget(config).toMillis()
            + " ms)");
  }

  /**
   * Marks a deploy window's refusals in launch reasons, and so in the exit reasons the invariants
   * read.
   */
  static final String DEPLOY_REFUSAL = "deploy window: ";

  /**
   * If the deploy window is open, how RunTask refuses a launch (as the aws adapter words the two,
   * briefly); else null. Draws only from the deploy's stream.
   */
  String deployRefusal() {
    if (deployEnds == null
        || !clock.now().isBefore(deployEnds)
        || !faults.enabled(Fault.LAUNCH_REFUSED_BY_DEPLOY)) {
      return null;
    }
    return DEPLOY_REFUSAL
        + (fourth.nextBoolean()
            ? "ECS refused RunTask (IAM denied the call, as it does while a deploy's new policy propagates): AccessDeniedException"
            : "ECS refused RunTask (the worker's task definition revision was deregistered by a deploy):"
                + " InvalidParameterException: TaskDefinition is inactive");
  }

  private void stopFaults() {
    faults.stop();
    if (deployEnds != null && clock.now().isBefore(deployEnds)) {
      deployEnds = clock.now();
      log("— the deploy window closes with the fault phase");
    }
    if (outage) {
      outage = false;
      lane.faults().outage(false, random);
      log("— the database is reachable again");
    }
    log("— faults stop; recovery begins");
  }

  /**
   * Without faults, everything in flight finishes: gated actors run, evidence arrives, ticks come
   * and time passes, until every job has ended and every worker has exited.
   */
  private void recover() {
    Instant bound = clock.now().plus(RECOVERY_BOUND);
    boolean tickedSinceClockMoved = false;
    for (int i = 0; violation == null; i++) {
      if (finished()) {
        return;
      }
      if (i > MAX_RECOVERY_STEPS || clock.now().isAfter(bound)) {
        throw new Violation(
            "§5.5 not everything finished within "
                + RECOVERY_BOUND
                + " ("
                + i
                + " steps) after faults stopped: "
                + unfinished());
      }
      if (ownerCancelsInGrace()) {
        continue;
      }
      List<Actor> eligible = eligible();
      if (!eligible.isEmpty()) {
        grant(eligible.get(random.nextInt(eligible.size())));
      } else if (events.first(clock.now()) != null) {
        StopEvents.Evidence e = events.first(clock.now());
        events.remove(e);
        deliver(e);
      } else if (!tickedSinceClockMoved) {
        if (ticking()) {
          tick();
        }
        tickedSinceClockMoved = true;
      } else if (schedule != null && !schedule.on() && nothingTimed()) {
        // Only the schedule's next firing can move the queue on: a late arm, or the fallback.
        scheduleOffWithWork();
        Instant next = nextFallback;
        Instant landing = schedule.nextLanding();
        if (landing != null && landing.isBefore(next)) {
          next = landing;
        }
        Duration jump = Duration.between(clock.now(), next);
        bound = bound.plus(jump);
        advance(jump);
        tickedSinceClockMoved = false;
      } else {
        advance(config.livenessInterval());
        tickedSinceClockMoved = false;
      }
    }
  }

  /** Whether the minute schedule fires: always, when the scenario does not model it. */
  private boolean ticking() {
    return schedule == null || schedule.on();
  }

  /**
   * Nothing that the passing of time brings about is pending: no evidence on its way, no stop under
   * way, no actor but frozen ones (asleep until a poll, starting late). Only a tick can move the
   * queue on.
   */
  private boolean nothingTimed() {
    if (!events.isEmpty() || lateStopPending() || !stopsTakeEffect.isEmpty()) {
      return false;
    }
    if (scheduler.live(false) > 0) {
      return false;
    }
    return frozen.containsAll(scheduler.liveTasks());
  }

  /**
   * docs/architecture.md §4.5: while the queue has work the minute schedule is on, unless an arm
   * went astray (lost or late), when the fallback is what arms it. Called when nothing but a tick
   * could move the queue on.
   */
  private void scheduleOffWithWork() {
    if (schedule.astray()) {
      return;
    }
    throw new Violation(
        "§4.5 idle at zero: the queue has work and the tick's schedule is off, though no arm was"
            + " lost or is late: nothing but the fallback ("
            + FALLBACK
            + ") would tick for it:"
            + unfinished());
  }

  /**
   * The queue has nothing to do and nobody is doing anything: no job unfinished, no worker live, no
   * actor, no evidence or stop on its way.
   */
  private boolean idleNow() {
    return scheduler.allDone()
        && events.isEmpty()
        && !lateStopPending()
        && current.jobs().values().stream().allMatch(Snapshot.J::finished)
        && current.workers().values().stream().allMatch(Snapshot.W::exited);
  }

  /** A stretch of the fault phase without submissions: a few minutes to a few hours. */
  private void idleInFaultPhase() {
    idleStretch(Duration.ofMinutes(2 + sixth.nextInt(180)));
  }

  /**
   * After everything finished: the queue stays idle for a drawn while (up to a day and a half, so
   * the fallback fires in some), and must settle with the schedule off.
   */
  private void finalIdle() {
    if (!schedule.on()
        && lane.database()
                .query(
                    "select 1 from build_job_event where published_at is null limit 1",
                    buildqueue.db.Params.none())
                .size()
            > 0) {
      scheduleOffWithWork(); // events wait to be published: work the tick must still do
    }
    idleStretch(Duration.ofMinutes(10 + sixth.nextInt(36 * 60)));
    if (schedule.on()) {
      throw new Violation(
          "§4.5 idle at zero: the queue has been idle for a stretch and the tick's schedule is still on");
    }
    endIdlePeriod();
  }

  /**
   * No submissions for {@code length}: the minute schedule fires every {@link #TICK_PERIOD} while
   * it is on, late arms land when due, the fallback fires when due; each tick runs to its end. Time
   * jumps over what nothing happens in.
   */
  private void idleStretch(Duration length) {
    operations++;
    Instant end = clock.now().plus(length);
    log("— idle for " + length.toMinutes() + " min: no submissions");
    if (idle == null) {
      idle = new IdlePeriod();
    }
    while (violation == null) {
      if (schedule.on()) {
        tick();
        runToQuiet();
      }
      if (!clock.now().isBefore(end)) {
        return;
      }
      Instant next = schedule.on() ? clock.now().plus(TICK_PERIOD) : end;
      if (nextFallback.isBefore(next)) {
        next = nextFallback;
      }
      Instant landing = schedule.nextLanding();
      if (landing != null && landing.isBefore(next)) {
        next = landing;
      }
      if (next.isAfter(end)) {
        next = end;
      }
      advance(Duration.between(clock.now(), next).plusMillis(next.equals(clock.now()) ? 1 : 0));
      runToQuiet();
    }
  }

  /** Runs every actor that can run until none can (in an idle stretch: the ticks it started). */
  private void runToQuiet() {
    for (List<Actor> e = eligible(); !e.isEmpty() && violation == null; e = eligible()) {
      grant(e.get(random.nextInt(e.size())));
    }
  }

  /** A late arm lands now: it may land after a disarm that raced it, or while work waits. */
  private void landALateArm() {
    operations++;
    Snapshot before = current;
    log("a late arm of the tick arrives");
    schedule.landOldest();
    afterStep("late arm", null, false, before);
  }

  /** An idle period ends (an enqueue, the scenario's end): its counts join the scenario's. */
  private void endIdlePeriod() {
    if (idle != null && idle.begun) {
      idleDone =
          idleDone.plus(new Idle(1, idle.tickStatements, idle.fallbackTicks, idle.armsLanded));
    }
    idle = null;
  }

  /** An arm landed (the schedule's callback): in an idle period, it may cost a tick. */
  void armLanded() {
    if (idle != null && idle.begun) {
      idle.armsLanded++;
    }
  }

  /** The simulated time of {@code at}, as the log writes it. */
  String since(Instant at) {
    return String.format("+%.3fs", Duration.between(START, at).toMillis() / 1000.0);
  }

  private boolean finished() {
    return scheduler.allDone()
        && events.isEmpty()
        && current.jobs().values().stream().allMatch(Snapshot.J::finished)
        && current.workers().values().stream().allMatch(Snapshot.W::exited)
        && uploadsToSweep().isEmpty();
  }

  /**
   * Unpublished uploads the sweep would remove now (their attempt can no longer publish, their
   * worker has exited): the recovery ticks until a tick's sweep has removed them. None while the
   * store is empty (the local runtime's tick then does not look either).
   */
  private List<ArtifactStore.AttemptKey> uploadsToSweep() {
    return store.isEmpty() ? List.of() : new ArtifactSweep(lane.database(), store).due();
  }

  private String unfinished() {
    StringBuilder b = new StringBuilder();
    current.jobs().values().stream()
        .filter(j -> !j.finished())
        .forEach(j -> b.append("\n    ").append(j));
    current.workers().values().stream()
        .filter(w -> !w.exited())
        .forEach(w -> b.append("\n    ").append(w));
    if (!frozen.isEmpty()) {
      b.append("\n    frozen tasks ")
          .append(frozen)
          .append(", stops under way ")
          .append(stopsTakeEffect.keySet());
    }
    programs.all().stream()
        .filter(p -> p.live(clock.now()) > 0)
        .forEach(p -> b.append("\n    ").append(p));
    uploadsToSweep()
        .forEach(k -> b.append("\n    unpublished uploads left to sweep: ").append(k.prefix()));
    b.append("\n    pending evidence ")
        .append(events.size())
        .append("; ")
        .append(scheduler.describe());
    return b.toString();
  }

  // ---------------------------------------------------------------- moves

  private List<Actor> eligible() {
    List<Actor> out = new ArrayList<>();
    for (Actor a : scheduler.gated()) {
      if (a.worker && frozen.contains(a.taskId)) {
        continue; // stopped dead until the platform kills it
      }
      if (a.wakeAt != null && clock.now().isBefore(a.wakeAt)) {
        continue; // a worker that polls its job's program sleeps until its next poll
      }
      if (a.worker && lateWorkers.containsKey(a.workerId)) {
        Snapshot.W w = current.workers().get(a.workerId);
        if (w != null && clock.now().isBefore(w.expiresAt())) {
          continue; // this task starts only after its lease has run out
        }
      }
      out.add(a);
    }
    return out;
  }

  private void grant(Actor a) {
    operations++;
    log(a.name + ": " + a.pending);
    Long workerId = a.worker ? a.workerId : null;
    boolean noChange = expectNoChange.contains(a);
    Consumer<Actor> expectation = expectations.get(a);
    if (expectation != null) {
      expectation.accept(a);
      noChange = expectNoChange.contains(a);
    }
    Snapshot before = current;
    granted = a;
    scheduler.grant(a);
    afterStep(a.name, workerId, noChange, before);
    granted = null;
    deliverHeldStops();
  }

  /**
   * A held stop ({@link #holdRacingStop}) arrives as soon as its job is off its worker: right after
   * the step that ended it, before the worker's next statement (it chains the lane's next job, or
   * lingers, or exits).
   */
  private void deliverHeldStops() {
    List<LateStop> released;
    synchronized (lateStops) {
      released = lateStops.stream().filter(l -> l.racesJob() != null && deliverable(l)).toList();
      lateStops.removeAll(released);
    }
    for (LateStop l : released) {
      if (violation != null) {
        return;
      }
      lateStopStep(
          l,
          "the held stop of task " + l.taskId() + " arrives: job " + l.racesJob() + " is off it");
    }
  }

  private void enqueue() {
    operations++;
    endIdlePeriod();
    String user = users.get(random.nextInt(users.size()));
    List<String> keys =
        acknowledged.keySet().stream().filter(k -> k.startsWith(user + "/")).toList();
    String key =
        !keys.isEmpty() && random.nextInt(4) == 0
            ? keys.get(random.nextInt(keys.size())).substring(user.length() + 1)
            : "k" + (++submitted);
    int steps = random.nextInt(4);
    StringBuilder payload = new StringBuilder("{\"steps\": " + steps);
    if (steps > 0 && random.nextInt(8) == 0) {
      payload.append(", \"failAt\": ").append(1 + random.nextInt(steps));
    }
    boolean followUp = random.nextInt(3) == 0;
    if (followUp) {
      payload.append(", \"followUp\": true");
    }
    boolean program = faults.roll(Fault.PROGRAM);
    if (!program && faults.roll(Fault.JOB_KILLS_WORKER)) {
      payload.append(", \"killsWorkerAt\": ").append(1 + second.nextInt(steps + 1));
    }
    payload.append('}');
    String kind = program ? SimPrograms.KIND : SimHandler.KIND;
    String jobPayload = program ? programs.payload(steps, followUp) : payload.toString();
    // User u2 saves one of two documents over and over: each save supersedes the builds of it.
    String supersede =
        options.tenants() && user.equals("u2") && supersedes.nextInt(3) > 0
            ? "doc" + supersedes.nextInt(2)
            : null;
    String priority = options.tenants() ? PRIORITIES[priorities.nextInt(PRIORITIES.length)] : null;
    // Now and then the user also changes the priority of one of their earlier jobs, queued or not.
    Long reordered =
        options.tenants() && !keys.isEmpty() && priorities.nextInt(3) == 0
            ? acknowledged.get(keys.get(priorities.nextInt(keys.size()))).iterator().next()
            : null;
    String reorderedTo = reordered == null ? null : PRIORITIES[1 + priorities.nextInt(3)];
    log(
        "enqueue by "
            + user
            + " key "
            + key
            + (priority == null ? "" : " priority " + priority)
            + (reordered == null ? "" : " then job " + reordered + " to " + reorderedTo)
            + (supersede == null ? "" : " superseding " + supersede)
            + (program ? " a program job " : " ")
            + jobPayload);
    String body =
        "{\"kind\": \""
            + kind
            + "\", \"payload\": "
            + jobPayload
            + ", \"idempotencyKey\": \""
            + key
            + "\""
            + (supersede == null ? "" : ", \"supersedeKey\": \"" + supersede + "\"")
            + (priority == null ? "" : ", \"priority\": \"" + priority + "\"")
            + "}";
    spawnClient(
        "enqueue",
        () -> {
          for (int attempt = 1; attempt <= 4; attempt++) {
            newInvocation(); // each retry is a new request, served by a new invocation
            try {
              ApiResponse r = api.handle(ApiRequest.json("POST", "/jobs", body, Caller.user(user)));
              if (r.status() == 201 || r.status() == 200 || r.status() == 409) {
                long id =
                    Long.parseLong(r.header("Location").orElseThrow().substring("/jobs/".length()));
                note(scheduler.current(), "POST /jobs → " + r.status() + " job " + id);
                acknowledge(user, key, id);
                if (reordered != null) {
                  reorder(user, reordered, reorderedTo);
                }
                return;
              }
              if (r.status() < 500) {
                violation(
                    "POST /jobs "
                        + body
                        + " by "
                        + user
                        + " answered "
                        + r.status()
                        + ": "
                        + r.bodyText());
                return;
              }
              // The API answered 5xx: the client sends the same request again.
              note(scheduler.current(), "POST /jobs → " + r.status() + "; attempt " + attempt);
            } catch (FaultyPlatform.CallerDied e) {
              // The invocation died: API Gateway answers 5xx and the client sends the request
              // again.
              note(
                  scheduler.current(),
                  "client saw no answer (" + brief(e) + "); attempt " + attempt);
            }
          }
        });
  }

  /**
   * PATCH /jobs/{id} by the job's owner: 200 while it is queued, 409 once it is not; a 5xx (a
   * fault) leaves it as it was, and the client does not retry.
   */
  private void reorder(String user, long jobId, String priority) {
    newInvocation();
    try {
      ApiResponse r =
          api.handle(
              ApiRequest.json(
                  "PATCH",
                  "/jobs/" + jobId,
                  "{\"priority\": \"" + priority + "\"}",
                  Caller.user(user)));
      note(scheduler.current(), "PATCH /jobs/" + jobId + " → " + r.status());
      if (r.status() != 200 && r.status() != 409 && r.status() < 500) {
        violation(
            "PATCH /jobs/"
                + jobId
                + " by "
                + user
                + " answered "
                + r.status()
                + ": "
                + r.bodyText());
      }
    } catch (FaultyPlatform.CallerDied e) {
      note(scheduler.current(), "client saw no answer to its PATCH (" + brief(e) + ")");
    }
  }

  private synchronized void acknowledge(String user, String key, long jobId) {
    Set<Long> ids = acknowledged.computeIfAbsent(user + "/" + key, k -> new HashSet<>());
    ids.add(jobId);
    if (ids.size() > 1) {
      violation("§5.8 enqueue of " + user + "/" + key + " returned different jobs " + ids);
    }
  }

  /**
   * The simulation explores interleavings, not budgets: its ticks are measured on a clock that
   * stands still, so a tick never runs out of time halfway and a seed replays the same whatever the
   * machine's load.
   */
  private static final TickBudget UNHURRIED =
      new TickBudget(
          Duration.ofDays(1),
          new MonotonicClock() {
            @Override
            public long nanoTime() {
              return 0;
            }

            @Override
            public void sleep(Duration d) {}
          });

  private void tick() {
    tick(TickSchedule.Cause.SCHEDULE);
  }

  /**
   * A tick, as the minute schedule or the fallback starts it. With the schedule modelled it then
   * publishes the job events, as {@code TickFunction} does when some may be pending: otherwise the
   * queue would never be without work (an unpublished event is work).
   */
  private void tick(TickSchedule.Cause cause) {
    operations++;
    boolean fallback = cause == TickSchedule.Cause.FALLBACK;
    if (fallback && idle != null && idle.begun) {
      idle.fallbackTicks++;
    }
    spawnClient(
        fallback ? "fallback-tick" : "tick",
        () -> {
          try {
            int landedBefore = schedule == null ? 0 : schedule.landed();
            BuildQueue.TickReport r = queue.tick(UNHURRIED, false, cause);
            note(scheduler.current(), "tick: " + r);
            if (r.found().artifactsToSweep() || r.housekeptJobs() > 0) {
              sweepArtifacts();
            }
            if (schedule != null && !r.found().work() && idle != null) {
              if (!idle.begun && schedule.landed() > landedBefore) {
                // Its clear was refused (a writer held a table) and it armed again: the next tick
                // may survey and clear once more.
                idle.armsLanded++;
              }
              idle.begun = true;
            }
            if (schedule != null && r.eventsMayBePending()) {
              publish();
            }
          } catch (DatabaseException | FaultyPlatform.CallerDied e) {
            note(scheduler.current(), "tick failed (" + brief(e) + "); the next one carries on");
          }
        });
  }

  /**
   * The artifact sweep, as {@code TickFunction} and the local runtime run it: in the tick whose
   * survey found uploads to sweep (or whose housekeeping deleted jobs), so never on an idle queue,
   * and before this tick's idle accounting (it is the tick's own work, not a tick after the queue
   * went idle). A failure is the tick's to log; a later tick's survey finds what is left.
   */
  private void sweepArtifacts() {
    try {
      int removed = new ArtifactSweep(db, store).sweep();
      note(scheduler.current(), "artifact sweep: removed " + removed + " attempt(s)");
      for (int i = 0; i < removed; i++) {
        programs.count("uploads swept");
      }
    } catch (DatabaseException e) {
      note(scheduler.current(), "artifact sweep failed (" + brief(e) + "); a later tick sweeps");
    }
  }

  /** The tick's publishing of the outbox, to a bus that takes every event. */
  private void publish() {
    OutboxTransitions outbox = new OutboxTransitions(db, clock);
    while (true) {
      List<Long> ids =
          outbox.claimPending(OutboxTransitions.MAX_CLAIM).stream()
              .map(OutboxTransitions.PendingEvent::id)
              .toList();
      if (!ids.isEmpty()) {
        outbox.settle(ids, List.of());
      }
      if (ids.size() < OutboxTransitions.MAX_CLAIM) {
        return;
      }
    }
  }

  private void deliverWithFaults() {
    List<StopEvents.Evidence> ready = events.ready(clock.now());
    int index = random.nextInt(ready.size());
    StopEvents.Evidence e = faults.roll(Fault.EVIDENCE_REORDERED) ? ready.get(index) : ready.get(0);
    if (e != ready.get(0)) {
      log("⚡ evidence reordered: " + e.describe() + " goes before " + ready.get(0).describe());
    }
    if (faults.roll(Fault.EVIDENCE_LOST)) {
      events.remove(e);
      operations++;
      log("⚡ evidence lost: " + e.describe());
      return;
    }
    if (faults.roll(Fault.EVIDENCE_DELAYED)) {
      Duration delay = Duration.ofMillis(500 + random.nextInt((int) config.lease().toMillis()));
      events.replace(e, e.later(clock.now().plus(delay)));
      operations++;
      log("⚡ evidence delayed by " + delay.toMillis() + " ms: " + e.describe());
      return;
    }
    if (faults.roll(Fault.EVIDENCE_DUPLICATED)) {
      log("⚡ evidence duplicated: " + e.describe());
    } else {
      events.remove(e);
    }
    deliver(e);
  }

  private void deliver(StopEvents.Evidence e) {
    operations++;
    log("deliver " + e.describe() + ": " + e.reason());
    Actor a =
        spawnClient(
            "stop-event",
            () -> {
              try {
                queue.taskStopped(e.taskId(), e.workerId(), e.token(), e.reason());
              } catch (DatabaseException | FaultyPlatform.CallerDied failure) {
                // The handler failed; the event is delivered again (Lambda and EventBridge retry).
                note(
                    scheduler.current(),
                    "stop handler failed (" + brief(failure) + "); the event will be retried");
                events.retry(e);
              }
            });
    // Evidence for a worker already exited (a duplicate, a late event) or a forged event must
    // change
    // nothing. Whether the worker had exited is judged when the exit statement is about to run. The
    // dispatch after it is the lane's business, and so is a launch failure that dispatch records.
    boolean[] dispatching = {false};
    expectations.put(
        a,
        actor -> {
          dispatching[0] |=
              actor.pending != null && actor.pending.startsWith("DispatchTransitions");
          boolean exitStatement =
              !dispatching[0]
                  && actor.pending != null
                  && actor.pending.startsWith("ExitTransitions");
          // The exit and the dispatch after it are one call (ExitTransitions.stopped): whatever
          // follows it (a launch failure the dispatch's launch records) is the lane's business.
          dispatching[0] |=
              actor.pending != null && actor.pending.startsWith("ExitTransitions.stopped");
          Snapshot.W w = e.workerId() == null ? null : current.workers().get(e.workerId());
          boolean alreadyExited = w != null && w.exited();
          if (exitStatement && (e.forged() || alreadyExited)) {
            expectNoChange.add(actor);
          } else {
            expectNoChange.remove(actor);
          }
        });
  }

  /** Stop evidence for tasks we never launched, or with the wrong token: must change nothing. */
  private void forge() {
    faults.count(Fault.EVIDENCE_FORGED);
    List<Snapshot.W> ws = List.copyOf(current.workers().values());
    Snapshot.W w = ws.isEmpty() ? null : ws.get(random.nextInt(ws.size()));
    int kind = random.nextInt(4);
    StopEvents.Evidence e =
        switch (w == null ? 0 : kind) {
          case 0 ->
              new StopEvents.Evidence(
                  0,
                  "inproc-foreign-" + random.nextInt(1000),
                  null,
                  null,
                  "forged",
                  clock.now(),
                  true);
          case 1 ->
              new StopEvents.Evidence(
                  0,
                  "inproc-foreign-" + random.nextInt(1000),
                  w.id(),
                  UUID.randomUUID(),
                  "forged",
                  clock.now(),
                  true);
          case 2 ->
              new StopEvents.Evidence(
                  0,
                  "inproc-foreign-" + random.nextInt(1000),
                  w.id(),
                  null,
                  "forged without a token",
                  clock.now(),
                  true);
          default ->
              new StopEvents.Evidence(
                  0,
                  w.taskId() == null ? "inproc-foreign-1" : w.taskId(),
                  w.id(),
                  UUID.randomUUID(),
                  "forged with a wrong token",
                  clock.now(),
                  true);
        };
    log("⚡ forged evidence");
    deliver(e);
  }

  private void cancel() {
    operations++;
    List<String> keys = List.copyOf(acknowledged.keySet());
    String key = keys.get(random.nextInt(keys.size()));
    long jobId = acknowledged.get(key).iterator().next();
    String owner = key.substring(0, key.indexOf('/'));
    int who = random.nextInt(7);
    String caller = who == 0 ? null : who == 1 ? "intruder" : owner;
    log("cancel job " + jobId + " by " + (caller == null ? "an admin" : caller));
    Caller as = caller == null ? Caller.admin("ops") : Caller.user(caller);
    Actor a =
        spawnClient(
            "cancel",
            () -> {
              ApiResponse r = api.handle(ApiRequest.of("POST", "/jobs/" + jobId + "/cancel", as));
              note(scheduler.current(), "POST /jobs/" + jobId + "/cancel → " + r.status());
              boolean expected =
                  r.status() >= 500
                      || ("intruder".equals(caller)
                          ? r.status() == 404
                          : r.status() == 200 || r.status() == 409);
              if (!expected) {
                violation(
                    "POST /jobs/"
                        + jobId
                        + "/cancel by "
                        + (caller == null ? "an admin" : caller)
                        + " answered "
                        + r.status()
                        + ": "
                        + r.bodyText());
              }
            });
    if ("intruder".equals(caller)) {
      expectNoChange.add(a);
    }
  }

  private static boolean cancellableOnWorker(Snapshot.J j) {
    return j.onWorker() && !j.cancelRequested();
  }

  /**
   * The owner cancels a job on a worker (its program's or not): the cancel's stop is what the stop
   * faults act on.
   */
  private void cancelAJobOnAWorker() {
    List<Snapshot.J> on =
        current.jobs().values().stream()
            .filter(Simulation::cancellableOnWorker)
            .sorted(Comparator.comparingLong(Snapshot.J::id))
            .toList();
    cancelOnItsWorker(on.get(fifth.nextInt(on.size())), false);
  }

  /**
   * The owner cancels a job whose worker is about to end it: its stop is held until the job is off
   * the worker ({@link #holdRacingStop}), and then races the job's end ({@link
   * Fault#STOP_RACES_JOB_END}) if the cancel committed first.
   */
  private void cancelAJobAboutToEnd() {
    List<Snapshot.J> ending = aboutToEnd();
    Snapshot.J job = ending.get(fifth.nextInt(ending.size()));
    synchronized (lateStops) {
      racingCancels.put(job.id(), job.workerId());
    }
    cancelOnItsWorker(job, true);
  }

  /** Cancellable jobs on a worker whose actor waits at the job's end. */
  private List<Snapshot.J> aboutToEnd() {
    Set<Long> ending = new HashSet<>();
    for (Actor a : scheduler.gated()) {
      if (a.worker
          && a.pending != null
          && (a.pending.startsWith("WorkerTransitions.end") || a.pending.equals("transaction"))) {
        ending.add(a.workerId);
      }
    }
    synchronized (lateStops) {
      ending.removeAll(racingCancels.values());
    }
    List<Snapshot.J> all =
        current.jobs().values().stream()
            .filter(j -> cancellableOnWorker(j) && ending.contains(j.workerId()))
            .sorted(Comparator.comparingLong(Snapshot.J::id))
            .toList();
    // Those whose worker may chain the lane's next job are the ones whose stop can find it on
    // another job: a worker with nothing to chain exits within the step that ends its job.
    List<Snapshot.J> chaining = all.stream().filter(this::laneHasQueued).toList();
    return chaining.isEmpty() ? all : chaining;
  }

  private boolean laneHasQueued(Snapshot.J job) {
    return current.jobs().values().stream()
        .anyMatch(q -> q.lane().equals(job.lane()) && q.status().equals("queued"));
  }

  private void cancelOnItsWorker(Snapshot.J job, boolean racing) {
    operations++;
    log(
        "cancel job "
            + job.id()
            + " on worker "
            + job.workerId()
            + (racing ? " as the worker is about to end it" : "")
            + " by "
            + job.userId());
    spawnClient(
        "cancel",
        () -> {
          ApiResponse r =
              api.handle(
                  ApiRequest.of(
                      "POST", "/jobs/" + job.id() + "/cancel", Caller.user(job.userId())));
          note(scheduler.current(), "POST /jobs/" + job.id() + "/cancel → " + r.status());
          if (r.status() < 500 && r.status() != 200 && r.status() != 409) {
            violation(
                "POST /jobs/"
                    + job.id()
                    + "/cancel by its owner "
                    + job.userId()
                    + " answered "
                    + r.status()
                    + ": "
                    + r.bodyText());
          }
        });
  }

  /**
   * The owner cancels a job whose program runs: the cancel stops its worker, and SIGTERM must reach
   * the program at the runner's first poll after the stop reached the worker.
   */
  private void cancelARunningProgram() {
    List<SimProgram> running = programs.running(clock.now());
    SimProgram p = running.get(third.nextInt(running.size()));
    if (faults.roll(Fault.PROGRAM_CANCELLED)) {
      ownerCancels(p, false);
    }
  }

  /**
   * A program sent SIGTERM by its timeout is in its grace, and its job's owner was drawn to cancel
   * it then ({@code ownerCancelsInGrace}): the cancel goes out now, and counts if it lands before
   * the SIGKILL. True if it went out.
   */
  private boolean ownerCancelsInGrace() {
    SimProgram p = programs.cancelInGraceDue(clock.now());
    if (p == null) {
      return false;
    }
    ownerCancels(p, true);
    return true;
  }

  private void ownerCancels(SimProgram p, boolean inGrace) {
    operations++;
    Snapshot.J job = current.jobs().get(p.jobId);
    String owner = job.userId();
    log(
        "cancel job "
            + p.jobId
            + " by "
            + owner
            + (inGrace
                ? " in its program's grace after the timeout's SIGTERM"
                : " while its program runs"));
    spawnClient(
        "cancel",
        () -> {
          ApiResponse r =
              api.handle(ApiRequest.of("POST", "/jobs/" + p.jobId + "/cancel", Caller.user(owner)));
          boolean landedInGrace = inGrace && r.status() == 200 && p.inTimeoutGrace(clock.now());
          if (landedInGrace) {
            faults.count(Fault.PROGRAM_CANCELLED_IN_GRACE);
          }
          note(
              scheduler.current(),
              "POST /jobs/"
                  + p.jobId
                  + "/cancel → "
                  + r.status()
                  + (landedInGrace ? " ⚡ during the program's grace" : ""));
          if (r.status() < 500 && r.status() != 200 && r.status() != 409) {
            violation(
                "POST /jobs/"
                    + p.jobId
                    + "/cancel by its owner "
                    + owner
                    + " answered "
                    + r.status()
                    + ": "
                    + r.bodyText());
          }
        });
  }

  /** A user reads a job, or their list: they see their own jobs and nobody else's. */
  private void read() {
    operations++;
    String user = users.get(random.nextInt(users.size()));
    List<String> keys = List.copyOf(acknowledged.keySet());
    boolean list = keys.isEmpty() || random.nextBoolean();
    String key = list ? null : keys.get(random.nextInt(keys.size()));
    String target = list ? "/jobs?limit=200" : "/jobs/" + acknowledged.get(key).iterator().next();
    boolean own = list || key.startsWith(user + "/");
    log("GET " + target + " by " + user);
    Actor a =
        spawnClient(
            "read",
            () -> {
              ApiResponse r = api.handle(ApiRequest.of("GET", target, Caller.user(user)));
              note(scheduler.current(), "GET " + target + " → " + r.status());
              if (r.status() >= 500) {
                return;
              }
              if (!own) {
                if (r.status() != 404) {
                  violation(
                      "isolation: "
                          + user
                          + " read another user's job: GET "
                          + target
                          + " → "
                          + r.status());
                }
                return;
              }
              if (r.status() != 200) {
                violation(
                    "GET "
                        + target
                        + " by "
                        + user
                        + " answered "
                        + r.status()
                        + ": "
                        + r.bodyText());
              } else if (list) {
                for (JsonNode job : json(r).path("jobs")) {
                  if (!user.equals(job.path("userId").asText())) {
                    violation(
                        "isolation: GET /jobs by " + user + " listed another user's job " + job);
                  }
                }
              }
            });
    expectNoChange.add(a);
  }

  private static JsonNode json(ApiResponse r) {
    try {
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void toggleDedicated() {
    operations++;
    String user = users.get(random.nextInt(users.size()));
    boolean to = !dedicated.getOrDefault(user, false);
    dedicated.put(user, to);
    log((to ? "give " : "take ") + user + " a dedicated worker");
    spawnClient(
        "set-dedicated",
        () -> {
          ApiResponse r =
              api.handle(
                  ApiRequest.json(
                      "PUT",
                      "/users/" + user,
                      "{\"dedicatedWorker\": " + to + "}",
                      Caller.admin("ops")));
          note(scheduler.current(), "PUT /users/" + user + " → " + r.status());
          if (r.status() != 200 && r.status() < 500) {
            violation("PUT /users/" + user + " answered " + r.status() + ": " + r.bodyText());
          }
        });
  }

  private void advanceClock() {
    // Mostly small steps, so callers live through several of them; now and then a jump past a
    // lease, so expiry paths run.
    Duration[] steps = {
      Duration.ofMillis(100),
      Duration.ofMillis(300),
      Duration.ofMillis(700),
      Duration.ofMillis(100),
      Duration.ofMillis(300),
      config.livenessInterval(),
      config.livenessInterval(),
      config.lease().dividedBy(2),
      config.lease().plus(config.livenessInterval())
    };
    advance(steps[random.nextInt(steps.length)]);
  }

  /** Moves time; workers whose hard deadline has come are killed, as their own timer would. */
  private void advance(Duration d) {
    operations++;
    Snapshot before = current;
    Instant from = clock.now();
    clock.advance(d);
    log("clock +" + d.toMillis() + " ms");
    List<Map.Entry<String, Deadline>> due;
    synchronized (deadlines) {
      // A frozen worker's deadline timer is frozen with it: it cannot save the lease. So is a
      // paused one's: it fires once the worker goes on, racing its next statement (the next move
      // of the clock, here).
      due =
          deadlines.entrySet().stream()
              .filter(
                  e ->
                      !e.getValue().at().isAfter(clock.now())
                          && !frozen.contains(e.getKey())
                          && !pausedAt(e.getKey(), from))
              .toList();
    }
    for (Map.Entry<String, Deadline> e : due) {
      log("deadline kills " + e.getKey());
      scheduler.expectEnd(e.getKey());
      e.getValue().kill().run();
    }
    List<String> stopped =
        stopsTakeEffect.entrySet().stream()
            .filter(e -> !e.getValue().isAfter(clock.now()))
            .map(Map.Entry::getKey)
            .toList();
    for (String task : stopped) {
      stopsTakeEffect.remove(task);
      if (frozen.remove(task)) {
        frozenStopped++;
        log("the stop of frozen task " + task + " takes effect: it is killed");
        programs.orphan(task, "frozen");
        scheduler.expectEnd(task);
        inProcess.kill(task, "stopped: stopped while frozen");
      }
    }
    deliverLateStops();
    if (schedule != null) {
      schedule.landDue(clock.now());
    }
    scheduler.awaitQuiet();
    afterStep("clock", null, false, before);
    if (schedule != null && !clock.now().isBefore(nextFallback)) {
      // EventBridge fires once for the period, however long nothing looked.
      while (!clock.now().isBefore(nextFallback)) {
        nextFallback = nextFallback.plus(FALLBACK);
      }
      log("the fallback schedule fires");
      tick(TickSchedule.Cause.FALLBACK);
    }
  }

  private boolean pausedAt(String task, Instant t) {
    synchronized (paused) {
      Instant until = paused.get(task);
      return until != null && until.isAfter(t);
    }
  }

  /**
   * A worker at a point of its life, on its own thread ({@link InProcessPlatform#onPoint}). Between
   * a job's uploads and its end ({@link WorkerLoop.Point#AFTER_JOB_BEFORE_END} after a put to the
   * store), the worker is killed ({@link Fault#WORKER_KILLED_AFTER_UPLOAD}) or paused until its
   * lease is over ({@link Fault#WORKER_PAUSED_AFTER_UPLOAD}) if its job's payload says so for this
   * attempt (drawn at its enqueue, as the program faults are: most uploads come after the fault
   * phase). Only a worker the queue can check (its task id recorded) pauses: one it cannot check is
   * trusted to have killed itself at its deadline (§5.3), which a paused process does not do.
   */
  private void workerAt(WorkerLoop.Point point, long workerId) {
    if (point != WorkerLoop.Point.AFTER_JOB_BEFORE_END) {
      return;
    }
    ArtifactStore.AttemptKey uploaded = store.uploadedNowEnding(workerId);
    if (uploaded == null) {
      return;
    }
    programs.count("uploaded artifacts");
    SimProgram p = programs.of(uploaded.jobId(), uploaded.attempt());
    if (p == null || p.workerId != workerId || p.afterUpload == null) {
      return;
    }
    Actor a = scheduler.current();
    if (p.afterUpload.equals("kill")) {
      faults.count(Fault.WORKER_KILLED_AFTER_UPLOAD);
      note(a, "⚡ killed after uploading " + uploaded.prefix() + ", before its end");
      programs.orphan(a.taskId, "killed after its upload");
      inProcess.kill(a.taskId, "killed after its upload, before its end");
      throw new IllegalStateException("the platform did not kill " + a.taskId);
    }
    Snapshot.W w = current.workers().get(workerId);
    if (w != null
        && !w.exited()
        && a.taskId.equals(w.taskId())
        && clock.now().isBefore(w.expiresAt())) {
      faults.count(Fault.WORKER_PAUSED_AFTER_UPLOAD);
      Instant until = w.expiresAt();
      synchronized (paused) {
        paused.put(a.taskId, until);
      }
      note(
          a,
          "⚡ paused after uploading "
              + uploaded.prefix()
              + ", before its end, until its lease is over at +"
              + SimPrograms.at(until));
      scheduler.sleep("paused after its upload", until);
    }
  }

  private void killAWorker() {
    List<String> live = scheduler.liveTasks();
    String task = live.get(random.nextInt(live.size()));
    if (!faults.roll(Fault.WORKER_KILLED)) {
      return;
    }
    operations++;
    Snapshot before = current;
    log("⚡ task " + task + " killed from outside");
    platform.kill(task, "killed by the simulation");
    scheduler.awaitQuiet();
    afterStep("kill", null, false, before);
  }

  /**
   * Live worker tasks that may freeze: those the queue can check (their task id is recorded). One
   * it cannot check is outside what the design promises: the lease frees its slot (§4.4, "if still
   * unknown, the lease decides"), trusting the worker's own deadline (§5.4), which a frozen process
   * does not keep, and nothing ever stops its task (let such a task freeze before its start and it
   * is still running when the recovery phase gives up).
   */
  private List<String> freezable() {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, Long> e : scheduler.liveTaskWorkers().entrySet()) {
      Snapshot.W w = current.workers().get(e.getValue());
      if (!frozen.contains(e.getKey())
          && w != null
          && !w.exited()
          && e.getKey().equals(w.taskId())) {
        out.add(e.getKey());
      }
    }
    out.sort(Comparator.comparingLong(StopEvents::taskNumber));
    return out;
  }

  /** A worker stops dead where it is, as under SIGSTOP: the platform still reports it running. */
  private void freezeAWorker() {
    List<String> candidates = freezable();
    String task = candidates.get(second.nextInt(candidates.size()));
    if (!faults.roll(Fault.WORKER_FROZEN)) {
      return;
    }
    operations++;
    frozen.add(task);
    log(
        "⚡ task "
            + task
            + " frozen: alive to the platform, silent, its deadline timer stopped with it");
  }

  /** Whether a task is frozen (and not yet killed). */
  boolean frozen(String taskId) {
    return frozen.contains(taskId);
  }

  /**
   * The platform was asked to stop a frozen task: like ECS's SIGTERM, which a stopped process
   * cannot handle, then SIGKILL after the stop timeout, it ends a while later (within the lease
   * slack, as ECS's longest stop timeout, 2 minutes, is within the 5 minutes of slack); its stop
   * evidence comes only then. A repeated request changes nothing.
   */
  void stopFrozen(Actor caller, String taskId, String reason) {
    if (stopsTakeEffect.containsKey(taskId)) {
      note(caller, "stop task " + taskId + " (frozen, already stopping): " + reason);
      return;
    }
    Duration after = Duration.ofMillis(second.nextInt((int) config.leaseSlack().toMillis()));
    stopsTakeEffect.put(taskId, clock.now().plus(after));
    note(
        caller,
        "stop task " + taskId + " (frozen; it ends in " + after.toMillis() + " ms): " + reason);
  }

  /**
   * A stop ({@link Fault#STOP_DELAYED}) reaches the worker a drawn while from now, up to half a
   * lease: long enough for the job it was for to end first and the worker to chain the next.
   */
  void delayStop(Actor caller, String taskId, String reason) {
    Duration after = Duration.ofMillis(100 + fifth.nextInt((int) config.lease().toMillis() / 2));
    synchronized (lateStops) {
      lateStops.add(new LateStop(clock.now().plus(after), taskId, reason, null, null));
    }
    note(caller, "⚡ stop of task " + taskId + " delayed by " + after.toMillis() + " ms: " + reason);
  }

  /**
   * The stop of a cancel drawn to race its job's end ({@link #cancelAJobAboutToEnd}) is held until
   * the job is off its worker, then arrives as a late stop (counted as {@link Fault#STOP_DELAYED}).
   * Left to chance, a late stop lands after its job's end in a few scenarios per thousand, too few
   * for {@link Fault#STOP_RACES_JOB_END} to turn up in every run. True if this stop is one.
   */
  boolean holdRacingStop(Actor caller, String taskId, String reason) {
    Matcher cancel = CANCEL_STOP.matcher(reason);
    if (!cancel.matches()) {
      return false;
    }
    long jobId = Long.parseLong(cancel.group(1));
    synchronized (lateStops) {
      Long workerId = racingCancels.remove(jobId);
      if (workerId == null || !faults.enabled(Fault.STOP_DELAYED)) {
        return false;
      }
      lateStops.add(new LateStop(clock.now(), taskId, reason, jobId, workerId));
    }
    faults.count(Fault.STOP_DELAYED);
    note(caller, "⚡ stop of task " + taskId + " held until job " + jobId + " is off its worker");
    return true;
  }

  /** The reason {@code BuildQueue} gives the stop of a cancel. */
  private static final Pattern CANCEL_STOP = Pattern.compile("^job (\\d+) cancelled.*");

  /**
   * A stop on its way. A held one ({@link #holdRacingStop}) names its job and worker; it is let go
   * after a lease at the latest (the worker may be frozen or dead, and the job wait for a tick), so
   * it stays timed.
   */
  private record LateStop(Instant at, String taskId, String reason, Long racesJob, Long workerId) {}

  /** Stops on their way, in the order they were asked for. */
  private final List<LateStop> lateStops = new ArrayList<>();

  /** Cancels drawn to race their job's end, by job, with the worker they were for. */
  private final Map<Long, Long> racingCancels = new HashMap<>();

  /** Some stop is on its way, deliverable or held. */
  private boolean lateStopPending() {
    synchronized (lateStops) {
      return !lateStops.isEmpty();
    }
  }

  /** Some stop on its way may arrive now. */
  private boolean lateStopDeliverable() {
    synchronized (lateStops) {
      return lateStops.stream().anyMatch(this::deliverable);
    }
  }

  private boolean deliverable(LateStop l) {
    if (l.racesJob() == null || !clock.now().isBefore(l.at().plus(config.lease()))) {
      return true;
    }
    Snapshot.J job = current.jobs().get(l.racesJob());
    return job == null || !job.onWorker() || !l.workerId().equals(job.workerId());
  }

  /**
   * The oldest stop on its way arrives now, however late it was drawn to be: late by a few steps
   * rather than by time, so that it often finds its worker between the job's end and its exit, or
   * on the job it chained.
   */
  private void deliverALateStop() {
    LateStop l;
    synchronized (lateStops) {
      l = lateStops.stream().filter(this::deliverable).findFirst().orElseThrow();
      lateStops.remove(l);
    }
    lateStopStep(l, "a late stop of task " + l.taskId() + " arrives");
  }

  /** A stop on its way arrives as a step of its own, checked like every step. */
  private void lateStopStep(LateStop l, String what) {
    operations++;
    Snapshot before = current;
    log(what);
    arrives(l);
    scheduler.awaitQuiet();
    afterStep("late stop", null, false, before);
  }

  /** A frozen worker's stop takes effect only later ({@link #stopFrozen}). */
  private void arrives(LateStop l) {
    if (frozen.contains(l.taskId())) {
      stopFrozen(null, l.taskId(), l.reason());
    } else {
      stopReaches(null, l.taskId(), l.reason());
    }
  }

  private void deliverLateStops() {
    List<LateStop> due;
    synchronized (lateStops) {
      due = lateStops.stream().filter(l -> !l.at().isAfter(clock.now()) && deliverable(l)).toList();
      lateStops.removeAll(due);
    }
    for (LateStop l : due) {
      arrives(l);
    }
  }

  /**
   * A stop reaches the worker's task: SIGTERM, which the worker turns into its graceful stop (its
   * program gets SIGTERM at the runner's next poll: {@link Invariants#stopReached}). A task already
   * gone is left as it is ({@link Fault#STOP_TO_GONE_WORKER}). A cancel's stop that finds its
   * worker on no cancelled job came after the job's end ({@link Fault#STOP_RACES_JOB_END}): it
   * interrupts whatever the worker does now.
   */
  void stopReaches(Actor caller, String taskId, String reason) {
    if (!(inProcess.check(List.of(taskId)).get(taskId)
        instanceof buildqueue.platform.TaskState.Running)) {
      faults.count(Fault.STOP_TO_GONE_WORKER);
      note(caller, "⚡ stop reaches task " + taskId + ", already gone: nothing happens");
      return;
    }
    boolean forCancel = reason.startsWith("job ");
    Snapshot.W w =
        current.workers().values().stream()
            .filter(x -> taskId.equals(x.taskId()))
            .findFirst()
            .orElse(null);
    if (caller == null && forCancel && w != null && !onCancelledJob(w.id())) {
      faults.count(Fault.STOP_RACES_JOB_END);
      note(
          caller,
          "⚡ stop reaches task "
              + taskId
              + " after the job it was for ended: it stops whatever the worker does now");
    }
    note(caller, "stop task " + taskId + " (SIGTERM): " + reason);
    invariants.stopReached(taskId, clock.now());
    inProcess.stop(taskId, reason);
  }

  private boolean onCancelledJob(long workerId) {
    return current.jobs().values().stream()
        .anyMatch(
            j -> j.onWorker() && Objects.equals(j.workerId(), workerId) && j.cancelRequested());
  }

  /**
   * A process that knows a live worker's id but not its token (a stale task after ids were reused,
   * a misconfigured one, a job that learned its worker's id) makes the worker's writes: a progress
   * report for the worker's job, then one of end, a follow-up, start, take-next or drain. §5.2:
   * only the worker, with its token, can change its job; each of these must change nothing.
   */
  private void forgeWorkerWrites() {
    faults.count(Fault.WORKER_FORGED);
    operations++;
    List<Snapshot.J> onWorkers =
        current.jobs().values().stream()
            .filter(Snapshot.J::onWorker)
            .sorted(
                Comparator.comparing((Snapshot.J j) -> !j.status().equals("running"))
                    .thenComparingLong(Snapshot.J::id))
            .toList();
    List<Snapshot.W> live = current.workers().values().stream().filter(w -> !w.exited()).toList();
    long workerId;
    long jobId;
    int progress;
    if (!onWorkers.isEmpty() && second.nextInt(4) != 0) {
      // Mostly a running job: the one a forged write could do harm to.
      Snapshot.J j = onWorkers.get(second.nextInt(Math.min(2, onWorkers.size())));
      workerId = j.workerId();
      jobId = j.id();
      progress = j.progress() + 1;
    } else {
      Snapshot.W w = live.get(second.nextInt(live.size()));
      workerId = w.id();
      jobId = onWorkers.isEmpty() ? 1 : onWorkers.get(0).id();
      progress = 1;
    }
    int then = second.nextInt(5);
    UUID wrongToken = UUID.randomUUID();
    WorkerTransitions as = new WorkerTransitions(workerDb, config, clock);
    log("⚡ forged writes as worker " + workerId + " (wrong token) for job " + jobId);
    Actor a =
        spawnClient(
            "forged-worker",
            () -> {
              try {
                accepted(
                    "progress " + progress,
                    as.progress(workerId, wrongToken, jobId, progress)
                        != WorkerTransitions.ProgressAck.FENCED_OFF);
                switch (then) {
                  case 0 ->
                      accepted(
                          "end",
                          !(as.end(workerId, wrongToken, jobId, JobStatus.SUCCEEDED, null)
                              instanceof WorkerTransitions.Ended.FencedOff));
                  case 1 ->
                      accepted(
                          "a follow-up",
                          !(as.transactionally(
                                  tx ->
                                      as.addFollowUps(
                                          tx,
                                          workerId,
                                          wrongToken,
                                          jobId,
                                          new Json(
                                              "[{\"kind\": \""
                                                  + SimHandler.KIND
                                                  + "\", \"payload\": {}}]")))
                              instanceof WorkerTransitions.FollowUps.FencedOff));
                  case 2 -> accepted("start", as.start(workerId, wrongToken).isPresent());
                  case 3 ->
                      accepted(
                          "take-next",
                          !(as.takeNext(workerId, wrongToken)
                              instanceof WorkerTransitions.Ended.FencedOff));
                  default -> accepted("drain", as.drain(workerId, wrongToken));
                }
              } catch (DatabaseException e) {
                note(scheduler.current(), "forged write failed (" + brief(e) + ")");
              }
            });
    expectNoChange.add(a);
  }

  private void accepted(String write, boolean accepted) {
    note(scheduler.current(), "forged " + write + (accepted ? " ACCEPTED" : " refused"));
    if (accepted) {
      violation("§5.2 a write with a wrong token was accepted: " + write);
    }
  }

  /**
   * A job that kills its worker (SimHandler's {@code killsWorkerAt}), on the worker's own thread.
   */
  void jobKillsItsWorker(long jobId) {
    Actor a = scheduler.current();
    note(a, "⚡ job " + jobId + " kills its worker");
    inProcess.kill(a.taskId); // on the task's own thread this unwinds it at once
    throw new IllegalStateException("the platform did not kill " + a.taskId);
  }

  private void toggleOutage() {
    operations++;
    outage = !outage;
    Fault counted = lane.faults().outage(outage, random);
    if (counted != Fault.NONE) {
      faults.count(counted);
    }
    if (outage) {
      outages++;
    }
    log(outage ? "⚡ the database becomes unreachable" : "— the database is reachable again");
  }

  private Actor spawnClient(String kind, Runnable body) {
    Snapshot before = current;
    Actor a =
        scheduler.spawn(
            kind,
            () -> {
              try {
                body.run();
              } catch (FaultyPlatform.CallerDied e) {
                note(scheduler.current(), "died: " + e.getMessage());
              } catch (Scheduler.Aborted e) {
                throw e;
              } catch (RuntimeException e) {
                // Each actor catches what its caller would survive (a database failure, a dead
                // caller);
                // anything else is a bug in the queue, not a fault of the scenario, and would
                // otherwise
                // pass for an injected one (a crashed stop handler looks like lost evidence).
                violation(kind + " threw " + e);
              }
            });
    synchronized (born) {
      born.putIfAbsent(a, clock.now());
    }
    afterStep(a.name, null, false, before);
    return a;
  }

  // ---------------------------------------------------------------- callbacks from actor threads

  Faults faults() {
    return faults;
  }

  Instant now() {
    return clock.now();
  }

  /**
   * The simulated clock as a monotonic clock (nanoseconds since the start), for workers and
   * runners.
   */
  long nanoTime() {
    return Duration.between(START, clock.now()).toNanos();
  }

  /**
   * A worker's task is killed from outside (SIGKILL, the platform's stop): its own code no longer
   * runs.
   */
  void killedFromOutside(String taskId, String how) {
    programs.orphan(taskId, how);
  }

  Random random() {
    return random;
  }

  boolean outage() {
    return outage;
  }

  void statementStarts(Actor actor, String label) {
    if (!readOnly(label)) {
      writesInStep++;
    }
    statements++;
    if (idle != null && idle.begun && actor != null && isTick(actor)) {
      idle.tickStatements++;
    }
  }

  private static boolean isTick(Actor a) {
    return a.name.startsWith("tick#") || a.name.startsWith("fallback-tick#");
  }

  private void newInvocation() {
    Actor a = scheduler.current();
    synchronized (born) {
      born.put(a, clock.now());
    }
  }

  /** A caller past its timeout is dead (Lambda ends it): it makes no further call. */
  void callerAlive(Actor actor) {
    Instant since;
    synchronized (born) {
      since = actor.worker ? null : born.get(actor);
    }
    if (since != null
        && faults.enabled(Fault.CALLER_TIMED_OUT)
        && !clock.now().isBefore(since.plus(callerTimeout))) {
      faults.count(Fault.CALLER_TIMED_OUT);
      note(actor, "⚡ timed out after " + Duration.between(since, clock.now()).toMillis() + " ms");
      throw new FaultyPlatform.CallerDied(actor.name + " timed out");
    }
  }

  /**
   * Statements that only read: a step that ran nothing else cannot have changed a row, so its
   * snapshot would equal the last one and is skipped. (Workers change only in their own steps or
   * when killed by a write's step or a clock move, which are all checked.)
   */
  private static boolean readOnly(String label) {
    return label.startsWith("JobQueries.")
        || label.equals("TickTransitions.expiredLeases")
        || label.equals("TickTransitions.lanesToDispatch");
  }

  void note(Actor actor, String message) {
    if (tearingDown) {
      return;
    }
    log.add("        " + (actor == null ? "" : actor.name + ": ") + message);
  }

  void startsLate(long workerId) {
    lateWorkers.put(workerId, true);
  }

  /** Stop evidence from a task that ended (on the task's thread). */
  private void evidence(String taskId, long workerId, UUID token, String reason) {
    programs.taskEnded(taskId);
    if (!tearingDown) {
      events.arrived(taskId, workerId, token, reason);
    }
    scheduler.ended();
  }

  private Runnable armDeadline(Duration after, Runnable kill) {
    Actor a = scheduler.current();
    String task = a == null ? "unknown" : a.taskId;
    synchronized (deadlines) {
      deadlines.put(task, new Deadline(clock.now().plus(after), kill));
    }
    return () -> {
      synchronized (deadlines) {
        deadlines.remove(task);
      }
    };
  }

  void handlerEnters(long jobId) {
    Actor a = scheduler.current();
    synchronized (inHandler) {
      Set<String> on = inHandler.computeIfAbsent(jobId, k -> new HashSet<>());
      if (!on.isEmpty()) {
        violation("§5.2 job " + jobId + " runs on two workers at once: " + on + " and " + a.taskId);
      }
      on.add(a.taskId);
    }
  }

  void handlerLeaves(long jobId) {
    Actor a = scheduler.current();
    synchronized (inHandler) {
      inHandler.getOrDefault(jobId, new HashSet<>()).remove(a.taskId);
    }
  }

  private void violation(String message) {
    if (violation == null) {
      violation = message;
    }
  }

  // ---------------------------------------------------------------- after each step

  private void afterStep(String actor, Long workerId, boolean expectNoChange, Snapshot before) {
    step++;
    events.endOfStep(clock.now());
    List<ArtifactStore.AttemptKey> removed = store.removedInStep();
    if (writesInStep > 0 || actor.equals("clock") || actor.equals("kill")) {
      writesInStep = 0;
      current = lane.snapshot();
      Map<String, Long> live = scheduler.liveTaskWorkers();
      frozen.retainAll(live.keySet());
      stopsTakeEffect.keySet().retainAll(live.keySet());
      synchronized (paused) {
        paused.keySet().retainAll(live.keySet());
      }
      fencedOffUploads(removed, before);
      String broken =
          invariants.afterStep(
              before,
              current,
              new Invariants.Step(
                  actor, workerId, expectNoChange, clock.now(), live, Set.copyOf(frozen)));
      if (broken != null) {
        violation(broken);
      }
      if (schedule != null && violation == null) {
        if (!before.armed() && current.armed() && !armInFlight(granted)) {
          schedule.lostBeforeTheCall();
        }
        broken = invariants.waits(current, clock.now(), FALLBACK.plus(TICK_PERIOD));
        if (broken != null) {
          violation(broken);
        }
      }
    }
    if (violation == null && idle != null && idle.begun) {
      int allowed = 2 * (idle.armsLanded + idle.fallbackTicks);
      if (idle.tickStatements > allowed) {
        violation(
            "§4.5 idle at zero: after a tick found the queue without work, the tick sent "
                + idle.tickStatements
                + " statements to the database before the next enqueue, with "
                + idle.armsLanded
                + " arms landed and "
                + idle.fallbackTicks
                + " fallback ticks since (each allows a survey and a clear: "
                + allowed
                + ")");
      }
    }
    if (violation == null && programs.any()) {
      String broken =
          invariants.programs(before, current, clock.now(), scheduler.liveTaskWorkers());
      if (broken != null) {
        violation(broken);
      }
    }
    if (violation != null) {
      throw new Violation(violation);
    }
  }

  /** Whether {@code a} flipped the armed flag and is about to arm: its next call is the arm. */
  private boolean armInFlight(Actor a) {
    return a != null && scheduler.gated().contains(a) && "TickSchedule.arm".equals(a.pending);
  }

  /**
   * Counts {@link Fault#UPLOADED_END_FENCED_OFF}: a worker removed the uploads of an attempt in a
   * step that left its job as it was, running on that worker: its end was refused.
   */
  private void fencedOffUploads(List<ArtifactStore.AttemptKey> removed, Snapshot before) {
    for (ArtifactStore.AttemptKey k : removed) {
      Snapshot.J was = before.jobs().get(k.jobId());
      if (was != null
          && was.status().equals("running")
          && Objects.equals(was.workerId(), k.workerId())
          && was.attempts() == k.attempt()
          && was.equals(current.jobs().get(k.jobId()))) {
        faults.count(Fault.UPLOADED_END_FENCED_OFF);
        log(
            "⚡ the end of job "
                + k.jobId()
                + " by worker "
                + k.workerId()
                + " was refused (fenced off): it published nothing and removed "
                + k.prefix());
      }
    }
  }

  private void log(String line) {
    log.add(
        String.format(
            "%4d +%7.3fs %s",
            step, Duration.between(START, clock.now()).toMillis() / 1000.0, line));
  }

  private static String brief(Throwable e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    int cut = m.indexOf(" (in statement");
    m = cut > 0 ? m.substring(0, cut) : m;
    return m.length() > 120 ? m.substring(0, 120) + "…" : m;
  }
}
