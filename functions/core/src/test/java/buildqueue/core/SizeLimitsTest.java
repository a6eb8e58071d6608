package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.Caller;
import buildqueue.api.CheckedApi;
import buildqueue.api.HttpApi;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The largest jobs the API accepts, and the widest rows the queue can write, are read back by every
 * statement that returns them. On the JDBC adapter this shows the API's limits; in the queue suite
 * on the Data API adapter (functions/aws) it shows that each statement stays within the Data API's
 * 64 KB a row and 1 MiB an answer, which its fake enforces.
 */
@ExtendWith(PostgresExtension.class)
class SizeLimitsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String LARGEST = payloadOfStoredSize(RowLimits.MAX_PAYLOAD_BYTES);

  /** The longest user id the API takes, in bytes: 200 characters of 4 bytes. */
  private static final String WIDEST_USER = "\uD83D\uDE00".repeat(HttpApi.MAX_KEY_CHARS);

  private static final Caller ALICE = Caller.user("alice");

  /** {"f": "x…"}, exactly {@code bytes} long as jsonb stores it ({"f": "…"} adds 9). */
  static String payloadOfStoredSize(int bytes) {
    return "{\"f\": \"" + "x".repeat(bytes - 9) + "\"}";
  }

  @Test
  void the_largest_payload_the_api_accepts_starts_on_a_fresh_worker_and_succeeds(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      CheckedApi api = api(h);

      long id = created(api, ALICE, "noop", LARGEST);

      h.awaitStatus(id, "succeeded");
      assertThat(storedPayloadBytes(h, id)).isEqualTo(RowLimits.MAX_PAYLOAD_BYTES);
      JsonNode job = json(ok(api.handle(ApiRequest.of("GET", "/jobs/" + id, ALICE))));
      assertThat(job.get("payload").get("f").asText()).hasSize(RowLimits.MAX_PAYLOAD_BYTES - 9);
      h.awaitQuiet();
    }
  }

  @Test
  void the_largest_payload_the_api_accepts_is_chained_onto_a_running_worker_and_succeeds(
      TestDatabase tdb) throws InterruptedException {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      CheckedApi api = api(h);
      long first = created(api, ALICE, "gate", "{}");
      h.gates.awaitEntered(first);

      long chained = created(api, ALICE, "noop", LARGEST);
      h.gates.open(first);

      h.awaitStatus(chained, "succeeded");
      assertThat(h.job(chained).longValue("worker_id"))
          .isEqualTo(h.job(first).longValue("worker_id"));
      h.awaitQuiet();
    }
  }

  @Test
  void one_byte_more_is_refused_with_413_at_submit_and_writes_nothing(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Map<String, Long> before = rowCounts(h);

    ApiResponse r =
        submit(api(h), ALICE, "noop", payloadOfStoredSize(RowLimits.MAX_PAYLOAD_BYTES + 1));

    assertThat(r.status()).as(r.bodyText()).isEqualTo(413);
    assertThat(r.header("Content-Type")).hasValue("application/problem+json");
    assertThat(json(r).get("detail").asText())
        .contains(
            "takes 55001 bytes as stored",
            "the limit is 55000 bytes",
            "Nothing was written",
            "object storage");
    assertThat(rowCounts(h)).isEqualTo(before);
  }

  /** The largest job of the widest user, dispatched to the worker of the user's own lane. */
  private record WidestJob(QueueHarness h, CheckedApi api, long id, WorkerLaunch worker) {
    static WidestJob dispatched(TestDatabase tdb) {
      QueueHarness h = QueueHarness.manual(tdb);
      CheckedApi api = SizeLimitsTest.api(h);
      h.queue.setDedicated(WIDEST_USER, true);
      long id = created(api, Caller.user(WIDEST_USER), "noop", LARGEST);
      return new WidestJob(h, api, id, h.manual.lastLaunch());
    }

    /** GET {@code path} of the job ({@code ""} for the job itself) as its user: 200. */
    ApiResponse get(String path) {
      return ok(api.handle(ApiRequest.of("GET", "/jobs/" + id + path, Caller.user(WIDEST_USER))));
    }
  }

  @Test
  void the_widest_job_row_a_worker_can_leave_is_readable(TestDatabase tdb) {
    WidestJob j = WidestJob.dispatched(tdb);
    WorkerLaunch w = j.worker();

    assertThat(j.h().workers.start(w.workerId(), w.token()).orElseThrow().job()).isPresent();
    WorkerTransitions.Ended ended =
        j.h()
            .workers
            .end(w.workerId(), w.token(), j.id(), JobStatus.FAILED, "\uD83D\uDE00".repeat(25_000));

    assertThat(ended).isInstanceOf(WorkerTransitions.Ended.Drained.class);
    JsonNode job = json(j.get(""));
    assertThat(job.get("lane").asText()).isEqualTo("user:" + WIDEST_USER);
    assertThat(job.get("error").asText()).endsWith("…");
    assertThat(job.get("error").asText().getBytes(StandardCharsets.UTF_8).length)
        .isBetween(RowLimits.MAX_ERROR_BYTES - 4, RowLimits.MAX_ERROR_BYTES);
    assertThat(json(j.get("/events")).get("events").size()).isEqualTo(4);
  }

  @Test
  void the_largest_log_tail_a_worker_keeps_is_readable_beside_the_widest_job_row(TestDatabase tdb) {
    WidestJob j = WidestJob.dispatched(tdb);
    WorkerLaunch w = j.worker();
    j.h().workers.start(w.workerId(), w.token());
    String tail = "\uD83D\uDE00".repeat(RowLimits.MAX_LOG_TAIL_BYTES / 4);
    WorkerTransitions.LogWrite log =
        new WorkerTransitions.LogWrite(
            tail, 10_000_000L, "l".repeat(RowLimits.MAX_LOG_LOCATION_BYTES));

    assertThat(j.h().workers.checkIn(w.workerId(), w.token(), j.id(), 1, log))
        .isEqualTo(WorkerTransitions.ProgressAck.RECORDED);
    j.h()
        .workers
        .end(w.workerId(), w.token(), j.id(), JobStatus.FAILED, "\uD83D\uDE00".repeat(25_000), log);

    assertThat(j.get("/log").bodyText()).isEqualTo(tail);
    assertThat(json(j.get("")).get("status").asText()).isEqualTo("failed");
  }

  @Test
  void the_widest_history_rows_a_launch_failure_and_worker_exits_can_leave_are_readable(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    CheckedApi api = api(h);
    // Control characters: jsonb writes each as a 6-byte escape in an event's detail.
    String reason = "\u0001".repeat(20_000);
    h.manual.nextOutcomes(new LaunchOutcome.NotStarted(reason, false));
    long neverStarted = created(api, ALICE, "noop", LARGEST);
    assertThat(h.status(neverStarted)).isEqualTo("failed");

    long interrupted = created(api, ALICE, "noop", LARGEST);
    for (int exit = 0; exit <= ExitTransitions.MAX_RECOVERIES; exit++) {
      WorkerLaunch w = h.manual.lastLaunch();
      h.workers.start(w.workerId(), w.token());
      h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), null, reason);
    }
    assertThat(h.status(interrupted)).isEqualTo("failed");

    for (long id : List.of(neverStarted, interrupted)) {
      JsonNode job = json(ok(api.handle(ApiRequest.of("GET", "/jobs/" + id, ALICE))));
      assertThat(job.get("error").asText().getBytes(StandardCharsets.UTF_8).length)
          .isLessThanOrEqualTo(RowLimits.MAX_ERROR_BYTES + RowLimits.ERROR_WRAPPER_BYTES);
      JsonNode events =
          json(ok(api.handle(ApiRequest.of("GET", "/jobs/" + id + "/events", ALICE))));
      List<String> types = new java.util.ArrayList<>();
      events.get("events").forEach(e -> types.add(e.get("type").asText()));
      // The job ends failed; the exit that failed it then bills its worker (a cost event).
      assertThat(types).contains("failed");
      assertThat(types.subList(types.lastIndexOf("failed") + 1, types.size())).containsOnly("cost");
    }
  }

  @Test
  void a_follow_up_of_the_largest_payload_is_submitted_and_runs(TestDatabase tdb)
      throws InterruptedException {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long parent =
          created(
              api(h),
              ALICE,
              "gate",
              "{\"followUpPayloadBytes\": " + RowLimits.MAX_PAYLOAD_BYTES + "}");
      h.gates.awaitEntered(parent);
      h.gates.open(parent);

      h.awaitStatus(parent, "succeeded");
      long followUp = parent + 1;
      h.awaitStatus(followUp, "succeeded");
      assertThat(storedPayloadBytes(h, followUp)).isEqualTo(RowLimits.MAX_PAYLOAD_BYTES);
      h.awaitQuiet();
    }
  }

  @Test
  void a_follow_up_too_large_to_read_back_fails_its_job_and_none_is_submitted(TestDatabase tdb)
      throws InterruptedException {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long parent =
          created(
              api(h),
              ALICE,
              "gate",
              "{\"followUpPayloadBytes\": " + (RowLimits.MAX_PAYLOAD_BYTES + 1) + "}");
      h.gates.awaitEntered(parent);
      h.gates.open(parent);

      h.awaitStatus(parent, "failed");
      assertThat(h.job(parent).string("error"))
          .isEqualTo(
              "Follow-up job 1 has a payload of 55001 bytes as stored; the limit is 55000 bytes. No follow-up"
                  + " was submitted. Keep large inputs in object storage (e.g. S3) and pass a reference in the payload.");
      assertThat(rowCounts(h).get("build_job")).isEqualTo(1);
      h.awaitQuiet();
    }
  }

  @Test
  void
      the_largest_page_of_the_largest_jobs_answers_under_1_mib_with_next_links_that_reach_every_job(
          TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    CheckedApi api = api(h);
    h.queue.setDedicated(WIDEST_USER, true);
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < HttpApi.MAX_LIST_LIMIT; i++) {
      ids.add(h.queue.enqueue(WIDEST_USER, "noop", new Json(LARGEST), null).jobId());
    }
    // The widest error a job can have: a reason cut to MAX_ERROR_BYTES inside a statement's text.
    Rows.job()
        .status(JobStatus.FAILED)
        .error("e".repeat(RowLimits.MAX_ERROR_BYTES + RowLimits.ERROR_WRAPPER_BYTES))
        .updateAll(tdb.jdbc());

    List<Long> seen = new ArrayList<>();
    int pages = 0;
    for (String next = "/jobs?limit=" + HttpApi.MAX_LIST_LIMIT; next != null; pages++) {
      ApiResponse r = ok(api.handle(ApiRequest.of("GET", next, Caller.user(WIDEST_USER))));
      assertThat(r.body().length).isLessThan(RowLimits.MAX_RESPONSE_BYTES);
      JsonNode page = json(r);
      page.get("jobs").forEach(j -> seen.add(j.get("id").asLong()));
      next = page.get("next").isNull() ? null : page.get("next").asText();
    }

    assertThat(pages).isGreaterThan(1);
    java.util.Collections.reverse(ids);
    assertThat(seen).containsExactlyElementsOf(ids);
  }

  @Test
  void moving_more_queued_jobs_than_a_lane_change_lists_moves_them_all_and_counts_them(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Rows.job().user(WIDEST_USER).lane("shared").insert(tdb.jdbc(), 1500);

    JobTransitions.LaneChange change = h.queue.setDedicated(WIDEST_USER, true);

    assertThat(change.movedCount()).isEqualTo(1500);
    assertThat(change.movedJobs()).hasSize(JobTransitions.MAX_MOVED_LISTED).isSorted();
    assertThat(
            tdb.jdbc()
                .query(
                    "select count(*) as n from build_job where lane = :lane",
                    Params.of("lane", "user:" + WIDEST_USER))
                .get(0)
                .longValue("n"))
        .isEqualTo(1500);
  }

  @Test
  void the_lanes_page_of_the_widest_lanes_with_their_longest_queues_answers_every_lane(
      TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    CheckedApi api = api(h);
    List<String> users =
        List.of("a", "b", "c", "d").stream().map(p -> p + WIDEST_USER.substring(2)).toList();
    for (String user : users) {
      Rows.job().user(user).ownLane().insert(tdb.jdbc(), 200);
    }

    List<String> lanes = new ArrayList<>();
    for (String next = "/lanes?queuedLimit=" + HttpApi.MAX_LIST_LIMIT; next != null; ) {
      JsonNode page = json(ok(api.handle(ApiRequest.of("GET", next, Caller.admin("root")))));
      page.get("lanes")
          .forEach(
              l -> {
                lanes.add(l.get("lane").asText());
                assertThat(l.get("queuedJobs").size()).isEqualTo((int) l.get("queued").asLong());
              });
      next = page.get("next").isNull() ? null : page.get("next").asText();
    }

    assertThat(lanes)
        .containsExactlyElementsOf(
            java.util.stream.Stream.concat(
                    java.util.stream.Stream.of("shared"), users.stream().map(u -> "user:" + u))
                .sorted()
                .toList());
  }

  @Test
  void the_tick_dispatches_every_lane_when_more_lanes_wait_than_one_batch(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    Rows.insert(
        tdb.jdbc(),
        IntStream.rangeClosed(1, 150).mapToObj(n -> Rows.job().user("u" + n).ownLane()).toList());

    BuildQueue.TickReport report = h.queue.tick();

    assertThat(report.dispatched()).isEqualTo(150);
    assertThat(h.manual.launches()).hasSize(150);
  }

  private static CheckedApi api(QueueHarness h) {
    return new CheckedApi(
        new HttpApi(h.queue, new JobQueries(h.db, h.config, h.clock), h.handlers));
  }

  private static ApiResponse submit(CheckedApi api, Caller caller, String kind, String payload) {
    return api.handle(
        ApiRequest.json(
            "POST", "/jobs", "{\"kind\": \"" + kind + "\", \"payload\": " + payload + "}", caller));
  }

  private static long created(CheckedApi api, Caller caller, String kind, String payload) {
    ApiResponse r = submit(api, caller, kind, payload);
    assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
    return json(r).get("id").asLong();
  }

  private static ApiResponse ok(ApiResponse r) {
    assertThat(r.status()).as(r.bodyText()).isEqualTo(200);
    return r;
  }

  private static JsonNode json(ApiResponse r) {
    try {
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static long storedPayloadBytes(QueueHarness h, long id) {
    return h.testDb
        .jdbc()
        .query(
            "select octet_length(payload::text) as n from build_job where id = :id",
            Params.of("id", id))
        .get(0)
        .longValue("n");
  }

  private static Map<String, Long> rowCounts(QueueHarness h) {
    Map<String, Long> counts = new java.util.TreeMap<>();
    for (String table : List.of("build_job", "build_job_event", "build_worker", "build_user")) {
      counts.put(
          table, h.testDb.jdbc().query("select count(*) as n from " + table).get(0).longValue("n"));
    }
    return counts;
  }
}
