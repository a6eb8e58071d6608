package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.lambda.TaskStateChangeFunction.Outcome;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.aws.testing.TestContext;
import buildqueue.core.JobStatus;
import buildqueue.core.QueueConfig;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Row;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.CheckedDatabase;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@ExtendWith(PostgresExtension.class)
class TaskStateChangeFunctionTest {
  private static final String TASK_ARN =
      "arn:aws:ecs:eu-west-1:111122223333:task/buildqueue-workers/";

  /** The sample event re-addressed to one of our launches (or to anything else). */
  static byte[] event(
      String sample,
      String taskArn,
      String startedBy,
      UUID token,
      long version,
      String lastStatus) {
    ObjectNode e = SampleEvents.tree(sample);
    ObjectNode d = (ObjectNode) e.get("detail");
    d.put("taskArn", taskArn);
    ((ArrayNode) e.get("resources")).removeAll().add(taskArn);
    d.get("containers").forEach(c -> ((ObjectNode) c).put("taskArn", taskArn));
    if (startedBy == null) {
      d.remove("startedBy");
    } else {
      d.put("startedBy", startedBy);
    }
    for (JsonNode v : d.get("overrides").get("containerOverrides").get(0).get("environment")) {
      if (v.get("name").asText().equals(AwsSettings.WORKER_TOKEN)) {
        if (token == null) {
          ((ObjectNode) v).put("name", "SOMETHING_ELSE");
        } else {
          ((ObjectNode) v).put("value", token.toString());
        }
      }
      if (v.get("name").asText().equals(AwsSettings.WORKER_ID) && startedBy != null) {
        ((ObjectNode) v).put("value", startedBy.replace("bq-", ""));
      }
    }
    d.put("version", version);
    d.put("lastStatus", lastStatus);
    return SampleEvents.bytes(e);
  }

  static byte[] stopped(WorkerLaunch launch, String taskArn) {
    return event(
        "ecs-task-stopped.json", taskArn, launch.startedBy(), launch.token(), 5, "STOPPED");
  }

  private static String newTaskArn() {
    return TASK_ARN + UUID.randomUUID().toString().replace("-", "");
  }

  /** Enqueues a job whose launch starts a task with a real-shaped ARN; returns the launch. */
  private static WorkerLaunch launchedWorker(QueueWorld w, String taskArn) {
    w.platform.nextOutcomes(new LaunchOutcome.Started(taskArn));
    w.submit("alice");
    return w.lastLaunch();
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void the_worker_is_billed_from_the_events_pull_start_to_its_stop_per_second(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch first = launchedWorker(w, arn);
      var started = w.workers.start(first.workerId(), first.token()).orElseThrow();
      long job = started.job().orElseThrow().id();
      w.workers.end(first.workerId(), first.token(), job, JobStatus.SUCCEEDED, null);

      new TaskStateChangeFunction(() -> w.services).handle(stopped(first, arn));

      // The sample's pullStartedAt 17:04:24.975 to stoppedAt 17:09:40.112: 315.137 s, billed
      // per second (docs/architecture.md §4.8), all of it the one job's.
      assertThat(w.worker(first.workerId()).longValue("billed_ms")).isEqualTo(316_000);
      assertThat(
              tdb.jdbc()
                  .query("select billed_ms from build_job_cost where job_id = " + job)
                  .get(0)
                  .longValue("billed_ms"))
          .isEqualTo(316_000);
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_normal_exit_frees_the_slot_and_dispatches_the_next_job(String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch first = launchedWorker(w, arn);
      long firstJob = w.job(1).longValue("id");
      // The worker runs its job and drains, as the Fargate task would, then exits 0.
      var started = w.workers.start(first.workerId(), first.token()).orElseThrow();
      w.workers.end(
          first.workerId(),
          first.token(),
          started.job().orElseThrow().id(),
          JobStatus.SUCCEEDED,
          null);
      long second = w.submit("bob"); // waits: the slot is still held by the draining worker
      assertThat(w.job(second).string("status")).isEqualTo("queued");

      Outcome outcome = new TaskStateChangeFunction(() -> w.services).handle(stopped(first, arn));

      assertThat(outcome).isEqualTo(Outcome.WORKER_EXITED);
      Row worker = w.worker(first.workerId());
      assertThat(worker.string("status")).isEqualTo("exited");
      assertThat(worker.string("exit_reason"))
          .contains("EssentialContainerExited")
          .contains("container worker exit code 0");
      assertThat(w.job(firstJob).string("status")).isEqualTo("succeeded");
      assertThat(w.job(second).string("status")).isEqualTo("dispatched");
      assertThat(w.lastLaunch().workerId()).isNotEqualTo(first.workerId());
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void the_exit_is_published_and_measured(String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      w.services.flush(w.services.newMetrics()); // the end of the invocation that launched it
      w.workers.start(launch.workerId(), launch.token()).orElseThrow();
      w.clock.advance(Duration.ofSeconds(90));

      new TaskStateChangeFunction(() -> w.services).handle(stopped(launch, arn));

      assertThat(w.unpublishedEvents()).isZero();
      assertThat(w.eventBridge.accepted())
          .extracting(r -> r.detail().get("type").asText())
          .containsExactly(
              "enqueued", "dispatched", "started", "interrupted", "dispatched", "cost");
      JsonNode line = w.metrics.last("task-state-change");
      assertThat(line.get("WorkersExited").asLong()).isEqualTo(1);
      assertThat(line.get("Recoveries").asLong()).isEqualTo(1);
      assertThat(line.get("SlotHeldSeconds").asDouble()).isEqualTo(90.0);
      assertThat(line.get("Launches").asLong()).isEqualTo(1);
      // enqueued and dispatched went out with the submission's own invocation (BuildQueue#submit);
      // the stopped worker's cost event (docs/architecture.md §4.8) goes out with its stop
      assertThat(line.get("EventsPublished").asLong()).isEqualTo(4);
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_task_that_failed_to_start_is_a_launch_failure_with_backoff_and_the_job_quotes_its_cause(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      long job = w.job(1).longValue("id");
      QueueConfig config = QueueHarness.testConfig();

      Outcome outcome =
          new TaskStateChangeFunction(() -> w.services)
              .handle(
                  event(
                      "ecs-task-failed-to-start.json",
                      arn,
                      launch.startedBy(),
                      launch.token(),
                      3,
                      "STOPPED"));

      assertThat(outcome).isEqualTo(Outcome.WORKER_EXITED);
      assertThat(w.worker(launch.workerId()).string("exit_reason"))
          .startsWith("not started: TaskFailedToStart: CannotPullContainerError");
      Row j = w.job(job);
      // No worker ever ran: not an interruption, and no relaunch before the backoff.
      assertThat(j.string("status")).isEqualTo("queued");
      assertThat(j.intValue("recoveries")).isZero();
      assertThat(j.intValue("launch_failures")).isEqualTo(1);
      assertThat(j.instant("not_before")).isEqualTo(w.clock.now().plus(config.launchBackoff()));
      assertThat(w.platform.launches()).hasSize(1);
      assertThat(w.metrics.last("task-state-change").get("WorkersNeverStarted").asLong())
          .isEqualTo(1);

      // Every later try fails the same way; the last one fails the job with the real cause.
      for (int failures = 2; failures <= config.maxLaunchFailures(); failures++) {
        w.clock.advance(config.launchBackoff().multipliedBy(1L << (failures - 2)));
        String nextArn = newTaskArn();
        w.platform.nextOutcomes(new LaunchOutcome.Started(nextArn));
        w.services.queue().tick();
        WorkerLaunch next = w.lastLaunch();
        assertThat(next.workerId()).as("try " + failures).isNotEqualTo(launch.workerId());
        new TaskStateChangeFunction(() -> w.services)
            .handle(
                event(
                    "ecs-task-failed-to-start.json",
                    nextArn,
                    next.startedBy(),
                    next.token(),
                    3,
                    "STOPPED"));
      }
      j = w.job(job);
      assertThat(j.string("status")).isEqualTo("failed");
      assertThat(j.string("error"))
          .startsWith(
              "Could not start a build worker after "
                  + config.maxLaunchFailures()
                  + " attempts: TaskFailedToStart: CannotPullContainerError")
          .doesNotContain("repeatedly exited");
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_duplicate_event_changes_nothing(String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      TaskStateChangeFunction handler = new TaskStateChangeFunction(() -> w.services);
      assertThat(handler.handle(stopped(launch, arn))).isEqualTo(Outcome.WORKER_EXITED);
      String after = w.snapshot();
      int launches = w.platform.launches().size();

      Outcome again = handler.handle(stopped(launch, arn));

      assertThat(again).isEqualTo(Outcome.NO_CHANGE);
      assertThat(w.snapshot()).isEqualTo(after);
      assertThat(w.platform.launches()).hasSize(launches);
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void an_older_version_after_a_newer_one_changes_nothing(String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      TaskStateChangeFunction handler = new TaskStateChangeFunction(() -> w.services);
      assertThat(
              handler.handle(
                  event(
                      "ecs-task-stopped.json",
                      arn,
                      launch.startedBy(),
                      launch.token(),
                      6,
                      "STOPPED")))
          .isEqualTo(Outcome.WORKER_EXITED);
      String after = w.snapshot();

      // Delivered late: the DEPROVISIONING (v5) and RUNNING (v3) events, and a stale STOPPED copy
      // (v4).
      Outcome deprovisioning =
          handler.handle(
              event(
                  "ecs-task-stopped.json",
                  arn,
                  launch.startedBy(),
                  launch.token(),
                  5,
                  "DEPROVISIONING"));
      Outcome running =
          handler.handle(
              event(
                  "ecs-task-stopped.json", arn, launch.startedBy(), launch.token(), 3, "RUNNING"));
      Outcome staleStopped =
          handler.handle(
              event(
                  "ecs-task-stopped.json", arn, launch.startedBy(), launch.token(), 4, "STOPPED"));

      assertThat(List.of(deprovisioning, running, staleStopped))
          .containsExactly(Outcome.NOT_STOPPED, Outcome.NOT_STOPPED, Outcome.NO_CHANGE);
      assertThat(w.snapshot()).isEqualTo(after);
    }
  }

  /**
   * The statuses a Fargate task's events report, in order (ECS Developer Guide, Task lifecycle).
   */
  static final List<String> FARGATE_LIFECYCLE =
      List.of("PROVISIONING", "PENDING", "RUNNING", "DEPROVISIONING", "STOPPED");

  /**
   * One Task State Change event per status of a Fargate task's life, from the real STOPPED sample:
   * before RUNNING no container has run; from DEPROVISIONING on the task is desired STOPPED and
   * carries its stop code and exit code (the container has exited, the ENI is still attached); only
   * the STOPPED event has {@code stoppedAt}. {@code detail.version} counts up from 1.
   */
  static List<byte[]> lifecycleEvents(WorkerLaunch launch, String taskArn) {
    List<byte[]> events = new java.util.ArrayList<>();
    for (int i = 0; i < FARGATE_LIFECYCLE.size(); i++) {
      String status = FARGATE_LIFECYCLE.get(i);
      ObjectNode e =
          (ObjectNode)
              readTree(
                  event(
                      "ecs-task-stopped.json",
                      taskArn,
                      launch.startedBy(),
                      launch.token(),
                      i + 1,
                      status));
      ObjectNode d = (ObjectNode) e.get("detail");
      boolean stopping = status.equals("DEPROVISIONING") || status.equals("STOPPED");
      d.put("desiredStatus", stopping ? "STOPPED" : "RUNNING");
      ((ObjectNode) d.get("attachments").get(0))
          .put(
              "status",
              status.equals("PROVISIONING")
                  ? "PRECREATED"
                  : status.equals("STOPPED") ? "DELETED" : "ATTACHED");
      if (!stopping) {
        d.remove(List.of("stopCode", "stoppedReason", "stoppingAt", "executionStoppedAt"));
      }
      if (!status.equals("STOPPED")) {
        d.remove("stoppedAt");
      }
      if (status.equals("PROVISIONING") || status.equals("PENDING")) {
        d.remove(
            List.of(
                "startedAt", "pullStartedAt", "pullStoppedAt", "connectivity", "connectivityAt"));
      }
      ObjectNode container = (ObjectNode) d.get("containers").get(0);
      container.put(
          "lastStatus", stopping ? "STOPPED" : status.equals("RUNNING") ? "RUNNING" : "PENDING");
      if (!stopping) {
        container.remove("exitCode");
      }
      events.add(SampleEvents.bytes(e));
    }
    return events;
  }

  private static JsonNode readTree(byte[] json) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * AWS delivers a task's events at least once and in no fixed order. The whole documented Fargate
   * sequence, each event twice, shuffled: the worker exits exactly once, on a STOPPED event and on
   * no other, whichever copy comes first; the rest change nothing.
   */
  @ParameterizedTest(name = "on {0}, shuffle {1}")
  @org.junit.jupiter.params.provider.CsvSource({
    "jdbc, 1",
    "jdbc, 2",
    "jdbc, 3",
    "jdbc, 4",
    "dataapi, 5",
    "dataapi, 6"
  })
  void a_fargate_tasks_whole_event_sequence_shuffled_and_delivered_twice_ends_its_worker_once(
      String adapter, long seed, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      long jobId =
          w.workers.start(launch.workerId(), launch.token()).orElseThrow().job().orElseThrow().id();
      List<byte[]> deliveries = new java.util.ArrayList<>(lifecycleEvents(launch, arn));
      deliveries.addAll(lifecycleEvents(launch, arn));
      java.util.Collections.shuffle(deliveries, new java.util.Random(seed));
      TaskStateChangeFunction handler = new TaskStateChangeFunction(() -> w.services);

      List<String> seen = new java.util.ArrayList<>();
      String afterExit = null;
      for (byte[] delivery : deliveries) {
        String status = readTree(delivery).path("detail").path("lastStatus").asText();
        Outcome outcome = handler.handle(delivery);
        seen.add(status + "=" + outcome);
        if (outcome == Outcome.WORKER_EXITED) {
          afterExit = w.snapshot();
        }
      }

      assertThat(seen)
          .as("deliveries in order")
          .filteredOn(o -> o.endsWith("=" + Outcome.WORKER_EXITED))
          .containsExactly("STOPPED=" + Outcome.WORKER_EXITED);
      assertThat(seen)
          .filteredOn(o -> o.startsWith("STOPPED="))
          .hasSize(2)
          .contains("STOPPED=" + Outcome.NO_CHANGE);
      assertThat(seen)
          .filteredOn(o -> !o.startsWith("STOPPED="))
          .hasSize(8)
          .allMatch(o -> o.endsWith("=" + Outcome.NOT_STOPPED));
      assertThat(w.snapshot()).as("nothing changed after the exit").isEqualTo(afterExit);
      assertThat(w.worker(launch.workerId()).string("status")).isEqualTo("exited");
      assertThat(w.worker(launch.workerId()).string("exit_reason"))
          .contains("EssentialContainerExited");
      assertThat(w.job(jobId).longValue("worker_id"))
          .as("requeued once and dispatched to one new worker")
          .isEqualTo(w.lastLaunch().workerId())
          .isNotEqualTo(launch.workerId());
      assertThat(w.platform.launches()).hasSize(2);
    }
  }

  @Test
  void events_before_stopped_leave_the_worker_holding_its_slot(TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.TASK_STATE_CHANGE)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      String before = w.snapshot();

      Outcome outcome =
          new TaskStateChangeFunction(() -> w.services)
              .handle(
                  event(
                      "ecs-task-stopped.json",
                      arn,
                      launch.startedBy(),
                      launch.token(),
                      4,
                      "DEPROVISIONING"));

      assertThat(outcome).isEqualTo(Outcome.NOT_STOPPED);
      assertThat(w.snapshot()).isEqualTo(before);
      assertThat(w.worker(launch.workerId()).string("status")).isEqualTo("launching");
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void an_event_for_a_task_we_never_launched_changes_nothing(String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      String ours = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, ours);
      String before = w.snapshot();
      TaskStateChangeFunction handler = new TaskStateChangeFunction(() -> w.services);

      Outcome foreign =
          handler.handle(
              event(
                  "ecs-task-stopped.json", newTaskArn(), "ecs-svc/1234567890", null, 5, "STOPPED"));
      // Someone else's task that claims to be our worker, without its token, or with a wrong one.
      Outcome noToken =
          handler.handle(
              event("ecs-task-stopped.json", newTaskArn(), launch.startedBy(), null, 5, "STOPPED"));
      Outcome wrongToken =
          handler.handle(
              event(
                  "ecs-task-stopped.json",
                  newTaskArn(),
                  launch.startedBy(),
                  UUID.randomUUID(),
                  5,
                  "STOPPED"));

      assertThat(List.of(foreign, noToken, wrongToken)).containsOnly(Outcome.NO_CHANGE);
      assertThat(w.snapshot()).isEqualTo(before);
      assertThat(w.liveWorkers())
          .extracting(r -> r.longValue("id"))
          .containsExactly(launch.workerId());
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_stop_event_that_overtakes_the_recorded_launch_still_frees_the_slot(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TASK_STATE_CHANGE)) {
      // RunTask timed out: the task exists, but the queue has no ARN for it yet.
      w.platform.nextOutcomes(new LaunchOutcome.Unknown("read timed out"));
      w.submit("alice");
      WorkerLaunch launch = w.lastLaunch();
      assertThat(w.worker(launch.workerId()).string("task_id")).isNull();

      Outcome outcome =
          new TaskStateChangeFunction(() -> w.services).handle(stopped(launch, newTaskArn()));

      assertThat(outcome).isEqualTo(Outcome.WORKER_EXITED);
      assertThat(w.worker(launch.workerId()).string("status")).isEqualTo("exited");
    }
  }

  @Test
  void an_unreadable_event_is_acknowledged_and_changes_nothing(TestDatabase tdb) throws Exception {
    try (QueueWorld w = new QueueWorld(tdb, Component.TASK_STATE_CHANGE)) {
      launchedWorker(w, newTaskArn());
      String before = w.snapshot();
      TaskStateChangeFunction handler = new TaskStateChangeFunction(() -> w.services);
      ObjectNode otherType = SampleEvents.tree("schedule-tick.json");
      ObjectNode noArn = SampleEvents.tree("ecs-task-stopped.json");
      ((ObjectNode) noArn.get("detail")).remove("taskArn");

      List<Outcome> outcomes =
          List.of(
              handler.handle("not json {".getBytes(StandardCharsets.UTF_8)),
              handler.handle("[1, 2]".getBytes(StandardCharsets.UTF_8)),
              handler.handle(SampleEvents.bytes(otherType)),
              handler.handle(SampleEvents.bytes(noArn)));
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      handler.handleRequest(
          new ByteArrayInputStream("{".getBytes(StandardCharsets.UTF_8)),
          out,
          TestContext.withTimeLeft(Duration.ofSeconds(30)));

      assertThat(outcomes).containsOnly(Outcome.UNREADABLE);
      assertThat(out.toString(StandardCharsets.UTF_8)).contains("UNREADABLE");
      assertThat(w.snapshot()).isEqualTo(before);
    }
  }

  @Test
  void a_database_failure_fails_the_invocation_so_lambda_retries_it(TestDatabase tdb) {
    Database broken = failing(tdb.jdbc(), sql -> sql.contains("build_exit_worker_and_dispatch("));
    try (QueueWorld w = new QueueWorld(tdb, Component.TASK_STATE_CHANGE, broken)) {
      String arn = newTaskArn();
      WorkerLaunch launch = launchedWorker(w, arn);
      TaskStateChangeFunction handler = new TaskStateChangeFunction(() -> w.services);

      assertThatThrownBy(() -> handler.handle(stopped(launch, arn)))
          .isInstanceOf(DatabaseException.class);
      assertThat(w.worker(launch.workerId()).string("status")).isEqualTo("launching");
    }
  }

  /** Fails statements that match, as an unreachable database would. */
  static Database failing(Database target, java.util.function.Predicate<String> fails) {
    return new CheckedDatabase(
        target,
        sql -> {
          if (sql != null && fails.test(sql)) {
            throw new DatabaseException("connection refused (injected)");
          }
        });
  }
}
