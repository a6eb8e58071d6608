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
  static final String CAPACITY = "Capacity is unavailable at this time. Please try again later or in a different availability zone";

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
    queue = new BuildQueue(db.jdbc(), new EcsWorkerPlatform(client, EcsWorkerPlatformTest.SETTINGS), config, clock);
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
    return db.jdbc().queryOptional("select * from build_job where id = :id", Params.of("id", id)).orElseThrow();
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
    assertThat(fake.last(RUN_TASK).path("clientToken").asText()).isEqualTo(worker.uuid("token").toString());
    assertThat(task.startedBy()).isEqualTo("bq-" + worker.longValue("id"));
    assertThat(task.environment("worker")).containsEntry("BUILDQUEUE_WORKER_ID", worker.longValue("id").toString())
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
    assertThat(fake.requests(RUN_TASK)).hasSize(3)
        .allSatisfy(r -> assertThat(r.body().path("clientToken").asText()).isEqualTo(worker.uuid("token").toString()));
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
    assertThat(liveWorkers()).singleElement()
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
    assertThat(fake.requests(RUN_TASK)).extracting(r -> r.body().path("clientToken").asText()).doesNotHaveDuplicates();
  }

  @Test
  void a_configuration_error_frees_the_slot_and_fails_the_job_with_the_reason() {
    fake.answer(RUN_TASK, Answer.error(400, "AccessDeniedException", "User is not authorized to perform: iam:PassRole"));
    long jobId = enqueue("alice");

    assertThat(liveWorkers()).isEmpty();
    assertThat(job(jobId).string("status")).isEqualTo("failed");
    assertThat(job(jobId).string("error")).contains("AccessDeniedException").contains("iam:PassRole");
    assertThat(fake.tasks()).isEmpty();
  }

  @Test
  void a_stopped_task_seen_by_the_tick_frees_the_slot_and_recovers_the_job() {
    long jobId = enqueue("alice");
    String arn = fake.tasks().get(0).arn();
    fake.stopTask(arn, "EssentialContainerExited", "Essential container in task exited", 137,
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
  void cancelling_a_job_whose_worker_has_not_started_stops_its_task_and_the_stop_ends_the_job() {
    long jobId = enqueue("alice");
    String arn = fake.tasks().get(0).arn();

    queue.cancel(jobId, "alice");

    assertThat(fake.last(STOP_TASK).path("task").asText()).isEqualTo(arn);
    assertThat(fake.last(STOP_TASK).path("reason").asText()).contains("job " + jobId + " cancelled");
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
    assertThat(workers().get(0).string("exit_reason")).contains("UserInitiated").contains("outlived its lease");
  }
}
