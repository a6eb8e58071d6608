package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.InProcessPlatform.Evidence;
import buildqueue.testing.InProcessPlatform.LaunchPlan;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** "Why is my job waiting": a queued job's position and what holds its lane. */
@ExtendWith(PostgresExtension.class)
class WaitingForTest {

  @Test
  void a_job_queued_behind_a_running_one_knows_its_position_and_whose_worker_holds_the_lane(
      TestDatabase tdb) throws Exception {
    try (ApiFixture f = new ApiFixture(tdb)) {
      long running = f.submitHeldGate(BOB, 3);
      long first = f.submit(ALICE, "noop", "{}");
      long second = f.submit(ALICE, "noop", "{}");
      f.h.clock.advance(Duration.ofSeconds(100));

      JsonNode job = json(f.get("/jobs/" + second, ALICE));

      assertThat(job.get("status").asText()).isEqualTo("queued");
      assertThat(job.get("position").asInt()).isEqualTo(2);
      JsonNode waiting = job.get("waitingFor");
      assertThat(waiting.get("lane").asText()).isEqualTo("shared");
      assertThat(waiting.get("capacity").asInt()).isEqualTo(1);
      assertThat(waiting.get("jobsAhead").asInt()).isEqualTo(1);
      assertThat(waiting.get("notBefore").isNull()).isTrue();
      JsonNode slot = waiting.get("slots").get(0);
      assertThat(slot.get("slot").asText()).isEqualTo("shared#1");
      JsonNode worker = slot.get("worker");
      long workerId = f.h.job(running).longValue("worker_id");
      assertThat(worker.get("id").asLong()).isEqualTo(workerId);
      assertThat(worker.get("status").asText()).isEqualTo("running");
      assertThat(worker.get("taskId").asText()).isEqualTo(f.h.worker(workerId).string("task_id"));
      assertThat(worker.get("leaseLeftSeconds").asLong())
          .isEqualTo(f.h.config.lease().toSeconds() - 100);
      assertThat(worker.get("job").get("id").asLong()).isEqualTo(running);
      assertThat(worker.get("job").get("userId").isNull()).as("another user's id").isTrue();
      assertThat(worker.get("job").get("progress").asInt()).isEqualTo(3);
      assertThat(waiting.get("summary").asText())
          .isEqualTo(
              "1 job is ahead of it in lane shared. The lane's only slot is held: shared#1 by worker "
                  + workerId
                  + " (running, task "
                  + worker.get("taskId").asText()
                  + ", job "
                  + running
                  + " of another user at 3, lease "
                  + (f.h.config.lease().toSeconds() - 100)
                  + " s left). It starts when a "
                  + "worker finishes a job and takes it next (within the worker's chain window), or when a worker's "
                  + "exit frees its slot.");
      assertThat(json(f.get("/jobs/" + first, ALICE)).get("position").asInt()).isEqualTo(1);
      assertThat(json(f.get("/jobs/" + first, ALICE)).get("waitingFor").get("summary").asText())
          .startsWith("It is next in lane shared.");
      JsonNode asAdmin = json(f.get("/jobs/" + second, ADMIN)).get("waitingFor");
      assertThat(asAdmin.get("slots").get(0).get("worker").get("job").get("userId").asText())
          .isEqualTo("bob");
      assertThat(asAdmin.get("summary").asText()).contains("job " + running + " of user bob at 3");
    }
  }

  @Test
  void positions_move_up_as_the_jobs_ahead_leave(TestDatabase tdb) throws Exception {
    try (ApiFixture f = new ApiFixture(tdb)) {
      long running = f.submitHeldGate(BOB, 0);
      long first = f.submit(ALICE, "gate", "{}");
      long second = f.submit(ALICE, "noop", "{}");
      long third = f.submit(ALICE, "noop", "{}");
      assertThat(json(f.get("/jobs/" + third, ALICE)).get("position").asInt()).isEqualTo(3);

      f.post("/jobs/" + second + "/cancel", "", ALICE);
      assertThat(json(f.get("/jobs/" + third, ALICE)).get("position").asInt()).isEqualTo(2);

      f.h.gates.open(running);
      f.h.gates.awaitEntered(first);
      JsonNode job = json(f.get("/jobs/" + third, ALICE));
      assertThat(job.get("position").asInt()).isEqualTo(1);
      assertThat(
              job.get("waitingFor").get("slots").get(0).get("worker").get("job").get("id").asLong())
          .isEqualTo(first);
      assertThat(json(f.get("/jobs/" + first, ALICE)).get("position").isNull()).isTrue();
      assertThat(json(f.get("/jobs/" + first, ALICE)).get("waitingFor").isNull()).isTrue();
    }
  }

  @Test
  void a_position_counts_only_the_queued_jobs_of_the_same_lane(TestDatabase tdb) throws Exception {
    try (ApiFixture f = new ApiFixture(tdb)) {
      f.put("/users/carol", "{\"dedicatedWorker\": true}", ADMIN);
      Caller carol = Caller.user("carol");
      f.submitHeldGate(BOB, 0);
      long carolsRunning = f.submitHeldGate(carol, 0);
      f.submit(ALICE, "noop", "{}");
      long carolsQueued = f.submit(carol, "noop", "{}");

      JsonNode job = json(f.get("/jobs/" + carolsQueued, carol));

      assertThat(job.get("lane").asText()).isEqualTo("user:carol");
      assertThat(job.get("position").asInt()).isEqualTo(1);
      assertThat(job.get("waitingFor").get("slots").get(0).get("slot").asText())
          .isEqualTo("user:carol#1");
      assertThat(
              job.get("waitingFor").get("slots").get(0).get("worker").get("job").get("id").asLong())
          .isEqualTo(carolsRunning);
    }
  }

  @Test
  void a_job_backing_off_after_a_failed_launch_says_when_it_is_retried(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb)) {
      f.h.platform.plan(LaunchPlan.normal().failRetryable());
      long id = f.submit(ALICE, "noop", "{}");

      JsonNode job = json(f.get("/jobs/" + id, ALICE));

      assertThat(job.get("status").asText()).isEqualTo("queued");
      assertThat(job.get("position").asInt()).isEqualTo(1);
      JsonNode waiting = job.get("waitingFor");
      String retryAt = f.h.clock.now().plus(f.h.config.launchBackoff()).toString();
      assertThat(waiting.get("notBefore").asText()).isEqualTo(retryAt);
      assertThat(waiting.get("slots").get(0).get("worker").isNull()).isTrue();
      assertThat(waiting.get("summary").asText())
          .isEqualTo(
              "It is next in lane shared. A worker for it could not "
                  + "start for lack of capacity; it is retried from "
                  + retryAt
                  + ". Slot shared#1 is free; it is "
                  + "dispatched by the first tick after its retry time.");
    }
  }

  @Test
  void a_draining_worker_is_named_as_what_the_job_waits_for(TestDatabase tdb) throws Exception {
    try (ApiFixture f = new ApiFixture(tdb)) {
      f.h.platform.plan(LaunchPlan.normal().evidence(Evidence.WITHHOLD));
      long held = f.submitHeldGate(BOB, 0);
      f.h.clock.advance(f.h.config.chainWindow().plusSeconds(1));
      f.h.gates.open(held);
      f.h.awaitStatus(held, "succeeded");
      Await.until(
          "bob's worker to be draining",
          () -> f.h.liveWorkers().stream().anyMatch(w -> w.string("status").equals("draining")));
      long id = f.submit(ALICE, "noop", "{}");

      JsonNode waiting = json(f.get("/jobs/" + id, ALICE)).get("waitingFor");

      assertThat(waiting.get("slots").get(0).get("worker").get("status").asText())
          .isEqualTo("draining");
      assertThat(waiting.get("slots").get(0).get("worker").get("job").isNull()).isTrue();
      assertThat(waiting.get("summary").asText())
          .contains("(draining: done with its jobs, the slot frees once its exit is confirmed");
      f.h.platform.deliverWithheld();
      f.h.awaitStatus(id, "succeeded");
    }
  }

  @Test
  void a_lanes_slots_are_listed_in_numeric_order(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig().withSharedSlots(11))) {
      JsonNode slots = json(f.get("/lanes", ADMIN)).get("lanes").get(0).get("slots");

      assertThat(slots.findValuesAsText("slot"))
          .containsExactly(
              "shared#1",
              "shared#2",
              "shared#3",
              "shared#4",
              "shared#5",
              "shared#6",
              "shared#7",
              "shared#8",
              "shared#9",
              "shared#10",
              "shared#11");
    }
  }

  @Test
  void with_two_shared_slots_a_job_waits_for_both_and_the_lane_shows_both(TestDatabase tdb)
      throws Exception {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig().withSharedSlots(2))) {
      long a = f.submitHeldGate(BOB, 1);
      long b = f.submitHeldGate(ALICE, 2);
      long queued = f.submit(ALICE, "noop", "{}");

      JsonNode waiting = json(f.get("/jobs/" + queued, ALICE)).get("waitingFor");
      JsonNode lane = json(f.get("/lanes", ADMIN)).get("lanes").get(0);

      assertThat(waiting.get("capacity").asInt()).isEqualTo(2);
      assertThat(waiting.get("slots").findValuesAsText("slot"))
          .containsExactly("shared#1", "shared#2");
      assertThat(waiting.get("summary").asText())
          .contains("All 2 slots of the lane are held: shared#1 by worker")
          .contains("job " + a + " of another user at 1")
          .contains("job " + b + " of user alice at 2");
      assertThat(lane.get("capacity").asInt()).isEqualTo(2);
      assertThat(lane.get("slots").findValuesAsText("slot"))
          .containsExactly("shared#1", "shared#2");
      assertThat(lane.get("queuedJobs").get(0).get("id").asLong()).isEqualTo(queued);
    }
  }

  @Test
  void in_the_fair_shared_lane_a_job_says_which_turns_go_before_it(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, buildqueue.testing.QueueHarness.testConfig(), true)) {
      Caller carol = Caller.user("carol");
      f.post("/jobs", "{\"kind\": \"noop\"}", ApiFixture.ALICE); // dispatched: alice was served
      f.post("/jobs", "{\"kind\": \"noop\"}", ApiFixture.ALICE);
      long alices =
          ApiFixture.json(f.post("/jobs", "{\"kind\": \"noop\"}", ApiFixture.ALICE))
              .get("id")
              .asLong();
      f.post("/jobs", "{\"kind\": \"noop\"}", ApiFixture.BOB);
      long carols =
          ApiFixture.json(f.post("/jobs", "{\"kind\": \"noop\"}", carol)).get("id").asLong();

      JsonNode c = ApiFixture.json(f.get("/jobs/" + carols, carol));
      JsonNode a = ApiFixture.json(f.get("/jobs/" + alices, ApiFixture.ALICE));

      assertThat(c.get("position").asInt()).isEqualTo(2);
      assertThat(c.get("waitingFor").get("summary").asText())
          .startsWith(
              "1 job goes before it in lane shared, which takes turns by user: 1 other user goes first.");
      assertThat(a.get("position").asInt()).isEqualTo(4);
      assertThat(a.get("waitingFor").get("turns").get("usersAhead").asInt()).isEqualTo(2);
      assertThat(a.get("waitingFor").get("summary").asText())
          .startsWith(
              "3 jobs go before it in lane shared, which takes"
                  + " turns by user: 2 other users go first; then 1 older job of yours, one a turn.");
    }
  }
}
