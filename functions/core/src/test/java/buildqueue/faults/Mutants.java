package buildqueue.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Deliberate bugs in the queue core (and in the job runner that runs the simulation's program
 * jobs), and a runner that shows the fault simulation catches each one. A mutant is an exact text
 * replacement in one production source file; {@link #apply} fails when the text is not there
 * exactly once, so a mutant never silently stops applying when the core changes ({@code
 * MutantsTest} checks that on every build). The runner copies the repository (its working tree,
 * without {@code target} folders) to {@code functions/core/target/mutants/}, applies one mutant at
 * a time, runs {@link FaultInjectionTest} there as the default build does (default scenario count,
 * one base seed for all mutants), and prints a table: caught or not, by which seed and invariant,
 * after how many scenarios, how long it took.
 *
 * <p>Run it with {@code scripts/mutants.sh} ({@code -o} for Maven offline, {@code --base-seed=B},
 * {@code --only=name,name}, {@code --source=DIR} to mutate another checkout). It uses only the JDK,
 * so it runs from the test classes alone: {@code java -cp functions/core/target/test-classes
 * buildqueue.faults.Mutants}.
 *
 * <p>Each mutant names what it breaks by its section of docs/architecture.md (§5.N: invariant N).
 */
final class Mutants {

  /** One deliberate bug: replace {@code from} (which must occur exactly once) by {@code to}. */
  record Mutant(String name, String breaks, String file, String from, String to) {

    /** The mutated source text. */
    String applyTo(String source) {
      int at = source.indexOf(from);
      if (at < 0 || source.indexOf(from, at + 1) >= 0) {
        throw new IllegalStateException(
            "mutant "
                + name
                + ": the text to replace occurs "
                + (at < 0 ? "nowhere" : "more than once")
                + " in "
                + file
                + "; the core changed, so update this mutant in Mutants.java to break the same rule again:\n"
                + from);
      }
      return source.substring(0, at) + to + source.substring(at + from.length());
    }

    /** Writes the mutated file into the module at {@code core} (functions/core). */
    void apply(Path core) {
      Path path = core.resolve(file);
      try {
        Files.writeString(
            path, applyTo(Files.readString(path, StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static final String MAIN = "src/main/java/buildqueue/core/";

  /**
   * The worker transitions' statements live in their functions (docs/architecture.md §6.1), whose
   * current definitions are V006's, written as escape strings: quotes are doubled.
   */
  private static final String WORKER_FUNCTIONS =
      "src/main/resources/buildqueue/db/migrations/V006__worker_plans.sql";

  /** {@code build_worker_start} as V007 last defines it, written plainly. */
  private static final String WORKER_START =
      "src/main/resources/buildqueue/db/migrations/V007__worker_start_lock_order.sql";

  /**
   * The choice of a lane's next job, {@code build_lane_next_job} (V015 last defines it, written
   * plainly).
   */
  private static final String LANE_CHOICE =
      "src/main/resources/buildqueue/db/migrations/V015__priorities_and_pause.sql";

  private static final String EXEC = "src/main/java/buildqueue/worker/exec/";

  /**
   * Artifacts (docs/architecture.md §4.10): the end that publishes, {@code
   * build_worker_end_publishing} (V018, written plainly).
   */
  private static final String ARTIFACTS =
      "src/main/resources/buildqueue/db/migrations/V018__artifacts.sql";

  /** The compute ledger's share of a worker among its jobs, {@code build_ledger_bill} (V013). */
  private static final String LEDGER =
      "src/main/resources/buildqueue/db/migrations/V013__compute_ledger.sql";

  static final List<Mutant> ALL =
      List.of(
          new Mutant(
              "unknown-launch-not-started",
              "§5.7: an unknown launch holds its slot until evidence, relaunch or lease",
              MAIN + "BuildQueue.java",
              """
              record(launch, outcome, tail, last);
          """,
              """
              record(launch, outcome instanceof LaunchOutcome.Unknown u ? new LaunchOutcome.NotStarted(u.reason(), true) : outcome, tail, last);
          """),
          new Mutant(
              "deploy-refusal-final",
              "§4.4: a launch a deploy window refuses is a launch failure with backoff, never final at first sight",
              MAIN + "BuildQueue.java",
              """
                exits.launchFailed(launch, n.reason(), n.retryable());
          """,
              """
                exits.launchFailed(launch, n.reason(), n.retryable() && !n.beforeToken());
          """),
          new Mutant(
              "lease-reclaims-checkable-worker",
              "§5.3: a worker the platform can check loses its slot only on termination evidence",
              MAIN + "TickPass.java",
              """
                  if (e.taskId() != null && platform.canCheck(e.taskId())) {
          """,
              """
                  if (false) {
          """),
          new Mutant(
              "fifth-interruption-retried",
              "§5.6: a job fails after four consecutive interruptions without progress",
              MAIN + "ExitTransitions.java",
              """
            public static final int MAX_RECOVERIES = 3;
          """,
              """
            public static final int MAX_RECOVERIES = 4;
          """),
          new Mutant(
              "progress-fence-without-token",
              "§5.2: only the job's worker, with its token, changes its progress",
              WORKER_FUNCTIONS,
              """
                and w.id = p_worker_id and w.token = p_token and w.status = ''running'' and w.expires_at > t.now
              returning j.id, j.cancel_requested,
          """,
              """
                and w.id = p_worker_id and w.status = ''running'' and w.expires_at > t.now
              returning j.id, j.cancel_requested,
          """),
          new Mutant(
              "outlived-lease-never-stopped",
              "§4.5 liveness: a worker still running past its lease is stopped, and its slot waits for the evidence",
              MAIN + "TickPass.java",
              """
                  platform.stop(d.taskId(), "worker " + d.workerId() + " outlived its lease");
          """,
              ""),
          new Mutant(
              "turn-never-passes",
              "§12: in the fair shared lane, a user who was served waits for every other waiting user's turn",
              LANE_CHOICE,
              """
              update build_lane_turn u set turn = nextval('build_lane_turn_served')
          """,
              """
              update build_lane_turn u set turn = u.turn
          """),
          new Mutant(
              "priority-ignored-within-a-user",
              "§4.7: a user's queued jobs go by priority, then age (a retry aside)",
              LANE_CHOICE,
              "             order by q.priority desc, q.id limit 1 for update of q skip locked),\n",
              "             order by q.id limit 1 for update of q skip locked),\n"),
          new Mutant(
              "priority-jumps-the-turns",
              "§12: a priority orders its user's own jobs, never the turns between users",
              LANE_CHOICE,
              "and q.status = 'queued' and q.priority = 2\n",
              "and q.status = 'queued' and q.priority >= 1\n"),
          new Mutant(
              "start-without-lease",
              "§4.3 worker start: launching → running only before the lease",
              WORKER_START,
              """
              where w.id = p_worker_id and w.token = p_token and w.status = 'launching'
                and w.expires_at - p_deadline_margin_ms * interval '1 millisecond' > t.now
          """,
              """
              where w.id = p_worker_id and w.token = p_token and w.status = 'launching'
          """),
          // The job process (docs/architecture.md §10.1): the real ProcessRunner runs the
          // simulation's program jobs.
          new Mutant(
              "timeout-succeeds",
              "§10 outcomes: a program stopped by its timeout fails \"timed out after …\"",
              EXEC + "ProgramAttempt.java",
              """
              if (stopFailure != null) {
                return JobOutcome.failed(stopFailure);
          """,
              """
              if (stopFailure != null) {
                return JobOutcome.succeeded();
          """),
          new Mutant(
              "no-sigkill-after-grace",
              "§10: a program that ignores SIGTERM gets SIGKILL once the grace period is over",
              EXEC + "JobTermination.java",
              """
                process.kill();
                killed = true;
          """,
              """
                killed = true;
          """),
          // A cancel is pushed: the queue stops the job's worker, and the worker's stop is what
          // signals the program (the heartbeat's read of the flag is only the fallback for a lost
          // stop), so the mutant breaks the stop's SIGTERM.
          new Mutant(
              "cancel-never-signals-program",
              "§10 cancel: a running program gets SIGTERM once its cancel's stop reaches its worker",
              EXEC + "ProgramAttempt.java",
              """
              if (!termination.terminated()) {
                terminate("the worker is stopping");
          """,
              """
              if (false) {
                terminate("the worker is stopping");
          """),
          new Mutant(
              "retry-code-fails",
              "§10 outcomes: a retry exit code interrupts the job (§5.6), it does not fail it",
              EXEC + "ProgramAttempt.java",
              """
                if (kind.retryExitCodes().contains(e.code())) {
          """,
              """
                if (false) {
          """),
          new Mutant(
              "ledger-remainder-lost",
              "§4.8: the jobs' shares of a worker add up to its billed time exactly",
              LEDGER,
              """
                       s.base + case when s.n <= r.r then 1 else 0 end, p_vcpu_milli, p_memory_mb, w.capacity
              """,
              """
                       s.base, p_vcpu_milli, p_memory_mb, w.capacity
              """),
          new Mutant(
              "tick-disarms-without-checking-for-work",
              "§4.5 idle at zero: the schedule is on while the queue has work (no job waits for the fallback unless an arm was lost)",
              MAIN + "BuildQueue.java",
              """
              if (report.found().work()) {
                if (cause == TickSchedule.Cause.FALLBACK) {
                  schedule.arm();
                }
                return;
              }
              schedule.disarm();
              boolean clear = false;
              try {
                clear = tick.disarm();
          """,
              """
              schedule.disarm();
              boolean clear = false;
              try {
                clear = tick.disarm() || true;
          """),
          new Mutant(
              "tick-never-disarms",
              "§4.5 idle at zero: once the queue is idle, the tick sends the database nothing until the next enqueue",
              MAIN + "BuildQueue.java",
              """
              schedule.disarm();
              boolean clear = false;
          """,
              """
              boolean clear = false;
          """),
          // Artifacts: exactly those of the succeeding attempt (the fault simulation's programs
          // write files; their workers are killed or paused past their lease after uploading).
          new Mutant(
              "publish-on-fenced-end",
              "§5.10: an attempt fenced off publishes nothing; only the end that succeeds a job publishes",
              ARTIFACTS,
              "    if r.fenced_in = 1 and p_status = 'succeeded' then\n",
              "    if p_status = 'succeeded' then\n"),
          new Mutant(
              "sweep-removes-published-files",
              "§5.10: a job's published artifacts stay in the store; the sweep removes only what no attempt can publish",
              MAIN + "ArtifactSweep.java",
              """
                    where not exists (select 1 from build_job j where j.id = a.job_id)
                    group by a.job_id, a.attempt, a.worker_id
              """,
              """
                    group by a.job_id, a.attempt, a.worker_id
              """));

  private Mutants() {}

  /** What running the default simulation against one mutant showed. */
  record Result(
      Mutant mutant,
      boolean caught,
      String seed,
      String violation,
      String scenarios,
      double simSeconds,
      Duration wall,
      String problem) {}

  public static void main(String[] args) throws Exception {
    boolean offline = Arrays.asList(args).contains("-o");
    long base =
        Long.parseLong(
            arg(args, "--base-seed")
                .orElse(Long.toString(System.currentTimeMillis() % 1_000_000_000L * 1000)));
    Set<String> only = arg(args, "--only").map(s -> Set.of(s.split(","))).orElse(Set.of());
    Path root = repositoryRoot(Path.of("").toAbsolutePath());
    Path source = arg(args, "--source").map(Path::of).orElse(root);
    Path work = root.resolve("functions/core/target/mutants/repo");
    List<Mutant> chosen =
        ALL.stream().filter(m -> only.isEmpty() || only.contains(m.name())).toList();
    for (Mutant m : chosen) {
      m.applyTo(
          Files.readString(
              source.resolve("functions/core").resolve(m.file()))); // fail before any run
    }

    System.out.println(
        "mutants: "
            + chosen.size()
            + ", default scenarios of FaultInjectionTest, base seed "
            + base
            + ", working copy of "
            + source
            + " in "
            + work);
    copy(source, work);
    List<Result> results = new ArrayList<>();
    for (Mutant m : chosen) {
      Path file = work.resolve("functions/core").resolve(m.file());
      String original = Files.readString(file);
      m.apply(work.resolve("functions/core"));
      try {
        Result r = run(m, work, base, offline);
        results.add(r);
        System.out.println(row(r));
      } finally {
        Files.writeString(file, original);
      }
    }
    String table = table(results, base);
    System.out.println();
    System.out.println(table);
    Path out = root.resolve("functions/core/target/mutants/mutants.txt");
    Files.writeString(out, table);
    System.out.println("(also in " + root.relativize(out) + ")");
    System.exit(results.stream().allMatch(Result::caught) ? 0 : 1);
  }

  private static Optional<String> arg(String[] args, String name) {
    return Arrays.stream(args)
        .filter(a -> a.startsWith(name + "="))
        .map(a -> a.substring(name.length() + 1))
        .findFirst();
  }

  /** Runs the default fault suite in the working copy with the mutant applied. */
  private static Result run(Mutant m, Path work, long base, boolean offline)
      throws IOException, InterruptedException {
    Path target = work.resolve("functions/core/target");
    Files.deleteIfExists(target.resolve("faults-summary.txt"));
    Files.deleteIfExists(target.resolve("faults-failure.txt"));
    List<String> command = new ArrayList<>(List.of("mvn", "-B", "-ntp", "-q"));
    if (offline) {
      command.add("-o");
    }
    command.addAll(
        List.of(
            "-pl",
            "functions/core",
            "-am",
            "test",
            "-Dtest=FaultInjectionTest",
            "-Dsurefire.failIfNoSpecifiedTests=false",
            "-Dfaults.baseSeed=" + base));
    Path log = work.resolve("../" + m.name() + ".log").normalize();
    long started = System.nanoTime();
    Process p =
        new ProcessBuilder(command)
            .directory(work.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    int exit = p.waitFor();
    Duration wall = Duration.ofNanos(System.nanoTime() - started);
    Path summaryFile = target.resolve("faults-summary.txt");
    Path failureFile = target.resolve("faults-failure.txt");
    if (!Files.exists(summaryFile)) {
      return new Result(
          m,
          false,
          "",
          "",
          "",
          0,
          wall,
          "the suite did not run (exit " + exit + "; see " + log + ")");
    }
    String summary = Files.readString(summaryFile).strip();
    String scenarios = summary.replaceFirst("^faults: (\\d+) scenarios.*", "$1");
    double seconds =
        Double.parseDouble(summary.replaceFirst("(?s).*; ([0-9.]+) s \\(base seed.*", "$1"));
    if (!Files.exists(failureFile)) {
      return new Result(
          m,
          false,
          "",
          "",
          scenarios,
          seconds,
          wall,
          exit == 0 ? null : "exit " + exit + ", see " + log);
    }
    List<String> report = Files.readAllLines(failureFile);
    String seed = report.get(0).replaceFirst("^seed (\\d+) .*", "$1");
    String replay = report.get(0).replaceFirst("^seed \\d+ — replay with ", "");
    String violation =
        report.stream()
            .filter(l -> l.startsWith("VIOLATION: "))
            .findFirst()
            .map(l -> l.substring("VIOLATION: ".length()))
            .orElse("?");
    return new Result(
        m, true, seed + " (" + replay + ")", violation, scenarios, seconds, wall, null);
  }

  private static String row(Result r) {
    return String.format(
        "%-32s %-6s %s",
        r.mutant().name(),
        r.caught() ? "caught" : "MISSED",
        r.problem() != null ? r.problem() : r.caught() ? "by " + brief(r.violation()) : "");
  }

  static String table(List<Result> results, long base) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| mutant | breaks | caught | scenarios run | seed (shrunk replay) | invariant | time |\n");
    b.append("|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      b.append("| ")
          .append(r.mutant().name())
          .append(" | ")
          .append(r.mutant().breaks())
          .append(" | ")
          .append(
              r.problem() != null && r.scenarios().isEmpty()
                  ? "error: " + r.problem()
                  : r.caught() ? "yes" : "no")
          .append(" | ")
          .append(r.scenarios())
          .append(" | ")
          .append(r.seed())
          .append(" | ")
          .append(brief(r.violation()).replace("|", "\\|"))
          .append(" | ")
          .append(
              String.format(
                  "%.1f s simulation, %d s with build", r.simSeconds(), r.wall().toSeconds()))
          .append(" |\n");
    }
    b.append("\nbase seed ")
        .append(base)
        .append("; caught ")
        .append(results.stream().filter(Result::caught).count())
        .append(" of ")
        .append(results.size())
        .append('\n');
    return b.toString();
  }

  private static String brief(String violation) {
    String first = violation.lines().findFirst().orElse("");
    return first.length() > 160 ? first.substring(0, 160) + "…" : first;
  }

  private static Path repositoryRoot(Path from) {
    for (Path p = from; p != null; p = p.getParent()) {
      if (Files.exists(p.resolve("functions/core/pom.xml")) && Files.exists(p.resolve("pom.xml"))) {
        return p;
      }
    }
    throw new IllegalStateException(
        "run from inside the repository: no functions/core/pom.xml above " + from);
  }

  /** The working tree without build output or version control, replacing an older copy. */
  private static void copy(Path from, Path to) throws IOException {
    Set<String> skip = Set.of("target", ".git", ".idea", "node_modules", ".buildqueue");
    if (Files.exists(to)) {
      try (var files = Files.walk(to)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
    Files.walkFileTree(
        from,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs)
              throws IOException {
            if (!dir.equals(from) && skip.contains(dir.getFileName().toString())) {
              return FileVisitResult.SKIP_SUBTREE;
            }
            Files.createDirectories(to.resolve(from.relativize(dir).toString()));
            return FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
              throws IOException {
            Files.copy(
                file,
                to.resolve(from.relativize(file).toString()),
                StandardCopyOption.REPLACE_EXISTING);
            return FileVisitResult.CONTINUE;
          }
        });
  }
}
