package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.QueueConfig;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.Await;
import buildqueue.testing.Procs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalProcessPlatformTest {
  private static final String HOST = LocalProcessPlatform.thisHost();
  @TempDir Path data;
  private final List<LocalProcessPlatform> platforms = new CopyOnWriteArrayList<>();
  private final List<String> stops = new CopyOnWriteArrayList<>();

  private LocalProcessPlatform platform() {
    return platform(data);
  }

  private LocalProcessPlatform platform(Path dataDir) {
    return platform(dataDir, Sleeper.class);
  }

  private LocalProcessPlatform platform(Path dataDir, Class<?> standIn) {
    LocalProcessPlatform p =
        new LocalProcessPlatform(
            WorkerCommand.forThisJvm().withMainClass(standIn.getName()),
            new LocalProcessPlatform.WorkerDatabase(
                "jdbc:postgresql://localhost:1/none", null, null),
            QueueConfig.defaults(),
            LocalProcessPlatform.Directories.under(dataDir),
            HOST,
            java.util.Optional.empty());
    p.onStopped(
        (taskId, workerId, token, reason) ->
            stops.add(taskId + " " + workerId + " " + token + " " + reason));
    platforms.add(p);
    return p;
  }

  @AfterEach
  void killStandIns() {
    platforms.forEach(
        p ->
            p.liveWorkers()
                .forEach(
                    id -> ProcessHandle.of(id.pid()).ifPresent(ProcessHandle::destroyForcibly)));
    platforms.forEach(LocalProcessPlatform::close);
  }

  private static String started(LaunchOutcome outcome) {
    assertThat(outcome).isInstanceOf(LaunchOutcome.Started.class);
    return ((LaunchOutcome.Started) outcome).taskId();
  }

  private static long processesLabelled(UUID token) {
    String label = WorkerProcesses.LABEL_PROPERTY + WorkerProcesses.label(token);
    return ProcessHandle.allProcesses()
        .filter(
            p -> WorkerProcesses.arguments(p).map(a -> List.of(a).contains(label)).orElse(false))
        .count();
  }

  @Test
  void a_live_process_with_its_start_time_is_running() {
    ProcessHandle me = ProcessHandle.current();
    LocalTaskId id = LocalTaskId.of(HOST, me, me.info().startInstant().orElseThrow());
    assertThat(platform().check(List.of(id.toString())))
        .containsEntry(id.toString(), new TaskState.Running());
  }

  @Test
  void a_reused_pid_is_not_our_worker() {
    ProcessHandle me = ProcessHandle.current();
    Instant otherStart = me.info().startInstant().orElseThrow().minusSeconds(3600);
    String taskId = LocalTaskId.of(HOST, me, otherStart).toString();

    TaskState state = platform().check(List.of(taskId)).get(taskId);

    assertThat(state).isInstanceOf(TaskState.Stopped.class);
    assertThat(((TaskState.Stopped) state).reason()).contains("another process");
  }

  @Test
  void a_worker_on_another_host_is_left_to_its_lease() {
    String elsewhere =
        new LocalTaskId("some-other-host", ProcessHandle.current().pid(), 1L).toString();
    LocalProcessPlatform platform = platform();

    assertThat(platform.canCheck(elsewhere)).isFalse();
    assertThat(platform.check(List.of(elsewhere)))
        .containsEntry(elsewhere, new TaskState.Missing());
    assertThat(platform.canCheck("arn:aws:ecs:eu-west-1:123:task/c/abc")).isFalse();
  }

  @Test
  void launching_twice_with_one_token_starts_one_process_whose_exit_is_stop_evidence() {
    LocalProcessPlatform platform = platform();
    WorkerLaunch launch = new WorkerLaunch(7, UUID.randomUUID(), "shared", "shared#1");

    String taskId = started(platform.launch(launch));
    String again = started(platform.launch(launch));

    assertThat(again).isEqualTo(taskId);
    assertThat(processesLabelled(launch.token())).isEqualTo(1);
    assertThat(platform.canCheck(taskId)).isTrue();
    assertThat(platform.check(List.of(taskId))).containsEntry(taskId, new TaskState.Running());

    platform.stop(taskId, "test stops it");
    Await.until("the exit to be delivered", () -> !stops.isEmpty());
    assertThat(stops)
        .singleElement()
        .asString()
        .startsWith(
            taskId + " 7 " + launch.token() + " worker process ended with code 143 (signal 15");
    assertThat(platform.check(List.of(taskId)).get(taskId)).isInstanceOf(TaskState.Stopped.class);
  }

  @Test
  void a_restarted_server_answers_a_relaunch_with_the_process_still_running() {
    WorkerLaunch launch = new WorkerLaunch(9, UUID.randomUUID(), "user:ada", "user:ada#1");
    String taskId = started(platform().launch(launch));

    LocalProcessPlatform restarted = platform();
    String relaunched = started(restarted.launch(launch));

    assertThat(relaunched).isEqualTo(taskId);
    assertThat(processesLabelled(launch.token())).isEqualTo(1);
    assertThat(restarted.liveWorkers()).extracting(LocalTaskId::toString).contains(taskId);
    ProcessHandle.of(LocalTaskId.parse(taskId).orElseThrow().pid()).orElseThrow().destroyForcibly();
    Await.until(
        "the adopted worker's exit to be delivered",
        () -> stops.stream().anyMatch(s -> s.contains("restart")));
    assertThat(stops)
        .filteredOn(s -> s.contains("restart"))
        .singleElement()
        .asString()
        .startsWith(taskId + " 9 null ");
  }

  @Test
  void a_server_never_adopts_the_workers_of_another_data_directory(@TempDir Path otherData) {
    WorkerLaunch launch = new WorkerLaunch(11, UUID.randomUUID(), "shared", "shared#1");
    String taskId = started(platform().launch(launch));

    LocalProcessPlatform other = platform(otherData);

    // Another server on this host, with its own database, must not take this worker for its own:
    // it would deliver its exit to the wrong queue, or kill it when it stops.
    assertThat(other.liveWorkers()).extracting(LocalTaskId::toString).doesNotContain(taskId);
    assertThat(platform().liveWorkers()).extracting(LocalTaskId::toString).contains(taskId);
  }

  /** Fields 4 (process group) and 5 (session) of {@code /proc/<pid>/stat}. */
  private static long[] groupAndSession(long pid) throws Exception {
    String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return new long[] {Long.parseLong(f[2]), Long.parseLong(f[3])};
  }

  @Test
  void a_worker_leads_a_session_of_its_own_so_a_terminals_ctrl_c_to_the_server_does_not_reach_it()
      throws Exception {
    LocalProcessPlatform platform = platform();
    String taskId =
        started(platform.launch(new WorkerLaunch(13, UUID.randomUUID(), "shared", "shared#1")));
    long pid = LocalTaskId.parse(taskId).orElseThrow().pid();

    // Right after the fork the child is still in ours, until setsid runs in it and execs the JVM in
    // its place.
    Await.until(
        "the worker, the very process watched, to lead its own process group and session",
        () -> {
          try {
            return java.util.Arrays.equals(groupAndSession(pid), new long[] {pid, pid});
          } catch (Exception e) {
            return false;
          }
        });
    assertThat(groupAndSession(pid)[1])
        .isNotEqualTo(groupAndSession(ProcessHandle.current().pid())[1]);
    assertThat(ProcessHandle.of(pid).flatMap(ProcessHandle::parent).map(ProcessHandle::pid))
        .as("still the server's child")
        .contains(ProcessHandle.current().pid());
    assertThat(platform.check(List.of(taskId))).containsEntry(taskId, new TaskState.Running());
  }

  @Test
  void stopping_the_workers_sends_each_sigterm_and_returns_once_every_exit_is_delivered()
      throws Exception {
    LocalProcessPlatform platform = platform();
    String first =
        started(platform.launch(new WorkerLaunch(21, UUID.randomUUID(), "shared", "shared#1")));
    String second =
        started(platform.launch(new WorkerLaunch(22, UUID.randomUUID(), "user:ada", "user:ada#1")));
    platform.stopLaunching();

    assertThat(platform.stopWorkers(Duration.ofSeconds(30))).isTrue();

    assertThat(platform.liveWorkers()).isEmpty();
    assertThat(stops).hasSize(2).allSatisfy(s -> assertThat(s).contains("code 143 (signal 15"));
    assertThat(stops)
        .anySatisfy(s -> assertThat(s).startsWith(first + " 21 "))
        .anySatisfy(s -> assertThat(s).startsWith(second + " 22 "));
  }

  @Test
  void a_worker_that_does_not_stop_within_the_grace_is_killed_before_stopping_the_workers_returns()
      throws Exception {
    LocalProcessPlatform platform = platform(data, StubbornWorker.class);
    String taskId =
        started(platform.launch(new WorkerLaunch(23, UUID.randomUUID(), "shared", "shared#1")));
    long pid = LocalTaskId.parse(taskId).orElseThrow().pid();
    Path log = data.resolve("workers").resolve("worker-23.log");
    Await.until(
        "the stand-in to ignore SIGTERM",
        () -> {
          try {
            return Files.exists(log) && Files.readString(log).contains(StubbornWorker.READY);
          } catch (java.io.IOException e) {
            return false;
          }
        });
    platform.stopLaunching();

    assertThat(platform.stopWorkers(Duration.ofSeconds(1))).isTrue();

    assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive))
        .isNotEqualTo(java.util.Optional.of(true));
    assertThat(stops)
        .singleElement()
        .asString()
        .startsWith(taskId + " 23 ")
        .contains("code 137 (signal 9");
  }

  @Test
  void a_server_that_is_shutting_down_starts_nothing_and_keeps_the_slot() {
    LocalProcessPlatform platform = platform();
    platform.stopLaunching();
    WorkerLaunch launch = new WorkerLaunch(11, UUID.randomUUID(), "shared", "shared#1");

    LaunchOutcome outcome = platform.launch(launch);

    assertThat(outcome).isInstanceOf(LaunchOutcome.Unknown.class);
    assertThat(processesLabelled(launch.token())).isZero();
  }

  @Test
  void a_worker_that_cannot_be_started_fails_its_launch_with_a_reason() {
    LocalProcessPlatform platform =
        new LocalProcessPlatform(
            new WorkerCommand("/nonexistent/java", "", List.of(), WorkerCommand.WORKER_MAIN),
            new LocalProcessPlatform.WorkerDatabase(
                "jdbc:postgresql://localhost:1/none", null, null),
            QueueConfig.defaults(),
            LocalProcessPlatform.Directories.under(data),
            HOST,
            java.util.Optional.empty());
    platforms.add(platform);

    LaunchOutcome outcome =
        platform.launch(new WorkerLaunch(12, UUID.randomUUID(), "shared", "shared#1"));

    assertThat(outcome)
        .isInstanceOfSatisfying(
            LaunchOutcome.NotStarted.class,
            n -> {
              assertThat(n.retryable()).isFalse();
              assertThat(n.reason()).contains("/nonexistent/java");
            });
  }

  @Test
  void a_dead_workers_leftover_job_processes_are_killed_before_its_exit_is_delivered()
      throws Exception {
    LocalProcessPlatform platform =
        new LocalProcessPlatform(
            WorkerCommand.forThisJvm().withMainClass(JobRunningWorker.class.getName()),
            new LocalProcessPlatform.WorkerDatabase(
                "jdbc:postgresql://localhost:1/none", null, null),
            QueueConfig.defaults(),
            LocalProcessPlatform.Directories.under(data),
            HOST,
            java.util.Optional.empty());
    platforms.add(platform);
    Path pids = data.resolve("pids-21");
    List<Boolean> jobAliveAtDelivery = new CopyOnWriteArrayList<>();
    platform.onStopped(
        (taskId, workerId, token, reason) ->
            jobAliveAtDelivery.add(Procs.pidsIn(pids).stream().anyMatch(Procs::alive)));
    String taskId =
        started(platform.launch(new WorkerLaunch(21, UUID.randomUUID(), "shared", "shared#1")));
    Await.until(
        "the worker's job to start", Duration.ofSeconds(60), () -> Procs.pidsIn(pids).size() == 2);
    List<Long> jobPids = Procs.pidsIn(pids);
    try {
      assertThat(jobPids).allMatch(Procs::alive);
      Path workDir = data.resolve("work").resolve("worker-21");
      assertThat(workDir).isDirectory();

      // Killed outright: the worker itself can clean nothing up.
      ProcessHandle.of(LocalTaskId.parse(taskId).orElseThrow().pid())
          .orElseThrow()
          .destroyForcibly();

      Await.until("the exit to be delivered", () -> !jobAliveAtDelivery.isEmpty());
      assertThat(jobAliveAtDelivery).containsExactly(false);
      assertThat(jobPids).noneMatch(Procs::alive);
      assertThat(Procs.inSessionOrGroup(jobPids.get(1))).isEmpty();
      assertThat(workDir).doesNotExist();
      assertThat(platform.check(List.of(taskId)).get(taskId)).isInstanceOf(TaskState.Stopped.class);
    } finally {
      jobPids.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
    }
  }

  @Test
  void a_new_server_kills_what_the_jobs_of_workers_that_died_unwatched_left_running()
      throws Exception {
    // What a worker that died while no server ran leaves: a job directory whose session still runs.
    Path job =
        Files.createDirectories(data.resolve("work").resolve("worker-33").resolve("job-5-1-abc"));
    Process orphan = new ProcessBuilder("setsid", "sleep", "1000").start();
    try {
      Files.writeString(
          job.resolve("session"),
          Files.readString(Path.of("/proc", Long.toString(orphan.pid()), "stat")));

      platform();

      assertThat(Procs.alive(orphan.pid())).isFalse();
      assertThat(data.resolve("work").resolve("worker-33")).doesNotExist();
    } finally {
      orphan.destroyForcibly();
    }
  }

  @Test
  void task_ids_round_trip_and_foreign_ones_are_not_parsed() {
    LocalTaskId id = new LocalTaskId("box-1", 4242, 1_700_000_000_123L);
    assertThat(LocalTaskId.parse(id.toString())).contains(id);
    assertThat(id.toString()).isEqualTo("local:box-1:4242:1700000000123");
    for (String other :
        new String[] {null, "inproc-1", "local:h:x:1", "local:h:1", "arn:aws:ecs:task/x"}) {
      assertThat(LocalTaskId.parse(other)).as(String.valueOf(other)).isEmpty();
    }
  }
}
