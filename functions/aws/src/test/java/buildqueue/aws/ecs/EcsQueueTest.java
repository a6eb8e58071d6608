package buildqueue.aws.ecs;

import static buildqueue.aws.fake.FakeEcs.Operation.DESCRIBE_TASKS;
import static buildqueue.aws.fake.FakeEcs.Operation.RUN_TASK;
import static buildqueue.aws.fake.FakeEcs.Operation.STOP_TASK;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.fake.FakeEcs;
import buildqueue.aws.fake.FakeEcs.Answer;
import buildqueue.core.BuildQueue;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.ecs.EcsClient;

/** The queue on real PostgreSQL launching and checking workers on ECS through the fake. */
@ExtendWith(PostgresExtension.class)
class EcsQueueTest {
  static final String CAPACITY =
      "Capacity is unavailable at this time. Please try again later or in a different availability zone";

  TestDatabase db;
  FakeEcs fake;
  EcsClient client;
  QueueClock.Settable clock;
  QueueConfig config;
  BuildQueue queue;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    fake = FakeEcs.start();
    client = fake.newClient();
    clock = new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));
    config = QueueConfig.defaults();
    queue =
        new BuildQueue(
            db.jdbc(),
            new EcsWorkerPlatform(client, EcsWorkerPlatformTest.SETTINGS),
            config,
            clock);
  }

  @AfterEach
  void stop() {
    client.close();
    fake.close();
  }

  long enqueue(String user) {
    return queue.enqueue(user, "demo", new Json("{}"), null).jobId();
  }

  Row job(long id) {
    return db.jdbc()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  List<Row> workers() {
    return db.jdbc().query("select * from build_worker order by id");
  }

  List<Row> liveWorkers() {
    return db.jdbc().query("select * from build_worker where status <> 'exited' order by id");
  }

  @Test
  void enqueue_runs_a_task_with_the_workers_token_and_records_its_arn() {
    long jobId = enqueue("alice");

    Row worker = workers().get(0);
    FakeEcs.TaskView task = fake.tasks().get(0);
    assertThat(fake.tasks()).hasSize(1);
    assertThat(fake.last(RUN_TASK).path("clientToken").asText())
        .isEqualTo(worker.uuid("token").toString());
    assertThat(task.startedBy()).isEqualTo("bq-" + worker.longValue("id"));
    assertThat(task.environment("worker"))
        .containsEntry("BUILDQUEUE_WORKER_ID", worker.longValue("id").toString())
        .containsEntry("BUILDQUEUE_WORKER_TOKEN", worker.uuid("token").toString());
    assertThat(worker.string("task_id")).isEqualTo(task.arn());
    assertThat(worker.string("status")).isEqualTo("launching");
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
    assertThat(job(jobId).longValue("worker_id")).isEqualTo(worker.longValue("id"));
  }

  @Test
  void a_server_error_keeps_the_slot_and_the_ticks_relaunch_with_the_same_token_learns_the_arn() {
    fake.answer(RUN_TASK, Answer.serverError().afterWork(), Answer.serverError());
    long first = enqueue("alice");
    long second = enqueue("bob");

    Row worker = workers().get(0);
    assertThat(workers()).hasSize(1);
    assertThat(worker.string("status")).isEqualTo("launching");
    assertThat(worker.string("task_id")).isNull();
    assertThat(job(first).string("status")).isEqualTo("dispatched");
    assertThat(job(second).string("status")).isEqualTo("queued");

    assertThat(queue.tick().relaunched()).as("no relaunch inside the launch grace").isZero();
    clock.advance(config.launchGrace().plusSeconds(1));
    BuildQueue.TickReport report = queue.tick();

    assertThat(report.relaunched()).isEqualTo(1);
    assertThat(fake.tasks()).hasSize(1);
    assertThat(liveWorkers()).hasSize(1);
    assertThat(liveWorkers().get(0).string("task_id")).isEqualTo(fake.tasks().get(0).arn());
    assertThat(fake.requests(RUN_TASK))
        .hasSize(3)
        .allSatisfy(
            r ->
                assertThat(r.body().path("clientToken").asText())
                    .isEqualTo(worker.uuid("token").toString()));
    assertThat(job(second).string("status")).isEqualTo("queued");
  }

  @Test
  void a_launch_refused_with_request_limit_exceeded_keeps_its_job_and_the_tick_starts_it() {
    fake.answer(RUN_TASK, Answer.requestLimitExceeded());
    long jobId = enqueue("alice");

    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
    assertThat(job(jobId).string("error")).isNull();
    assertThat(liveWorkers()).hasSize(1);
    assertThat(fake.tasks()).isEmpty();

    clock.advance(config.launchGrace().plusSeconds(1));
    assertThat(queue.tick().relaunched()).isEqualTo(1);

    assertThat(fake.tasks()).hasSize(1);
    assertThat(liveWorkers())
        .singleElement()
        .satisfies(w -> assertThat(w.string("task_id")).isEqualTo(fake.tasks().get(0).arn()));
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
  }

  @Test
  void a_capacity_failure_frees_the_slot_and_requeues_the_job_with_backoff() {
    fake.answer(RUN_TASK, Answer.failure(CAPACITY));
    long jobId = enqueue("alice");

    assertThat(liveWorkers()).isEmpty();
    assertThat(workers().get(0).string("exit_reason")).contains("Capacity is unavailable");
    assertThat(job(jobId).string("status")).isEqualTo("queued");
    assertThat(queue.tick().dispatched()).as("backing off").isZero();

    clock.advance(config.launchBackoff().plusSeconds(1));
    queue.tick();

    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
    assertThat(liveWorkers()).hasSize(1);
    assertThat(liveWorkers().get(0).string("task_id")).isEqualTo(fake.tasks().get(0).arn());
    assertThat(fake.requests(RUN_TASK))
        .extracting(r -> r.body().path("clientToken").asText())
        .doesNotHaveDuplicates();
  }

  @Test
  void a_configuration_error_frees_the_slot_and_fails_the_job_with_the_reason() {
    fake.answer(
        RUN_TASK,
        Answer.error(
            400,
            "InvalidParameterException",
            "Error retrieving subnet information for [subnet-0aaa]: The subnet ID 'subnet-0aaa' does not exist"
                + " (ErrorCode: InvalidSubnetID.NotFound)"));
    long jobId = enqueue("alice");

    assertThat(liveWorkers()).isEmpty();
    assertThat(job(jobId).string("status")).isEqualTo("failed");
    assertThat(job(jobId).string("error"))
        .startsWith("Could not start a build worker: ECS refused RunTask: ")
        .contains("InvalidSubnetID.NotFound")
        .endsWith("Check the worker configuration and retry.");
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_stopped_task_seen_by_the_tick_frees_the_slot_and_recovers_the_job() {
    long jobId = enqueue("alice");
    String arn = fake.tasks().get(0).arn();
    Row worker = workers().get(0);
    new buildqueue.core.WorkerTransitions(db.jdbc(), config, clock)
        .start(worker.longValue("id"), worker.uuid("token"))
        .orElseThrow(); // it ran, then died
    fake.stopTask(
        arn,
        "EssentialContainerExited",
        "Essential container in task exited",
        137,
        "OutOfMemoryError: Container killed due to memory usage");

    clock.advance(config.livenessInterval());
    BuildQueue.TickReport report = queue.tick();

    assertThat(report.exited()).isEqualTo(1);
    assertThat(workers().get(0).string("status")).isEqualTo("exited");
    assertThat(workers().get(0).string("exit_reason")).contains("exited 137");
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
    assertThat(job(jobId).longValue("worker_id")).isEqualTo(workers().get(1).longValue("id"));
    assertThat(fake.tasks()).hasSize(2);
  }

  @Test
  void a_missing_task_is_evidence_only_after_the_lease_expired() {
    enqueue("alice");
    fake.forget(fake.tasks().get(0).arn());

    clock.advance(config.livenessInterval());
    queue.tick();
    assertThat(liveWorkers()).hasSize(1);
    assertThat(fake.requests(DESCRIBE_TASKS)).hasSize(1);

    clock.advance(config.lease());
    queue.tick();
    assertThat(workers().get(0).string("status")).isEqualTo("exited");
  }

  @Test
  void cancelling_a_running_job_stops_its_workers_task_so_the_cancel_is_pushed_not_polled() {
    long jobId = enqueue("alice");
    String arn = fake.tasks().get(0).arn();
    Row worker = workers().get(0);
    new buildqueue.core.WorkerTransitions(db.jdbc(), config, clock)
        .start(worker.longValue("id"), worker.uuid("token"))
        .orElseThrow();

    queue.cancel(jobId, "alice");

    // StopTask sends the worker SIGTERM: its graceful stop ends the job cancelled (WorkerStop).
    assertThat(fake.requests(STOP_TASK)).hasSize(1);
    assertThat(fake.last(STOP_TASK).path("task").asText()).isEqualTo(arn);
    assertThat(fake.last(STOP_TASK).path("reason").asText())
        .isEqualTo("job " + jobId + " cancelled");
  }

  @Test
  void cancelling_a_job_whose_worker_has_not_started_stops_its_task_and_the_stop_ends_the_job() {
    long jobId = enqueue("alice");
    String arn = fake.tasks().get(0).arn();

    queue.cancel(jobId, "alice");

    assertThat(fake.last(STOP_TASK).path("task").asText()).isEqualTo(arn);
    assertThat(fake.last(STOP_TASK).path("reason").asText())
        .contains("job " + jobId + " cancelled");
    assertThat(liveWorkers()).as("the slot waits for the stop evidence").hasSize(1);

    clock.advance(config.livenessInterval());
    queue.tick();

    assertThat(liveWorkers()).isEmpty();
    assertThat(job(jobId).string("status")).isEqualTo("cancelled");
  }

  @Test
  void a_running_task_past_its_lease_is_stopped_and_its_slot_waits_for_the_evidence() {
    enqueue("alice");
    String arn = fake.tasks().get(0).arn();
    fake.setLastStatus(arn, "RUNNING");

    clock.advance(config.lease().plus(Duration.ofSeconds(1)));
    BuildQueue.TickReport report = queue.tick();

    assertThat(report.stopRequests()).isEqualTo(1);
    assertThat(fake.task(arn).lastStatus()).isEqualTo("STOPPED");
    assertThat(liveWorkers()).hasSize(1);

    clock.advance(config.livenessInterval());
    queue.tick();
    assertThat(workers().get(0).string("status")).isEqualTo("exited");
    assertThat(workers().get(0).string("exit_reason"))
        .contains("UserInitiated")
        .contains("outlived its lease");
  }

  // ---- deploys: refusals a deploy window causes back off, never fail a job at first sight -----

  /**
   * IAM denies RunTask for good (a policy that never allows the launch): each refusal puts the job
   * back with a doubling backoff, and at the launch-failure limit it fails with an error naming the
   * refusal and the fix, not at first sight.
   */
  @Test
  void a_denied_launch_backs_off_under_the_limit_and_then_fails_naming_iam() {
    fake.useClock(clock::now);
    fake.denyRunTaskUntil(Instant.MAX);
    long jobId = enqueue("alice");
    List<Instant> refusedAt = new java.util.ArrayList<>();
    refusedAt.add(clock.now());

    for (int i = 0; i < 600 && !job(jobId).string("status").equals("failed"); i++) {
      assertThat(job(jobId).string("status")).isEqualTo("queued");
      assertThat(job(jobId).string("error")).isNull();
      int before = fake.count(RUN_TASK);
      clock.advance(Duration.ofSeconds(1));
      queue.tick();
      if (fake.count(RUN_TASK) > before) {
        refusedAt.add(clock.now());
      }
    }

    assertThat(job(jobId).string("status")).isEqualTo("failed");
    assertThat(job(jobId).intValue("launch_failures")).isEqualTo(config.maxLaunchFailures());
    assertThat(refusedAt).hasSize(config.maxLaunchFailures());
    for (int n = 1; n < refusedAt.size(); n++) {
      assertThat(Duration.between(refusedAt.get(n - 1), refusedAt.get(n)))
          .as("backoff before attempt %d", n + 1)
          .isGreaterThanOrEqualTo(config.launchBackoff().multipliedBy(1L << (n - 1)));
    }
    assertThat(job(jobId).string("error"))
        .startsWith(
            "Could not start a build worker after "
                + config.maxLaunchFailures()
                + " attempts: ECS refused RunTask (IAM denied the call")
        .contains("ecs:RunTask on task-definition/<family>:*")
        .contains("AccessDeniedException: User: ")
        .endsWith("Retry later.");
    assertThat(fake.tasks()).isEmpty();
  }

  /**
   * A redeploy while jobs run and wait: the stack registers a new revision and deregisters the one
   * in use, IAM denies RunTask for a while as the new policy propagates, and the live alias stays
   * on the old function version (which names the old revision, now INACTIVE) for a while longer.
   * Running jobs finish, waiting ones are refused, back off and run once the alias is on the new
   * version, which launches by family; none fails, none runs twice, no slot ever has two tasks.
   */
  @Test
  void a_deploy_that_deregisters_the_revision_in_use_mid_run_strands_no_job_and_runs_each_once() {
    fake.useClock(clock::now);
    config = QueueConfig.defaults().withSharedSlots(2).withChainWindow(Duration.ZERO);
    EcsSettings oldVersion =
        new EcsSettings(
            EcsWorkerPlatformTest.CLUSTER,
            FakeEcs.TASK_DEFINITION + ":1",
            EcsWorkerPlatformTest.SETTINGS.subnets(),
            EcsWorkerPlatformTest.SETTINGS.securityGroups(),
            false,
            "worker");
    LiveAlias alias = new LiveAlias(new EcsWorkerPlatform(client, oldVersion));
    queue = new BuildQueue(db.jdbc(), alias, config, clock);
    buildqueue.core.WorkerTransitions workers =
        new buildqueue.core.WorkerTransitions(db.jdbc(), config, clock);
    List<Long> jobs = new java.util.ArrayList<>();
    for (String user : List.of("alice", "bob", "carol", "alice", "bob", "carol")) {
      jobs.add(enqueue(user));
    }
    java.util.Map<Long, Integer> runs = new java.util.HashMap<>();
    playWorkers(workers, runs, false);
    assertThat(db.jdbc().query("select * from build_job where status = 'running'")).hasSize(2);
    assertThat(fake.tasks())
        .extracting(FakeEcs.TaskView::taskDefinitionArn)
        .containsOnly(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, 1));

    int revision = fake.registerRevision(FakeEcs.TASK_DEFINITION);
    fake.deregister(FakeEcs.TASK_DEFINITION, 1);
    Instant deployed = clock.now();
    fake.denyRunTaskUntil(deployed.plusSeconds(40));
    for (int i = 0;
        i < 120 && !jobs.stream().allMatch(id -> job(id).string("status").equals("succeeded"));
        i++) {
      if (alias.old() && !clock.now().isBefore(deployed.plusSeconds(100))) {
        alias.moveTo(new EcsWorkerPlatform(client, EcsWorkerPlatformTest.SETTINGS));
      }
      playWorkers(workers, runs, true);
      assertNoSlotRunsTwoTasks();
      assertThat(jobs)
          .allSatisfy(id -> assertThat(job(id).string("status")).isNotIn("failed", "cancelled"));
      clock.advance(Duration.ofSeconds(5));
      queue.tick();
    }

    assertThat(jobs).allSatisfy(id -> assertThat(job(id).string("status")).isEqualTo("succeeded"));
    assertThat(runs)
        .as("each job ran exactly once")
        .hasSize(jobs.size())
        .allSatisfy((id, n) -> assertThat(n).isOne());
    assertThat(fake.replies(RUN_TASK))
        .extracting(FakeEcs.Reply::errorType)
        .as("the deploy's windows were met")
        .contains("AccessDeniedException", "InvalidParameterException");
    assertThat(fake.replies(RUN_TASK))
        .filteredOn(r -> "InvalidParameterException".equals(r.errorType()))
        .allSatisfy(
            r ->
                assertThat(r.body().path("message").asText())
                    .isEqualTo("TaskDefinition is inactive"));
    assertThat(db.jdbc().query("select * from build_job where launch_failures > 0"))
        .as("jobs that backed off")
        .isNotEmpty();
    assertThat(fake.tasks())
        .hasSize(jobs.size())
        .filteredOn(t -> !t.taskDefinitionArn().endsWith(":1"))
        .extracting(FakeEcs.TaskView::taskDefinitionArn)
        .hasSize(jobs.size() - 2)
        .containsOnly(FakeEcs.taskDefinitionArn(FakeEcs.TASK_DEFINITION, revision));
  }

  /**
   * The first RunTask started the task but its answer was lost; the tick's relaunch, with the same
   * token, meets a deploy's IAM denial, which says nothing of that first call. The slot stays held
   * (no second worker, no second task for the job), and the relaunch after the window learns the
   * first task.
   */
  @Test
  void a_relaunch_denied_mid_deploy_holds_the_slot_and_then_learns_the_first_task() {
    fake.useClock(clock::now);
    fake.answer(RUN_TASK, Answer.serverError().afterWork(), Answer.serverError());
    long jobId = enqueue("alice");
    String first = fake.tasks().get(0).arn();
    Row worker = liveWorkers().get(0);
    fake.denyRunTaskUntil(clock.now().plus(config.launchGrace()).plusSeconds(30));

    clock.advance(config.launchGrace().plusSeconds(1));
    assertThat(queue.tick().relaunched()).isEqualTo(1);

    assertThat(fake.replies(RUN_TASK).get(fake.replies(RUN_TASK).size() - 1).errorType())
        .isEqualTo("AccessDeniedException");
    assertThat(liveWorkers())
        .singleElement()
        .satisfies(
            w -> {
              assertThat(w.longValue("id")).isEqualTo(worker.longValue("id"));
              assertThat(w.string("task_id")).isNull();
            });
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
    assertThat(job(jobId).intValue("launch_failures")).isZero();

    clock.advance(config.launchGrace().plusSeconds(1));
    assertThat(queue.tick().relaunched()).isEqualTo(1);

    assertThat(fake.tasks()).singleElement().satisfies(t -> assertThat(t.arn()).isEqualTo(first));
    assertThat(liveWorkers())
        .singleElement()
        .satisfies(w -> assertThat(w.string("task_id")).isEqualTo(first));
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
  }

  /**
   * Plays the workers: a launched task starts running and its worker takes its job; with {@code
   * finish}, a running worker ends its job, and its task stops as a worker process exits.
   */
  private void playWorkers(
      buildqueue.core.WorkerTransitions workers,
      java.util.Map<Long, Integer> runs,
      boolean finish) {
    for (Row w : liveWorkers()) {
      String task = w.string("task_id");
      if (task == null || fake.task(task).lastStatus().equals("STOPPED")) {
        continue;
      }
      long id = w.longValue("id");
      if (w.string("status").equals("launching")) {
        fake.setLastStatus(task, "RUNNING");
        workers
            .start(id, w.uuid("token"))
            .orElseThrow()
            .job()
            .ifPresent(j -> runs.merge(j.id(), 1, Integer::sum));
      } else if (finish && w.string("status").equals("running")) {
        long jobId =
            db.jdbc()
                .query(
                    "select id from build_job where worker_id = :w and status = 'running'",
                    Params.of("w", id))
                .get(0)
                .longValue("id");
        assertThat(
                workers.end(id, w.uuid("token"), jobId, buildqueue.core.JobStatus.SUCCEEDED, null))
            .isInstanceOf(buildqueue.core.WorkerTransitions.Ended.Drained.class);
        fake.stopTask(
            task, "EssentialContainerExited", "Essential container in task exited", 0, null);
      }
    }
  }

  /** A function's live alias: the version it points at, moved by a deploy. */
  private static final class LiveAlias implements buildqueue.platform.WorkerPlatform {
    private volatile EcsWorkerPlatform version;
    private volatile boolean moved;

    LiveAlias(EcsWorkerPlatform version) {
      this.version = version;
    }

    boolean old() {
      return !moved;
    }

    void moveTo(EcsWorkerPlatform next) {
      version = next;
      moved = true;
    }

    @Override
    public buildqueue.platform.LaunchOutcome launch(buildqueue.platform.WorkerLaunch launch) {
      return version.launch(launch);
    }

    @Override
    public java.util.Map<String, buildqueue.platform.TaskState> check(
        java.util.Collection<String> taskIds) {
      return version.check(taskIds);
    }

    @Override
    public boolean canCheck(String taskId) {
      return version.canCheck(taskId);
    }

    @Override
    public void stop(String taskId, String reason) {
      version.stop(taskId, reason);
    }

    @Override
    public buildqueue.platform.CallRates callRates() {
      return version.callRates();
    }
  }

  // ---- client token lifetime on the relaunch path ------------------------------------------

  /**
   * The first RunTask started a task but its answer was lost, and relaunches keep failing until the
   * last moment the lease allows one. ECS keeps the token while the task runs (up to 24 h), so that
   * last relaunch still learns the first task instead of starting a second.
   */
  @Test
  void a_relaunch_at_the_end_of_the_lease_still_finds_the_first_task_and_starts_no_second() {
    fake.useClock(clock::now);
    fake.answer(RUN_TASK, Answer.serverError().afterWork());
    fake.answerAlways(RUN_TASK, Answer.serverError());
    long jobId = enqueue("alice");
    String first = fake.tasks().get(0).arn();
    fake.setLastStatus(first, "RUNNING");
    Instant expiresAt = liveWorkers().get(0).instant("expires_at");

    clock.advance(config.launchGrace().plusSeconds(1));
    assertThat(queue.tick().relaunched()).isEqualTo(1);
    assertThat(liveWorkers().get(0).string("task_id")).isNull();
    fake.answerNormally(RUN_TASK);
    clock.set(expiresAt.minusSeconds(1));
    assertThat(queue.tick().relaunched()).isEqualTo(1);

    assertThat(fake.tasks()).hasSize(1);
    assertThat(liveWorkers())
        .singleElement()
        .satisfies(w -> assertThat(w.string("task_id")).isEqualTo(first));
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
  }

  /**
   * Why {@code AwsSettings} caps the lease: were it longer than ECS keeps the token, a relaunch
   * after 24 h would start a second task for the worker while the first still runs.
   */
  @Test
  void with_a_lease_past_the_client_tokens_24_hours_a_late_relaunch_would_start_a_second_task() {
    config =
        QueueConfig.defaults()
            .withLease(Duration.ofHours(30), Duration.ofMinutes(5), Duration.ofSeconds(60));
    queue =
        new BuildQueue(
            db.jdbc(),
            new EcsWorkerPlatform(client, EcsWorkerPlatformTest.SETTINGS),
            config,
            clock);
    fake.useClock(clock::now);
    fake.answer(RUN_TASK, Answer.serverError().afterWork());
    fake.answerAlways(RUN_TASK, Answer.serverError());
    enqueue("alice");
    String first = fake.tasks().get(0).arn();
    fake.setLastStatus(first, "RUNNING");
    fake.answerNormally(RUN_TASK);

    clock.advance(Duration.ofHours(24).plusSeconds(1));
    queue.tick();

    assertThat(config.lease()).isGreaterThan(buildqueue.aws.AwsSettings.MAX_LEASE);
    assertThat(fake.tasks())
        .extracting(FakeEcs.TaskView::lastStatus)
        .containsExactly("RUNNING", "PROVISIONING");
    assertThat(liveWorkers())
        .singleElement()
        .satisfies(w -> assertThat(w.string("task_id")).isEqualTo(fake.tasks().get(1).arn()));
  }

  // ---- request rates ------------------------------------------------------------------------

  /**
   * 60 launches at once meet ECS's documented rates (Fargate RunTask: 20 calls a second): the first
   * 20 start, the rest are throttled and hold their slots as unknown launches, and each tick
   * relaunches them with their own tokens as the buckets refill, until every launch has its task.
   * No slot ever has a second task, on ECS or in the database.
   */
  @Test
  void
      a_burst_of_launches_meets_ecs_throttling_yet_every_launch_resolves_and_no_slot_runs_two_tasks() {
    int jobs = 60;
    QueueConfig burst = QueueConfig.defaults().withSharedSlots(jobs);
    // The SDK's own retries would wait in real time; the fake's buckets refill on the queue's
    // clock.
    EcsClient once = fake.newClient(fake.clientSettings().withMaxAttempts(1));
    BuildQueue burstQueue =
        new BuildQueue(
            db.jdbc(), new EcsWorkerPlatform(once, EcsWorkerPlatformTest.SETTINGS), burst, clock);
    fake.useClock(clock::now);

    for (int i = 0; i < jobs; i++) {
      burstQueue.enqueue("user-" + i, "demo", new Json("{}"), null);
    }
    assertThat(fake.replies(RUN_TASK))
        .extracting(FakeEcs.Reply::errorType)
        .contains("ThrottlingException");
    int ticks = 0;
    while (!unresolved().isEmpty() && ticks < 20) {
      assertNoSlotRunsTwoTasks();
      clock.advance(burst.launchGrace().plusSeconds(1));
      burstQueue.tick();
      ticks++;
    }
    once.close();

    assertThat(unresolved()).isEmpty();
    assertThat(liveWorkers()).hasSize(jobs);
    assertThat(fake.tasks()).hasSize(jobs);
    assertThat(fake.tasks()).extracting(FakeEcs.TaskView::clientToken).doesNotHaveDuplicates();
    assertNoSlotRunsTwoTasks();
    assertThat(
            db.jdbc()
                .query("select count(*) as n from build_job where status = 'dispatched'")
                .get(0)
                .longValue("n"))
        .isEqualTo(jobs);
    assertThat(ticks)
        .as("ticks to resolve %d launches at 20 RunTask calls a second", jobs)
        .isBetween(2, 10);
  }

  /**
   * The same burst, with the tick timed on the queue's clock (its pacing waits move it, as real
   * waits move real time): it spends RunTask's rate as it refills, 20 calls a second, so one tick
   * relaunches every throttled launch without being throttled itself, over the real SDK client.
   */
  @Test
  void a_tick_paced_to_ecs_rates_relaunches_a_throttled_burst_in_one_go_without_being_throttled() {
    int jobs = 200;
    QueueConfig burst = QueueConfig.defaults().withSharedSlots(100);
    EcsClient once = fake.newClient(fake.clientSettings().withMaxAttempts(1));
    BuildQueue burstQueue =
        new BuildQueue(
            db.jdbc(), new EcsWorkerPlatform(once, EcsWorkerPlatformTest.SETTINGS), burst, clock);
    fake.useClock(clock::now);
    for (int i = 0; i < jobs; i++) {
      burstQueue.setDedicated("user-" + i, true);
      burstQueue.enqueue("user-" + i, "demo", new Json("{}"), null);
    }
    long throttledByTheBurst = throttledRunTasks();
    // Each throttled launch is unresolved; so is one whose answer the loaded machine timed out.
    int unresolvedByTheBurst = unresolved().size();
    assertThat(unresolvedByTheBurst).isGreaterThanOrEqualTo((int) throttledByTheBurst);
    assertThat(throttledByTheBurst).isGreaterThan(100);

    clock.advance(burst.launchGrace().plusSeconds(1));
    BuildQueue.TickReport report = burstQueue.tick(lambdaBudgetOnTheClock());
    once.close();

    assertThat(report.cutShort()).isEmpty();
    assertThat(report.relaunched()).isEqualTo(unresolvedByTheBurst);
    assertThat(unresolved()).isEmpty();
    assertThat(throttledRunTasks())
        .as("throttled answers: only the burst's")
        .isEqualTo(throttledByTheBurst);
    assertThat(fake.tasks()).hasSize(jobs);
    assertThat(fake.tasks()).extracting(FakeEcs.TaskView::clientToken).doesNotHaveDuplicates();
    assertNoSlotRunsTwoTasks();
  }

  /**
   * A thousand live workers in a thousand lanes, one in ten of whose tasks stopped with its event
   * lost, and the account's DescribeTasks bucket nearly spent by other callers: one tick checks
   * them all in batches of 100, waiting for the bucket to refill rather than running into it, and
   * finds every stopped task, over the real SDK client and the fake's throttling.
   */
  @Test
  void
      a_tick_paced_to_ecs_rates_checks_a_thousand_workers_and_finds_every_lost_stop_without_being_throttled() {
    int lanes = 1_000;
    fake.useClock(clock::now);
    EcsClient once = fake.newClient(fake.clientSettings().withMaxAttempts(1));
    EcsWorkerPlatform platform = new EcsWorkerPlatform(once, EcsWorkerPlatformTest.SETTINGS);
    BuildQueue checking = new BuildQueue(db.jdbc(), platform, config, clock);
    int lost = 0;
    for (int i = 0; i < lanes; i++) {
      String arn = fake.addTask(EcsWorkerPlatformTest.CLUSTER, "RUNNING");
      Rows.worker()
          .lane("user:u" + i)
          .runningSince(clock.now())
          .task(arn)
          .expiresAt(clock.now().plus(Duration.ofMinutes(65)))
          .insert(db.jdbc());
      if (i % 10 == 7) {
        fake.stopTask(
            arn, "EssentialContainerExited", "Essential container in task exited", 0, null);
        lost++;
      }
    }
    String other = fake.addTask(EcsWorkerPlatformTest.CLUSTER, "RUNNING");
    for (int i = 0; i < 95; i++) {
      platform.check(List.of(other)); // the stop handler and the API have spent most of the bucket
    }
    int before = fake.requests(DESCRIBE_TASKS).size();

    clock.advance(Duration.ofMinutes(1));
    BuildQueue.TickReport report = checking.tick(lambdaBudgetOnTheClock());
    once.close();

    assertThat(report.cutShort()).isEmpty();
    assertThat(report.checked()).isEqualTo(lanes);
    assertThat(report.exited()).isEqualTo(lost);
    assertThat(fake.requests(DESCRIBE_TASKS).subList(before, fake.requests(DESCRIBE_TASKS).size()))
        .hasSize(lanes / EcsWorkerPlatform.DESCRIBE_BATCH)
        .allSatisfy(
            r ->
                assertThat(r.body().path("tasks").size())
                    .isEqualTo(EcsWorkerPlatform.DESCRIBE_BATCH));
    assertThat(fake.replies(DESCRIBE_TASKS))
        .extracting(FakeEcs.Reply::errorType)
        .containsOnlyNulls();
    assertThat(liveWorkers()).hasSize(lanes - lost);
  }

  /**
   * What the Lambda's timeout leaves a tick, timed on the queue's clock: its pacing waits move the
   * clock, as real waits move real time, and so refill the fake's buckets.
   */
  private buildqueue.core.TickBudget lambdaBudgetOnTheClock() {
    return new buildqueue.core.TickBudget(
        Duration.ofSeconds(45),
        new buildqueue.core.MonotonicClock() {
          @Override
          public long nanoTime() {
            return clock.now().getEpochSecond() * 1_000_000_000L + clock.now().getNano();
          }

          @Override
          public void sleep(Duration d) {
            clock.advance(d);
          }
        });
  }

  private long throttledRunTasks() {
    return fake.replies(RUN_TASK).stream()
        .filter(r -> "ThrottlingException".equals(r.errorType()))
        .count();
  }

  private List<Row> unresolved() {
    return db.jdbc()
        .query("select * from build_worker where status <> 'exited' and task_id is null");
  }

  /** Tasks not yet stopped, by the slot of the worker each was started for; at most one each. */
  private void assertNoSlotRunsTwoTasks() {
    java.util.Map<String, String> slotOfWorker = new java.util.HashMap<>();
    workers().forEach(w -> slotOfWorker.put("bq-" + w.longValue("id"), w.string("slot")));
    java.util.Map<String, Long> liveTasksBySlot =
        fake.tasks().stream()
            .filter(t -> !"STOPPED".equals(t.lastStatus()))
            .collect(
                java.util.stream.Collectors.groupingBy(
                    t -> slotOfWorker.get(t.startedBy()), java.util.stream.Collectors.counting()));
    assertThat(liveTasksBySlot.values()).allMatch(n -> n == 1);
    assertThat(liveWorkers()).extracting(w -> w.string("slot")).doesNotHaveDuplicates();
  }
}
