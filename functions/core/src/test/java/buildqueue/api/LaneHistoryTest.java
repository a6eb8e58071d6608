package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobStatus;
import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code GET /lanes/history}: each lane's queue depth and waits, from the job history. */
@ExtendWith(PostgresExtension.class)
class LaneHistoryTest {

  @Test
  void a_job_that_waited_25_minutes_counts_in_the_buckets_it_waited_through_in_one_statement(
      TestDatabase tdb) {
    try (ApiFixture f =
        new ApiFixture(
            tdb, QueueHarness.testConfig().withChainWindow(Duration.ofMinutes(30)), true)) {
      long first = f.submit(ALICE, "noop", "{}"); // 10:00, dispatched at once
      long second = f.submit(ALICE, "noop", "{}"); // 10:00, waits for the only slot
      WorkerLaunch w = f.h.manual.lastLaunch();
      f.h.workers.start(w.workerId(), w.token());
      f.h.clock.advance(Duration.ofMinutes(25));
      Ended ended = f.h.workers.end(w.workerId(), w.token(), first, JobStatus.SUCCEEDED, null);
      assertThat(ended).isInstanceOf(Ended.Chained.class);
      f.h.clock.advance(Duration.ofMinutes(35)); // 11:00

      f.h.db.reset();
      JsonNode history = json(f.get("/lanes/history", ADMIN));

      assertThat(f.h.db.statements()).as("one aggregate statement").isEqualTo(1);
      assertThat(history.get("bucketSeconds").asInt()).isEqualTo(600);
      assertThat(history.get("to").asText()).isEqualTo("2026-12-01T11:00:00Z");
      JsonNode lane = history.get("lanes").get(0);
      assertThat(lane.get("lane").asText()).isEqualTo("shared");
      JsonNode buckets = lane.get("buckets");
      assertThat(buckets).hasSize(36);
      assertThat(buckets.get(0).get("end").asText()).isEqualTo("2026-12-01T05:10:00Z");
      JsonNode at1000 = buckets.get(29);
      assertThat(at1000.get("end").asText()).isEqualTo("2026-12-01T10:00:00Z");
      assertThat(at1000.get("queued").asInt()).as("the second job waits at 10:00").isEqualTo(1);
      assertThat(at1000.get("started").asInt()).as("the first was dispatched at once").isEqualTo(1);
      assertThat(at1000.get("waitP50Seconds").asInt()).isZero();
      assertThat(buckets.get(30).get("queued").asInt()).as("10:10").isEqualTo(1);
      assertThat(buckets.get(31).get("queued").asInt()).as("10:20").isEqualTo(1);
      JsonNode at1030 = buckets.get(32);
      assertThat(at1030.get("queued").asInt()).as("10:30, after its dispatch at 10:25").isZero();
      assertThat(at1030.get("started").asInt()).isEqualTo(1);
      assertThat(at1030.get("waitP50Seconds").asInt()).isEqualTo(1500);
      assertThat(at1030.get("waitP90Seconds").asInt()).isEqualTo(1500);
      assertThat(buckets.get(28).get("queued").asInt()).as("9:50, before both").isZero();
      assertThat(buckets.get(28).get("waitP50Seconds").isNull()).isTrue();
      assertThat(second).isGreaterThan(first);
    }
  }

  @Test
  void history_is_for_admins_and_its_span_is_bounded(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      ApiFixture.assertProblem(f.get("/lanes/history", ALICE), 403, "/lanes/history");
      ApiFixture.assertProblem(f.get("/lanes/history?hours=25", ADMIN), 400, "/lanes/history");
      ApiFixture.assertProblem(f.get("/lanes/history?hours=0", ADMIN), 400, "/lanes/history");
      JsonNode day = json(f.get("/lanes/history?hours=24", ADMIN));
      assertThat(day.get("bucketSeconds").asInt()).isEqualTo(2400);
      assertThat(day.get("lanes")).isEmpty();
    }
  }
}
