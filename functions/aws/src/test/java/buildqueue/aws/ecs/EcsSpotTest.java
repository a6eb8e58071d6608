package buildqueue.aws.ecs;

import static buildqueue.aws.fake.FakeEcs.Operation.RUN_TASK;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.fake.FakeEcs;
import buildqueue.aws.lambda.EcsTaskStateChange;
import buildqueue.core.BuildQueue;
import buildqueue.core.Capacities;
import buildqueue.core.ExitTransitions;
import buildqueue.core.JobStatus;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.Capacity;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import buildqueue.worker.WorkerStop;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.ecs.EcsClient;

/**
 * Fargate Spot end to end on the fakes: the queue on real PostgreSQL, the real SDK client on the
 * fake ECS, reclaims delivered as the ECS task state change events the fake sends.
 */
@ExtendWith(PostgresExtension.class)
class EcsSpotTest {
  TestDatabase db;
  FakeEcs fake;
  EcsClient client;
  QueueClock.Settable clock;
  QueueConfig config;
  BuildQueue queue;
  WorkerTransitions workers;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    fake = FakeEcs.start();
    // The production timeouts, not the fake's one-second ones: no launch here may end "unknown",
    // which a one-second attempt did on a loaded machine (a slot held, no task id).
    client =
        fake.newClient(
            fake.clientSettings()
                .withTimeouts(
                    Duration.ofSeconds(10), Duration.ofSeconds(10), Duration.ofSeconds(25)));
    clock = new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));
    config = QueueConfig.defaults();
    queue =
        new BuildQueue(
            db.jdbc(),
            new EcsWorkerPlatform(client, EcsWorkerPlatformTest.SETTINGS),
            config,
            clock);
    workers = new WorkerTransitions(db.jdbc(), config, clock);
  }

  @AfterEach
  void stop() {
    client.close();
    fake.close();
  }

  void kindRunsOn(Capacity capacity) {
    queue.useCapacities(new Capacities(Capacity.ON_DEMAND, Map.of("demo", capacity)));
  }

  Row job(long id) {
    return db.jdbc()
        .queryOptional("select * from build_job where id = :id", Params.of("id", id))
        .orElseThrow();
  }

  Row liveWorker() {
    List<Row> live =
        db.jdbc().query("select * from build_worker where status <> 'exited' order by id");
    assertThat(live).hasSize(1);
    return live.get(0);
  }

  /** The task state change event of the fake's reclaim, handed to the queue as the Lambda does. */
  void deliver(com.fasterxml.jackson.databind.node.ObjectNode event) throws Exception {
    EcsTaskStateChange.StopEvidence stop =
        EcsTaskStateChange.parse(event.toString().getBytes(StandardCharsets.UTF_8))
            .stopEvidence()
            .orElseThrow();
    queue.taskStopped(
        stop.taskArn(), stop.workerId().orElse(null), stop.token().orElse(null), stop.reason());
  }

  @Test
  void a_spot_kind_reclaimed_three_times_without_progress_succeeds_on_its_fourth_attempt_on_demand()
      throws Exception {
    kindRunsOn(Capacity.SPOT);
    long jobId = queue.enqueue("alice", "demo", new Json("{}"), null).jobId();
    // Half the reclaims also reach the worker first: its SIGTERM path interrupts the job itself
    // (JobRun), as a real worker does in its two-minute warning, before the stop event arrives.
    fake.onSigterm(
        task -> {
          long workerId = Long.parseLong(task.startedBy().substring("bq-".length()));
          UUID token =
              UUID.fromString(
                  task.environment(FakeEcs.CONTAINER).get(EcsWorkerPlatform.WORKER_TOKEN_VARIABLE));
          if (workerId % 2 == 0) {
            assertThat(
                    workers.interrupt(
                        workerId,
                        token,
                        jobId,
                        WorkerStop.INTERRUPTION_REASON_PREFIX + "SIGTERM",
                        null))
                .contains(JobStatus.QUEUED);
            assertThat(workers.drain(workerId, token)).isTrue();
          }
        });

    for (int reclaim = 1; reclaim <= ExitTransitions.MAX_RECLAIMS; reclaim++) {
      Row worker = liveWorker();
      String arn = worker.string("task_id");
      assertThat(worker.string("capacity")).isEqualTo("spot");
      assertThat(fake.capacityProviderOf(arn)).isEqualTo("FARGATE_SPOT");
      workers.start(worker.longValue("id"), worker.uuid("token")).orElseThrow();
      fake.setLastStatus(arn, "RUNNING");

      deliver(fake.reclaim(arn));

      Row after = job(jobId);
      assertThat(after.string("status")).as("reclaim " + reclaim).isEqualTo("dispatched");
      assertThat(after.intValue("reclaims")).isEqualTo(reclaim);
      assertThat(after.intValue("recoveries")).as("reclaims are not recoveries").isZero();
      assertThat(after.intValue("progress")).as("without progress").isZero();
    }

    Row last = liveWorker();
    assertThat(last.string("capacity")).isEqualTo("on-demand");
    assertThat(fake.capacityProviderOf(last.string("task_id"))).isNull();
    assertThat(fake.last(RUN_TASK).path("launchType").asText()).isEqualTo("FARGATE");
    workers.start(last.longValue("id"), last.uuid("token")).orElseThrow();
    workers.end(last.longValue("id"), last.uuid("token"), jobId, JobStatus.SUCCEEDED, null);

    Row done = job(jobId);
    assertThat(done.string("status")).isEqualTo("succeeded");
    assertThat(done.intValue("recoveries")).isZero();
    assertThat(done.intValue("reclaims")).isEqualTo(ExitTransitions.MAX_RECLAIMS);
    assertThat(fake.tasks()).hasSize(ExitTransitions.MAX_RECLAIMS + 1);
  }

  @Test
  void an_on_demand_kinds_stops_without_progress_still_count_as_recoveries() throws Exception {
    long jobId = queue.enqueue("alice", "demo", new Json("{}"), null).jobId();
    Row worker = liveWorker();
    workers.start(worker.longValue("id"), worker.uuid("token")).orElseThrow();
    fake.stopTask(
        worker.string("task_id"),
        "EssentialContainerExited",
        "Essential container in task exited",
        1,
        null);

    deliver(fake.stateChangeEvent(worker.string("task_id")));

    assertThat(job(jobId).intValue("recoveries")).isEqualTo(1);
    assertThat(job(jobId).intValue("reclaims")).isZero();
    assertThat(worker.string("capacity")).isEqualTo("on-demand");
  }

  @Test
  void a_spot_capacity_failure_falls_back_to_on_demand_for_spot_then_on_demand() {
    kindRunsOn(Capacity.SPOT_THEN_ON_DEMAND);
    fake.spotCapacity(false);

    long jobId = queue.enqueue("alice", "demo", new Json("{}"), null).jobId();

    Row worker = liveWorker();
    assertThat(worker.string("capacity")).isEqualTo("on-demand");
    assertThat(worker.string("task_id")).isEqualTo(fake.tasks().get(0).arn());
    assertThat(fake.capacityProviderOf(worker.string("task_id"))).isNull();
    assertThat(fake.requests(RUN_TASK))
        .extracting(r -> r.body().path("launchType").asText("FARGATE_SPOT"))
        .containsOnly("FARGATE_SPOT", "FARGATE")
        .endsWith("FARGATE");
    assertThat(job(jobId).string("status")).isEqualTo("dispatched");
    assertThat(job(jobId).intValue("launch_failures")).isZero();
  }

  @Test
  void a_spot_capacity_failure_is_a_retryable_launch_failure_for_spot() {
    kindRunsOn(Capacity.SPOT);
    fake.spotCapacity(false);

    long jobId = queue.enqueue("alice", "demo", new Json("{}"), null).jobId();

    assertThat(fake.tasks()).isEmpty();
    // (The SDK may send an attempt twice on a loaded machine: the same request, token included.)
    assertThat(fake.requests(RUN_TASK))
        .as("Spot only, never on-demand")
        .allSatisfy(r -> assertThat(r.body().has("launchType")).isFalse());
    assertThat(job(jobId).string("status")).isEqualTo("queued");
    assertThat(job(jobId).intValue("launch_failures")).isEqualTo(1);
    assertThat(job(jobId).instant("not_before")).isAfter(clock.now());
  }
}
