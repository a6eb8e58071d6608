package buildqueue.worker.exec;

import static buildqueue.worker.JobLog.Stream.STDERR;
import static buildqueue.worker.JobLog.Stream.STDOUT;
import static buildqueue.worker.JobLog.Stream.WORKER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.testing.Await;
import buildqueue.testing.Procs;
import buildqueue.testing.RecordingJobContext;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.RunningJobs;
import buildqueue.worker.WorkerFencedOffException;
import buildqueue.worker.WorkerLoop;
import buildqueue.worker.WorkerStop;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A command kind's job as a real program: sh and python3 scripts the tests write. */
class ProcessRunnerTest {
  private static final SetsidLauncher SETSID = SetsidLauncher.find(System.getenv());
  private static final Duration LONG = Duration.ofMinutes(5);

  @TempDir Path tmp;
  private final List<Long> pidsToKill = new ArrayList<>();

  @AfterEach
  void killWhatATestLeft() {
    pidsToKill.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
  }

  private Path base() {
    return tmp.resolve("jobs");
  }

  private Path pids() {
    return tmp.resolve("pids");
  }

  private ProcessRunner runner() {
    return runner(Map.of("PATH", System.getenv("PATH")));
  }

  private ProcessRunner runner(Map<String, String> workerEnv) {
    return new ProcessRunner(
        base(), workerEnv, SETSID, MonotonicClock.SYSTEM, ProcessRunner.Limits.defaults());
  }

  private static CommandKind kind(
      List<String> command,
      Duration timeout,
      Duration grace,
      Set<Integer> retry,
      Map<String, String> env) {
    return new CommandKind("shell", command, timeout, PayloadSchema.ANY_OBJECT, retry, env, grace);
  }

  /**
   * A kind running {@code sh script}, with {@code $PIDS} naming a file the script may write pids
   * to.
   */
  private CommandKind sh(String script, Duration timeout, Duration grace, Set<Integer> retry)
      throws IOException {
    Path file = tmp.resolve("job-" + System.nanoTime() + ".sh");
    Files.writeString(file, script);
    return kind(
        List.of("sh", file.toString()), timeout, grace, retry, Map.of("PIDS", pids().toString()));
  }

  private CommandKind sh(String script) throws IOException {
    return sh(script, LONG, Duration.ofSeconds(10), Set.of());
  }

  private CommandKind python(String script) throws IOException {
    Path file = tmp.resolve("job-" + System.nanoTime() + ".py");
    Files.writeString(file, script);
    return kind(
        List.of("python3", file.toString()),
        LONG,
        Duration.ofSeconds(10),
        Set.of(),
        Map.of("PIDS", pids().toString()));
  }

  private CompletableFuture<JobOutcome> runAsync(
      ProcessRunner runner, CommandKind kind, RecordingJobContext ctx) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return runner.run(kind, ctx);
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  /**
   * Waits until the job has written {@code n} pids to {@code $PIDS}; returns them (killed after the
   * test).
   */
  private List<Long> awaitPids(int n) {
    Await.until(n + " pids written by the job", () -> Procs.pidsIn(pids()).size() >= n);
    List<Long> pids = Procs.pidsIn(pids());
    pidsToKill.addAll(pids);
    return pids;
  }

  private static void assertNoneLeft(List<Long> pids, long sid) {
    assertThat(pids).as("processes the job started").noneMatch(Procs::alive);
    assertThat(Procs.inSessionOrGroup(sid))
        .as("live processes in the job's session or group")
        .isEmpty();
  }

  private void assertDirectoryDeleted() throws IOException {
    try (var left = Files.list(base())) {
      assertThat(left).as("job directories left under the base").isEmpty();
    }
  }

  @Test
  void exit_zero_succeeds_and_leaves_no_directory() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");

    JobOutcome outcome =
        runner().run(kind(List.of("true"), LONG, Duration.ofSeconds(10), Set.of(), Map.of()), ctx);

    assertThat(outcome).isEqualTo(JobOutcome.succeeded());
    assertThat(ctx.lines(WORKER))
        .containsExactly("started: true (attempt 1)", "exited with code 0");
    assertDirectoryDeleted();
    assertThat(RunningJobs.count()).isZero();
  }

  @Test
  void the_program_leads_its_own_session_and_runs_in_the_job_directory() throws Exception {
    CommandKind kind =
        sh(
            "echo $$ > \"$PIDS\"; cat /proc/$$/stat > \"$PIDS.stat\"; pwd > \"$PIDS.pwd\"\n"
                + "echo \"$TMPDIR\" >> \"$PIDS.pwd\"\n");

    assertThat(runner().run(kind, RecordingJobContext.of("shell", "{}")))
        .isEqualTo(JobOutcome.succeeded());

    long pid = Procs.pidsIn(pids()).get(0);
    String stat = Files.readString(Path.of(pids() + ".stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    assertThat(Long.parseLong(f[2])).as("process group").isEqualTo(pid);
    assertThat(Long.parseLong(f[3])).as("session").isEqualTo(pid);
    assertThat(Long.parseLong(f[1]))
        .as("parent: this JVM, so the exit the JDK sees is the program's")
        .isEqualTo(ProcessHandle.current().pid());
    List<String> dirs = Files.readAllLines(Path.of(pids() + ".pwd"));
    assertThat(dirs.get(0)).startsWith(base().resolve("job-42-1-").toString()).endsWith("/work");
    assertThat(dirs.get(1)).isEqualTo(Path.of(dirs.get(0)).resolveSibling("tmp").toString());
  }

  @Test
  void progress_lines_reach_check_in() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh(
            "for i in 1 2 3; do echo \"{\\\"progress\\\": $i}\" >> \"$BUILDQUEUE_CONTROL\"; sleep 0.3;"
                + " done; sleep 1\n");

    assertThat(runner().run(kind, ctx)).isEqualTo(JobOutcome.succeeded());

    assertThat(ctx.checkedInProgress()).isSorted().endsWith(3);
    assertThat(ctx.checkIns()).isGreaterThan(3);
  }

  @Test
  void a_later_attempt_is_told_where_the_last_one_got_to() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}").resumed(3, 7);
    CommandKind kind = sh("echo \"$BUILDQUEUE_ATTEMPT $BUILDQUEUE_PROGRESS\"\n");

    assertThat(runner().run(kind, ctx)).isEqualTo(JobOutcome.succeeded());

    assertThat(ctx.lines(STDOUT)).containsExactly("3 7");
    assertThat(ctx.lines(WORKER)).contains("started: sh " + kind.command().get(1) + " (attempt 3)");
  }

  @Test
  void follow_ups_reach_the_context() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}", "render");
    CommandKind kind =
        sh(
            "echo '{\"followUp\": {\"kind\": \"render\", \"payload\": {\"page\": 2}}}' >> \"$BUILDQUEUE_CONTROL\"\n"
                + "echo '{\"followUp\": {\"kind\": \"render\"}}' >> \"$BUILDQUEUE_CONTROL\"\n");

    assertThat(runner().run(kind, ctx)).isEqualTo(JobOutcome.succeeded());

    assertThat(ctx.followUps())
        .extracting(f -> f.kind() + " " + f.payload())
        .containsExactly("render {\"page\":2}", "render null");
  }

  @Test
  void a_refused_follow_up_stops_the_program_and_fails_the_job_with_why() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}", "render");
    CommandKind kind =
        sh(
            "echo $$ > \"$PIDS\"\necho '{\"followUp\": {\"kind\": \"deploy\"}}' >> \"$BUILDQUEUE_CONTROL\"\n"
                + "sleep 1000\n");

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            JobOutcome.Failed.class,
            f ->
                assertThat(f.message())
                    .isEqualTo(
                        "The job's follow-up could not be submitted: control line 1: follow-up kind \"deploy\" is not a"
                            + " kind this worker knows"));
    assertThat(ctx.lines(WORKER))
        .contains("follow-up refused: SIGTERM sent to the job's processes");
    assertNoneLeft(Procs.pidsIn(pids()), Procs.pidsIn(pids()).get(0));
  }

  @Test
  void more_follow_ups_than_allowed_fail_the_job() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}", "render");
    ProcessRunner runner =
        new ProcessRunner(
            base(),
            Map.of("PATH", System.getenv("PATH")),
            SETSID,
            MonotonicClock.SYSTEM,
            ProcessRunner.Limits.defaults().withMaxFollowUps(3));
    CommandKind kind =
        sh(
            "for i in 1 2 3 4 5; do echo '{\"followUp\": {\"kind\": \"render\"}}' >> \"$BUILDQUEUE_CONTROL\";"
                + " done\n");

    JobOutcome outcome = runner.run(kind, ctx);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            JobOutcome.Failed.class,
            f ->
                assertThat(f.message())
                    .contains(
                        "more than 3 follow-up jobs (control line 4); a job may submit at most 3"));
    assertThat(ctx.followUps()).hasSize(3);
  }

  @Test
  void an_error_line_becomes_the_failure_message() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh(
            "echo '{\"error\": \"the input has no pages\"}' >> \"$BUILDQUEUE_CONTROL\"\n"
                + "echo 'some noise' >&2\nexit 3\n");

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome).isEqualTo(JobOutcome.failed("the input has no pages"));
    assertThat(ctx.lines(WORKER)).contains("exited with code 3");
  }

  @Test
  void a_retry_exit_code_interrupts_the_job_with_its_latest_progress() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh(
            "echo '{\"progress\": 4}' >> \"$BUILDQUEUE_CONTROL\"\nexit 75\n",
            LONG,
            Duration.ofSeconds(10),
            Set.of(75));

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome)
        .isEqualTo(JobOutcome.interrupted("exit code 75, a retry code of kind shell"));
    // Read after the exit, it goes with the interruption's own statement, not one of its own.
    assertThat(ctx.finalProgress()).isEqualTo(4);
    assertThat(ctx.reportedProgress()).isEmpty();
  }

  @Test
  void any_other_exit_fails_with_the_last_lines_of_stderr() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        python(
            "import sys\nfor i in range(1, 16):\n    print('problem %d' % i, file=sys.stderr)\n"
                + "sys.stderr.write('no newline at the end')\nsys.exit(2)\n");

    JobOutcome outcome = runner().run(kind, ctx);

    List<String> expected =
        new ArrayList<>(IntStream.rangeClosed(7, 15).mapToObj(i -> "problem " + i).toList());
    expected.add("no newline at the end");
    assertThat(outcome).isEqualTo(JobOutcome.failed(String.join("\n", expected)));
    assertThat(ctx.lines(STDERR)).hasSize(16).endsWith("no newline at the end");
  }

  @Test
  void an_exit_without_stderr_or_error_fails_with_its_code() throws Exception {
    JobOutcome outcome = runner().run(sh("exit 9\n"), RecordingJobContext.of("shell", "{}"));

    assertThat(outcome).isEqualTo(JobOutcome.failed("exited with code 9"));
  }

  @Test
  void a_program_that_is_not_there_fails_saying_so() throws Exception {
    CommandKind kind =
        kind(List.of("no-such-program-here"), LONG, Duration.ofSeconds(1), Set.of(), Map.of());

    JobOutcome outcome = runner().run(kind, RecordingJobContext.of("shell", "{}"));

    assertThat(outcome)
        .isInstanceOfSatisfying(
            JobOutcome.Failed.class,
            f ->
                assertThat(f.message())
                    .isEqualTo("buildqueue: 1: exec: no-such-program-here: not found"));
  }

  @Test
  void a_program_killed_by_a_signal_fails_naming_the_signal() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");

    JobOutcome outcome = runner().run(sh("echo about to die\nkill -KILL $$\n"), ctx);

    assertThat(outcome).isEqualTo(JobOutcome.failed("killed by signal 9 (SIGKILL)"));
    assertThat(ctx.lines(WORKER)).contains("killed by signal 9 (SIGKILL)");
    assertThat(ProgramExit.fromExitValue(128 + 11).describe())
        .isEqualTo("killed by signal 11 (SIGSEGV)");
  }

  @Test
  void a_timed_out_program_gets_sigterm_and_nothing_of_it_is_left() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh(
            "echo $$ > \"$PIDS\"\nsleep 1000\n",
            Duration.ofSeconds(1),
            Duration.ofSeconds(20),
            Set.of());

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome).isEqualTo(JobOutcome.failed("timed out after 1s"));
    assertThat(ctx.lines(WORKER))
        .contains("timed out after 1s: SIGTERM sent to the job's processes")
        .noneMatch(l -> l.contains("SIGKILL"));
    List<Long> pids = Procs.pidsIn(pids());
    assertNoneLeft(pids, pids.get(0));
    assertDirectoryDeleted();
  }

  @Test
  void a_program_that_ignores_sigterm_is_sigkilled_after_the_grace() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh(
            "trap '' TERM\necho $$ > \"$PIDS\"\nsleep 1000\n",
            Duration.ofMillis(500),
            Duration.ofMillis(700),
            Set.of());

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome).isEqualTo(JobOutcome.failed("timed out after 500ms"));
    assertThat(ctx.lines(WORKER))
        .containsSubsequence(
            "timed out after 500ms: SIGTERM sent to the job's processes",
            "SIGKILL after 700ms grace",
            "killed by signal 9 (SIGKILL)");
    List<Long> pids = Procs.pidsIn(pids());
    assertNoneLeft(pids, pids.get(0));
  }

  @Test
  void background_grandchildren_and_daemons_are_ended_with_the_job() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    Path daemon = tmp.resolve("daemon.py");
    // A classic daemon: double fork, its own process group, output closed. It stays in the session.
    Files.writeString(
        daemon,
        "import os, sys, time\n"
            + "if os.fork(): sys.exit(0)\n"
            + "os.setpgid(0, 0)\n"
            + "if os.fork(): os._exit(0)\n"
            + "open(os.environ['PIDS'], 'a').write('%d\\n' % os.getpid())\n"
            + "os.close(0); os.close(1); os.close(2)\n"
            + "time.sleep(1000)\n");
    CommandKind kind =
        sh(
            "echo $$ >> \"$PIDS\"\n"
                + "sleep 1000 &\necho $! >> \"$PIDS\"\n"
                + "( sleep 1000 & echo $! >> \"$PIDS\" ) &\n"
                + "python3 "
                + daemon
                + "\n"
                + "while [ $(wc -l < \"$PIDS\") -lt 4 ]; do sleep 0.05; done\n"
                + "echo done\n");

    JobOutcome outcome = runner().run(kind, ctx);

    List<Long> pids = Procs.pidsIn(pids());
    pidsToKill.addAll(pids);
    assertThat(pids).hasSize(4);
    assertThat(outcome).isEqualTo(JobOutcome.succeeded());
    assertThat(ctx.lines(WORKER))
        .contains("exited with code 0", "3 processes the job left running: SIGTERM sent");
    assertNoneLeft(pids, pids.get(0));
  }

  @Test
  void cancel_stops_a_program_that_never_reports_within_the_grace() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh("echo $$ > \"$PIDS\"\nsleep 1000\n", LONG, Duration.ofSeconds(20), Set.of());
    CompletableFuture<JobOutcome> run = runAsync(runner(), kind, ctx);
    List<Long> pids = awaitPids(1);

    ctx.requestCancel();

    run.get(30, TimeUnit.SECONDS);
    assertThat(ctx.lines(WORKER))
        .contains("cancel requested: SIGTERM sent to the job's processes")
        .noneMatch(l -> l.contains("SIGKILL"));
    assertNoneLeft(pids, pids.get(0));
  }

  @Test
  void a_stopping_worker_interrupts_the_job_with_the_progress_its_program_wrote_on_sigterm()
      throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        sh(
            "trap 'echo \"{\\\"progress\\\": 9}\" >> \"$BUILDQUEUE_CONTROL\"; exit 1' TERM\n"
                + "echo $$ > \"$PIDS\"\nwhile :; do sleep 0.05; done\n",
            LONG,
            Duration.ofSeconds(20),
            Set.of());
    CompletableFuture<JobOutcome> run = runAsync(runner(), kind, ctx);
    List<Long> pids = awaitPids(1);

    ctx.requestStop(Duration.ofSeconds(20));

    JobOutcome outcome = run.get(30, TimeUnit.SECONDS);
    assertThat(outcome).isInstanceOf(JobOutcome.Interrupted.class);
    assertThat(((JobOutcome.Interrupted) outcome).reason())
        .startsWith(WorkerStop.INTERRUPTION_REASON_PREFIX + "the worker was told to stop");
    assertThat(ctx.finalProgress()).isEqualTo(9);
    assertThat(ctx.lines(WORKER))
        .contains("the worker is stopping: SIGTERM sent to the job's processes")
        .noneMatch(l -> l.contains("SIGKILL"));
    assertNoneLeft(pids, pids.get(0));
  }

  @Test
  void a_stopping_worker_cuts_the_grace_to_its_stop_timeout_and_a_program_done_in_time_succeeds()
      throws Exception {
    RecordingJobContext deaf = RecordingJobContext.of("shell", "{}");
    CommandKind ignores =
        sh(
            "trap '' TERM\necho $$ > \"$PIDS\"\nsleep 1000\n",
            LONG,
            Duration.ofMinutes(5),
            Set.of());
    CompletableFuture<JobOutcome> run = runAsync(runner(), ignores, deaf);
    List<Long> pids = awaitPids(1);
    long stoppedAt = System.nanoTime();

    deaf.requestStop(Duration.ofMillis(500));

    assertThat(run.get(30, TimeUnit.SECONDS)).isInstanceOf(JobOutcome.Interrupted.class);
    assertThat(Duration.ofNanos(System.nanoTime() - stoppedAt))
        .as("a 5 min grace cut to 0.5 s")
        .isLessThan(Duration.ofSeconds(10));
    assertThat(deaf.lines(WORKER))
        .anyMatch(l -> l.startsWith("the worker must be gone within its stop timeout"))
        .anyMatch(l -> l.matches("SIGKILL after 50\\dms grace"));
    assertNoneLeft(pids, pids.get(0));

    Files.deleteIfExists(pids());
    RecordingJobContext finishing = RecordingJobContext.of("shell", "{}");
    CommandKind finishes =
        sh("trap 'exit 0' TERM\necho $$ > \"$PIDS\"\nwhile :; do sleep 0.05; done\n");
    CompletableFuture<JobOutcome> done = runAsync(runner(), finishes, finishing);
    awaitPids(1);
    finishing.requestStop(Duration.ofSeconds(20));
    assertThat(done.get(30, TimeUnit.SECONDS))
        .as("exit 0 in its grace")
        .isEqualTo(JobOutcome.succeeded());
  }

  @Test
  void a_fenced_off_worker_kills_the_program_at_once() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    // It ignores SIGTERM and the grace is longer than the test waits: only an immediate SIGKILL
    // ends it in time.
    CommandKind kind =
        sh(
            "trap '' TERM\necho $$ > \"$PIDS\"\nsleep 1000\n",
            LONG,
            Duration.ofMinutes(10),
            Set.of());
    CompletableFuture<JobOutcome> run = runAsync(runner(), kind, ctx);
    List<Long> pids = awaitPids(1);

    ctx.fenceOff();

    assertThatThrownBy(() -> run.get(30, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(WorkerFencedOffException.class);
    assertThat(ctx.lines(WORKER))
        .contains("this worker no longer owns the job: SIGKILL sent to the job's processes")
        .noneMatch(l -> l.contains("SIGTERM"));
    assertNoneLeft(pids, pids.get(0));
    assertDirectoryDeleted();
  }

  @Test
  void garbage_control_lines_are_logged_and_ignored() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        python(
            "import os, time\n"
                + "with open(os.environ['BUILDQUEUE_CONTROL'], 'ab') as c:\n"
                + "    for line in [b'hello', b'{\"progress\": -1}', b'{\"progress\": 2.5}', b'{\"colour\": \"red\"}',\n"
                + "                 b'[1, 2]', b'{\"progress\": 1, \"error\": \"x\"}', b'{\"error\": 5}', b'\\xff\\xfe',\n"
                + "                 b'{\"progress\": 1} trailing', b'', b'{\"progress\": 7}', b'x' * 70000]:\n"
                + "        c.write(line + b'\\n')\n"
                + "        c.flush()\n"
                + "time.sleep(1)\n");

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome).isEqualTo(JobOutcome.succeeded());
    assertThat(ctx.checkedInProgress()).containsExactly(7);
    assertThat(ctx.lines(WORKER))
        .anyMatch(l -> l.startsWith("control line 1 ignored (not JSON: ") && l.endsWith(": hello"))
        .contains(
            "control line 2 ignored (progress must be a whole number from 0 to 2147483647, was -1): {\"progress\": -1}")
        .contains(
            "control line 3 ignored (progress must be a whole number from 0 to 2147483647, was 2.5): {\"progress\": 2.5}")
        .anyMatch(
            l ->
                l.startsWith(
                    "control line 4 ignored (unknown key \"colour\"; a control line is a JSON object"))
        .anyMatch(l -> l.startsWith("control line 5 ignored (not a JSON object"))
        .anyMatch(l -> l.startsWith("control line 6 ignored (it has 2 keys"))
        .anyMatch(l -> l.startsWith("control line 7 ignored (error must be a message"))
        .anyMatch(l -> l.startsWith("control line 8 ignored (not JSON: "))
        .anyMatch(l -> l.startsWith("control line 9 ignored (not JSON: "))
        .contains("control line 12 ignored (longer than 65536 bytes): (not kept)")
        .noneMatch(l -> l.startsWith("control line 10") || l.startsWith("control line 11"));
  }

  @Test
  void huge_output_keeps_the_tail_bounded() throws Exception {
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{}");
    CommandKind kind =
        python(
            "import sys\nout = sys.stdout.buffer\nline = b'y' * 99 + b'\\n'\n"
                + "for i in range(100000):\n    out.write(line)\n"
                + "out.write(b'bad utf-8: \\xc3\\x28 \\xff end\\n')\n"
                + "out.write(b'z' * 1000000)\n");

    JobOutcome outcome = runner().run(kind, ctx);

    assertThat(outcome).isEqualTo(JobOutcome.succeeded());
    JobLog.Snapshot tail = ctx.log().snapshot();
    assertThat(tail.tail().getBytes(java.nio.charset.StandardCharsets.UTF_8).length)
        .isLessThanOrEqualTo(WorkerLoop.LOG_TAIL_BYTES);
    assertThat(tail.totalBytes()).isGreaterThan(10_000_000L);
    assertThat(tail.tail()).contains("bad utf-8: \uFFFD( \uFFFD end\n").contains("[line cut at");
    List<String> stdout = ctx.lines(STDOUT);
    assertThat(stdout).hasSize(100_002);
    assertThat(stdout.get(100_001)).startsWith("zzzz").hasSizeLessThan(JobLog.MAX_LINE_CHARS + 100);
  }

  @Test
  void the_job_environment_holds_no_worker_token_database_or_aws_credentials() throws Exception {
    Map<String, String> worker = new HashMap<>();
    worker.put("PATH", System.getenv("PATH"));
    worker.put("HOME", "/home/worker");
    worker.put("LANG", "C.UTF-8");
    worker.put("BUILDQUEUE_WORKER_ID", "7");
    worker.put("BUILDQUEUE_WORKER_TOKEN", "3f1c9a4e-0000-4000-8000-000000000001");
    worker.put("BUILDQUEUE_DATABASE_URL", "jdbc:postgresql://db/buildqueue?password=hunter2");
    worker.put("BUILDQUEUE_DATABASE_USER", "buildqueue");
    worker.put("BUILDQUEUE_DATABASE_PASSWORD", "hunter2");
    worker.put("BUILDQUEUE_DB_SECRET_ARN", "arn:aws:secretsmanager:eu-west-1:1:secret:db");
    worker.put("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE");
    worker.put("AWS_SECRET_ACCESS_KEY", "secret");
    worker.put("AWS_SESSION_TOKEN", "session");
    worker.put("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc");
    worker.put("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.23/v1/credentials");
    worker.put("AWS_CONTAINER_AUTHORIZATION_TOKEN", "token");
    worker.put("ECS_CONTAINER_METADATA_URI_V4", "http://169.254.170.2/v4/abc");
    worker.put("JAVA_TOOL_OPTIONS", "-Xmx1g");
    RecordingJobContext ctx = RecordingJobContext.of("shell", "{\"pages\": [1, 2]}");
    CommandKind kind =
        kind(List.of("env"), LONG, Duration.ofSeconds(1), Set.of(), Map.of("RENDER_MODE", "fast"));

    assertThat(runner(worker).run(kind, ctx)).isEqualTo(JobOutcome.succeeded());

    Map<String, String> env = new HashMap<>();
    for (String line : ctx.lines(STDOUT)) {
      env.put(line.substring(0, line.indexOf('=')), line.substring(line.indexOf('=') + 1));
    }
    // PWD: the shell that records the job's session before it becomes the program exports it.
    assertThat(env.keySet())
        .containsExactlyInAnyOrder(
            "PATH",
            "HOME",
            "LANG",
            "TMPDIR",
            "PWD",
            "RENDER_MODE",
            "BUILDQUEUE_JOB_ID",
            "BUILDQUEUE_USER_ID",
            "BUILDQUEUE_JOB_KIND",
            "BUILDQUEUE_ATTEMPT",
            "BUILDQUEUE_PROGRESS",
            "BUILDQUEUE_PAYLOAD",
            "BUILDQUEUE_CONTROL",
            "BUILDQUEUE_ARTIFACTS");
    assertThat(String.join("\n", ctx.lines(STDOUT)))
        .doesNotContain("hunter2", "AKIAEXAMPLE", "3f1c9a4e", "credentials");
    assertThat(env)
        .containsEntry("BUILDQUEUE_JOB_ID", "42")
        .containsEntry("BUILDQUEUE_USER_ID", "ada")
        .containsEntry("BUILDQUEUE_JOB_KIND", "shell")
        .containsEntry("BUILDQUEUE_ATTEMPT", "1")
        .containsEntry("BUILDQUEUE_PROGRESS", "0");
    assertThat(env.get("PWD")).endsWith("/work").startsWith(base().toString());
    assertThat(env.get("HOME"))
        .as("the attempt's own home, not the worker's")
        .endsWith("/home")
        .startsWith(base().toString());
    assertThat(env.get("BUILDQUEUE_PAYLOAD")).endsWith("/payload.json");
    assertThat(env.get("BUILDQUEUE_CONTROL")).endsWith("/control.jsonl");
  }

  @Test
  void each_attempt_gets_a_writable_home_of_its_own_that_ends_with_it() throws Exception {
    // What npm, git or gradle do on first use: write settings and caches under $HOME.
    CommandKind kind =
        sh(
            """
        test -w "$HOME" || { echo "HOME $HOME is not writable" >&2; exit 3; }
        if [ -e "$HOME/.npmrc" ]; then echo "left by an earlier job: $(cat "$HOME/.npmrc")" >&2; exit 4; fi
        echo "registry=https://registry.invalid/$BUILDQUEUE_JOB_ID" > "$HOME/.npmrc"
        mkdir -p "$HOME/.cache/tool" && echo "$HOME"
        """);
    // The worker's own HOME does not exist, as in an image whose user has none.
    Map<String, String> worker =
        Map.of("PATH", System.getenv("PATH"), "HOME", tmp.resolve("worker-home").toString());
    ProcessRunner runner = runner(worker);

    RecordingJobContext first = RecordingJobContext.of("shell", "{}");
    RecordingJobContext second = RecordingJobContext.of("shell", "{}");
    assertThat(runner.run(kind, first))
        .as(String.join("\n", first.lines(STDERR)))
        .isEqualTo(JobOutcome.succeeded());
    assertThat(runner.run(kind, second))
        .as(String.join("\n", second.lines(STDERR)))
        .isEqualTo(JobOutcome.succeeded());

    assertThat(first.lines(STDOUT).get(0))
        .startsWith(base().toString())
        .isNotEqualTo(second.lines(STDOUT).get(0));
    assertThat(tmp.resolve("worker-home")).doesNotExist();
    assertDirectoryDeleted();
  }

  @Test
  void the_payload_is_a_file_and_never_an_argument() throws Exception {
    RecordingJobContext ctx =
        RecordingJobContext.of("shell", "{\"title\": \"$(rm -rf /) & friends\"}");
    CommandKind kind = sh("cat \"$BUILDQUEUE_PAYLOAD\"; echo; tr '\\0' ' ' < /proc/$$/cmdline\n");

    assertThat(runner().run(kind, ctx)).isEqualTo(JobOutcome.succeeded());

    assertThat(ctx.lines(STDOUT).get(0)).isEqualTo("{\"title\":\"$(rm -rf /) & friends\"}");
    assertThat(ctx.lines(STDOUT).get(1)).isEqualTo("sh " + kind.command().get(1) + " ");
  }

  @Test
  void durations_read_as_people_write_them() {
    assertThat(ProcessRunner.human(Duration.ofMinutes(15))).isEqualTo("15m");
    assertThat(ProcessRunner.human(Duration.ofSeconds(10))).isEqualTo("10s");
    assertThat(ProcessRunner.human(Duration.ofMinutes(90))).isEqualTo("1h30m");
    assertThat(ProcessRunner.human(Duration.ofMillis(1500))).isEqualTo("1.5s");
    assertThat(ProcessRunner.human(Duration.ofMillis(300))).isEqualTo("300ms");
    assertThat(ProcessRunner.show(List.of("node", "render.js", "a b", "it's")))
        .isEqualTo("node render.js 'a b' 'it'\\''s'");
  }
}
