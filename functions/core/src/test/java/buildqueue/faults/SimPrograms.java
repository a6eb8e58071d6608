package buildqueue.faults;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.worker.CommandJobHandler;
import buildqueue.worker.JobHandler;
import buildqueue.worker.exec.JobEnvironment;
import buildqueue.worker.exec.JobProcess;
import buildqueue.worker.exec.ProcessLauncher;
import buildqueue.worker.exec.ProcessRunner;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

/**
 * The simulation's job kind {@code prog}: a command kind whose jobs the real {@link ProcessRunner}
 * runs, inside the real worker loop, as {@link SimProgram}s instead of processes. It is the
 * runner's {@link ProcessLauncher} and its {@link MonotonicClock} (the simulated clock; a sleep is
 * a scheduling point that lasts until the clock has moved past it), and it keeps every program a
 * scenario started for the invariants. The kind's timeout and grace period are drawn per scenario;
 * its retry exit code is {@value #RETRY_CODE}.
 */
final class SimPrograms {
  static final String KIND = "prog";
  static final int RETRY_CODE = 75;
  static final String FAILED_ON_PURPOSE = "sim program failed on purpose at step ";

  /** How often the runner polls a program, on the simulated clock. */
  static final Duration POLL = Duration.ofMillis(200);

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Simulation sim;
  private final Scheduler scheduler;
  private final Faults faults;
  private final Random random;
  private final Random artifacts;
  final CommandKind kind;
  private final List<SimProgram> all = new ArrayList<>();
  private final Map<Thread, SimProgram> onThread = new HashMap<>();
  private final Map<String, Integer> counts = new TreeMap<>();
  private final Map<String, String> orphanedTasks = new HashMap<>();
  private long nextPid = 1000;

  /**
   * {@code random}: the stream of the program faults ({@link Fault#PROGRAMS}); {@code artifacts}:
   * that of the artifacts ({@link Fault#ARTIFACTS}).
   */
  SimPrograms(Simulation sim, Scheduler scheduler, Faults faults, Random random, Random artifacts) {
    this.sim = sim;
    this.scheduler = scheduler;
    this.faults = faults;
    this.random = random;
    this.artifacts = artifacts;
    // A cancel reaches a program by its worker's stop (SIGTERM); when the stop is lost, the
    // program's timeout or its worker's deadline comes long before the minute's heartbeat.
    Duration timeout = Duration.ofMillis(1_500 + random.nextInt(8_000));
    Duration grace = Duration.ofMillis(200 + random.nextInt(1_800));
    this.kind =
        new CommandKind(
            KIND,
            List.of("sim-program", "--payload-from-env"),
            timeout,
            PayloadSchema.ANY_OBJECT,
            Set.of(RETRY_CODE),
            Map.of(),
            grace);
  }

  /** The kind's handler: the production runner, with simulated programs and the simulated clock. */
  JobHandler handler(Path workDir) {
    MonotonicClock clock =
        new MonotonicClock() {
          @Override
          public long nanoTime() {
            return sim.nanoTime();
          }

          @Override
          public void sleep(Duration duration) {
            SimProgram p;
            synchronized (SimPrograms.this) {
              p = onThread.get(Thread.currentThread());
            }
            if (p != null) {
              p.sleepWhileLeftovers(duration);
            }
          }
        };
    ProcessRunner.Limits limits = ProcessRunner.Limits.defaults();
    limits =
        new ProcessRunner.Limits(
            POLL,
            limits.maxFollowUps(),
            limits.maxControlLineBytes(),
            limits.errorLines(),
            limits.errorChars(),
            limits.outputDrain(),
            limits.killPatience());
    return new CommandJobHandler(
        kind, new ProcessRunner(workDir, Map.of(), this::start, clock, limits));
  }

  /**
   * A program job's payload: how its program behaves, drawn from the program faults' stream. Every
   * draw is made whatever the outcome, so leaving one fault out (shrinking) moves no other.
   */
  String payload(int steps, boolean followUp) {
    Fault ends =
        faults.pick(
            Fault.PROGRAM_CRASHES,
            Fault.PROGRAM_SIGNALLED,
            Fault.PROGRAM_RETRY_CODE,
            Fault.PROGRAM_HANGS);
    boolean ignoresSigterm = faults.roll(Fault.PROGRAM_IGNORES_SIGTERM);
    boolean child = faults.roll(Fault.PROGRAM_LEAVES_CHILD);
    boolean cancelInGrace = random.nextDouble() < faults.rate(Fault.PROGRAM_CANCELLED_IN_GRACE);
    int stepMs = 200 + random.nextInt(1_300);
    int failAt = 1 + random.nextInt(Math.max(1, steps));
    int code = new int[] {1, 2, 3, 70}[random.nextInt(4)];
    boolean withError = random.nextBoolean();
    int signal = random.nextBoolean() ? 11 : 6;
    int retryAttempts = 1 + random.nextInt(5);
    boolean retryProgresses = random.nextBoolean();
    boolean slow = random.nextInt(3) == 0;
    long termMs = random.nextInt((int) kind.cancelGracePeriod().toMillis() * 2 + 1);
    long outlivesMs = random.nextInt(3) == 0 ? -1 : random.nextInt(3_000);
    boolean childIgnores = random.nextBoolean();
    // From the artifacts' own stream: with them left out, the payload is what it was before them.
    boolean writesArtifacts = faults.roll(Fault.PROGRAM_WRITES_ARTIFACTS);
    int artifactFiles = 1 + artifacts.nextInt(3);
    // What befalls the worker of its first attempts between their uploads and their ends: counted
    // when it happens (the worker uploaded), since most of them come after the fault phase.
    double afterUploadDraw = artifacts.nextDouble();
    int afterUploadAttempts = 1 + artifacts.nextInt(2);
    double killed = faults.rate(Fault.WORKER_KILLED_AFTER_UPLOAD) / 2;
    double paused = faults.rate(Fault.WORKER_PAUSED_AFTER_UPLOAD) / 2;
    String afterUpload =
        afterUploadDraw < killed ? "kill" : afterUploadDraw < killed + paused ? "pause" : null;

    StringBuilder p = new StringBuilder("{\"steps\": " + steps + ", \"stepMs\": " + stepMs);
    switch (ends) {
      case PROGRAM_CRASHES ->
          p.append(", \"ends\": \"crash\", \"failAt\": ")
              .append(failAt)
              .append(", \"code\": ")
              .append(code)
              .append(", \"withError\": ")
              .append(withError);
      case PROGRAM_SIGNALLED ->
          p.append(", \"ends\": \"signal\", \"failAt\": ")
              .append(failAt)
              .append(", \"signal\": ")
              .append(signal);
      case PROGRAM_RETRY_CODE ->
          p.append(", \"ends\": \"retry\", \"retryAttempts\": ")
              .append(retryAttempts)
              .append(", \"retryProgresses\": ")
              .append(retryProgresses);
      case PROGRAM_HANGS -> p.append(", \"ends\": \"hang\"");
      default -> p.append(", \"ends\": \"exit\"");
    }
    p.append(", \"onSigterm\": \"")
        .append(ignoresSigterm ? "ignore" : slow ? "slow" : "exit")
        .append('"');
    if (slow && !ignoresSigterm) {
      p.append(", \"termMs\": ").append(termMs);
    }
    if (child) {
      p.append(", \"child\": {\"outlivesMs\": ")
          .append(outlivesMs)
          .append(", \"ignoresSigterm\": ")
          .append(childIgnores)
          .append('}');
    }
    if (cancelInGrace) {
      p.append(", \"ownerCancelsInGrace\": true");
    }
    if (followUp) {
      p.append(", \"followUp\": true");
    }
    if (writesArtifacts) {
      p.append(", \"artifacts\": ").append(artifactFiles);
      if (afterUpload != null) {
        p.append(", \"afterUpload\": \"")
            .append(afterUpload)
            .append("\", \"afterUploadAttempts\": ")
            .append(afterUploadAttempts);
      }
    }
    return p.append('}').toString();
  }

  /**
   * The launcher: a program of the job the calling worker runs, from the environment the runner
   * made.
   */
  private JobProcess start(ProcessLauncher.Spec spec) throws IOException {
    Map<String, String> env = spec.environment();
    long jobId = Long.parseLong(env.get(JobEnvironment.JOB_ID));
    int attempt = Integer.parseInt(env.get(JobEnvironment.ATTEMPT));
    int progress = Integer.parseInt(env.get(JobEnvironment.PROGRESS));
    JsonNode payload = JSON.readTree(Path.of(env.get(JobEnvironment.PAYLOAD)).toFile());
    Scheduler.Actor worker = scheduler.current();
    SimProgram p;
    synchronized (this) {
      p =
          new SimProgram(
              this,
              ++nextPid,
              jobId,
              worker.workerId,
              worker.taskId,
              attempt,
              progress,
              payload,
              now(),
              kind.timeout(),
              kind.cancelGracePeriod(),
              Path.of(env.get(JobEnvironment.CONTROL)),
              Path.of(env.get(JobEnvironment.ARTIFACTS)));
      all.add(p);
      onThread.put(Thread.currentThread(), p);
    }
    count("started");
    sim.note(
        worker,
        "program pid "
            + p.pid
            + " of job "
            + jobId
            + " (attempt "
            + attempt
            + ") starts: "
            + p.behaviour);
    return p;
  }

  Instant now() {
    return sim.now();
  }

  /**
   * The calling worker sleeps until {@code until} on the simulated clock (or is killed meanwhile).
   */
  void sleep(String what, Instant until) {
    scheduler.sleep(what + " (asleep until +" + at(until) + ")", until);
  }

  /** A line in the scenario's event log, from the actor that runs now. */
  void note(String message) {
    sim.note(scheduler.current(), message);
  }

  /** "12.345 s" after the simulation's start. */
  static String at(Instant t) {
    return String.format("%.3fs", Duration.between(Simulation.START, t).toMillis() / 1000.0);
  }

  /**
   * The worker of {@code taskId} is being killed from outside ({@code how}: killed, stopped by the
   * queue, a frozen task's stop taking effect): its runner can no longer act on its programs.
   */
  synchronized void orphan(String taskId, String how) {
    for (SimProgram p : all) {
      if (p.taskId.equals(taskId)) {
        p.orphan();
      }
    }
    orphanedTasks.put(taskId, how);
  }

  /**
   * The worker of {@code taskId} has ended: its programs die with it, as the local platform's
   * LeftoverJobs kills a dead worker's job sessions and a Fargate task's end kills every process in
   * it, before either reports the worker gone.
   */
  void taskEnded(String taskId) {
    Instant now = now();
    List<SimProgram> of;
    String how;
    synchronized (this) {
      of = all.stream().filter(p -> p.taskId.equals(taskId)).toList();
      how = orphanedTasks.getOrDefault(taskId, "crashed");
    }
    for (SimProgram p : of) {
      if (p.dieWithWorker(now)) {
        count("died with their worker (" + how + ")");
      }
    }
  }

  synchronized List<SimProgram> all() {
    return List.copyOf(all);
  }

  synchronized boolean any() {
    return !all.isEmpty();
  }

  /** The program of a job's attempt, or null. */
  synchronized SimProgram of(long jobId, int attempt) {
    for (int i = all.size() - 1; i >= 0; i--) {
      SimProgram p = all.get(i);
      if (p.jobId == jobId && p.attempt == attempt) {
        return p;
      }
    }
    return null;
  }

  /**
   * Programs still running (the program itself) on a worker that is not dead: a cancel could reach
   * them.
   */
  synchronized List<SimProgram> running(Instant now) {
    return all.stream().filter(p -> p.mainAlive(now) && !p.orphaned()).toList();
  }

  /**
   * A program whose owner is to cancel its job during the grace after its timeout's SIGTERM, now
   * that it is there; null if none. Each is returned once.
   */
  synchronized SimProgram cancelInGraceDue(Instant now) {
    for (SimProgram p : all) {
      if (p.ownerCancelsInGrace && p.inTimeoutGrace(now) && p.triggerCancel()) {
        return p;
      }
    }
    return null;
  }

  synchronized void count(String what) {
    counts.merge(what, 1, Integer::sum);
  }

  /** What the scenario's programs did, for the summary line. */
  synchronized Map<String, Integer> counts() {
    Map<String, Integer> out = new TreeMap<>(counts);
    for (SimProgram p : all) {
      if (p.timedOut()) {
        out.merge("timed out", 1, Integer::sum);
      }
      if (p.termAt() != null
          && p.killAt() != null
          && !p.diedWithWorker()
          && !p.killAt().isBefore(p.termAt().plus(p.grace))) {
        out.merge("SIGKILLed after the grace", 1, Integer::sum);
      }
      if (p.retryExit(now())) {
        out.merge("exited with the retry code", 1, Integer::sum);
      }
    }
    return out;
  }
}
