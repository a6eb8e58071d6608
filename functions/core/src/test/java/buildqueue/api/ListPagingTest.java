package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.assertProblem;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobQueries;
import buildqueue.core.JobStatus;
import buildqueue.core.RowLimits;
import buildqueue.db.Params;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * How GET /jobs and GET /jobs/{id}/events page: by their limit and by a byte budget their statement
 * computes, with a {@code next} link that reaches every row once. The Data API side of it is in
 * {@code buildqueue.core.SizeLimitsTest}.
 */
class ListPagingTest extends ApiTest {
  @Override
  ApiFixture fixture(TestDatabase tdb) {
    // Workers that never start: the jobs stay as submitted.
    return new ApiFixture(tdb, QueueHarness.testConfig(), true);
  }

  @Test
  void small_jobs_fill_the_limit_and_the_next_link_goes_on_from_the_last_one() {
    List<Long> ids = submit(ALICE, 5, "{}");

    JsonNode first = json(f.get("/jobs?limit=2", ALICE));
    assertThat(ids(first.get("jobs"))).containsExactly(ids.get(4), ids.get(3));
    assertThat(first.get("next").asText()).isEqualTo("/jobs?limit=2&before=" + ids.get(3));

    JsonNode second = json(f.get(first.get("next").asText(), ALICE));
    assertThat(ids(second.get("jobs"))).containsExactly(ids.get(2), ids.get(1));

    JsonNode last = json(f.get(second.get("next").asText(), ALICE));
    assertThat(ids(last.get("jobs"))).containsExactly(ids.get(0));
    assertThat(last.get("next").isNull()).isTrue();
  }

  @Test
  void a_page_ends_before_its_jobs_pass_the_byte_budget_and_the_next_links_reach_every_job() {
    // Each job costs its payload (50,012 bytes as stored), its user id, lane and kind (15 bytes)
    // and
    // RowLimits.ROW_FIXED_BYTES: 50,539 bytes, so 10 fit in the budget of 524,288.
    List<Long> ids = submit(ALICE, 25, "{\"f\": \"" + "x".repeat(50_000) + "\"}");

    List<List<Long>> pages = pages("/jobs?limit=200", ALICE);

    assertThat(pages).extracting(List::size).containsExactly(10, 10, 5);
    assertThat(pages.stream().flatMap(List::stream)).containsExactlyElementsOf(reversed(ids));
  }

  @Test
  void a_job_is_never_left_off_its_page_for_being_large() {
    List<Long> ids =
        submit(ALICE, 3, "{\"f\": \"" + "x".repeat(RowLimits.MAX_PAYLOAD_BYTES - 12) + "\"}");

    assertThat(pages("/jobs?limit=1", ALICE))
        .containsExactly(List.of(ids.get(2)), List.of(ids.get(1)), List.of(ids.get(0)));
  }

  @Test
  void the_next_link_keeps_the_user_and_status_filters() {
    List<Long> alices = submit(ALICE, 3, "{}");
    submit(BOB, 2, "{}");
    Rows.job().status(JobStatus.CANCELLED).update(f.h.testDb.jdbc(), alices.get(1));

    JsonNode first = json(f.get("/jobs?userId=alice&status=queued,dispatched&limit=1", ADMIN));

    assertThat(first.get("next").asText())
        .isEqualTo("/jobs?status=dispatched,queued&userId=alice&limit=1&before=" + alices.get(2));
    assertThat(pages(first.get("next").asText(), ADMIN)).containsExactly(List.of(alices.get(0)));
  }

  @Test
  void a_cursor_that_is_not_an_id_is_400_naming_the_parameter() {
    JsonNode p = assertProblem(f.get("/jobs?before=x1", ALICE), 400, "/jobs");
    assertThat(p.get("detail").asText()).contains("\"before\" must be a job id", "\"next\" link");

    long job = submit(ALICE, 1, "{}").get(0);
    assertThat(
            assertProblem(
                    f.get("/jobs/" + job + "/events?after=-1", ALICE),
                    400,
                    "/jobs/" + job + "/events")
                .get("detail")
                .asText())
        .contains("\"after\" must be an event id");
    assertThat(
            assertProblem(f.get("/lanes?after=user%3Aa%00b", ADMIN), 400, "/lanes")
                .get("detail")
                .asText())
        .contains("\"after\" must be a lane");
  }

  @Test
  void a_jobs_history_pages_by_the_byte_budget_oldest_first() {
    long job = submit(ALICE, 1, "{}").get(0);
    // Each of these costs its message twice (in detail and as message), its type and
    // RowLimits.ROW_FIXED_BYTES: 60,532 bytes. The first page holds the job's own two events
    // (enqueued, dispatched) and 8 of them, 485,556 bytes; a 9th would pass the budget.
    Rows.event(job).message("m".repeat(30000)).insert(f.h.testDb.jdbc(), 20);
    List<Long> all = eventIds(job);

    List<List<Long>> pages = eventPages("/jobs/" + job + "/events");

    assertThat(pages).extracting(List::size).containsExactly(10, 8, 4);
    assertThat(pages.stream().flatMap(List::stream)).containsExactlyElementsOf(all);
  }

  @Test
  void a_jobs_history_of_small_events_pages_by_count() {
    long job = submit(ALICE, 1, "{}").get(0);
    Rows.insert(
        f.h.testDb.jdbc(),
        IntStream.rangeClosed(1, JobQueries.MAX_EVENTS_PER_PAGE - 1)
            .mapToObj(n -> Rows.event(job).message("n" + n))
            .toList());

    List<List<Long>> pages = eventPages("/jobs/" + job + "/events");

    // With the job's own two events: one more than a page holds.
    assertThat(pages).extracting(List::size).containsExactly(JobQueries.MAX_EVENTS_PER_PAGE, 1);
    assertThat(pages.stream().flatMap(List::stream)).containsExactlyElementsOf(eventIds(job));
  }

  @Test
  void many_lanes_page_by_count_and_the_next_links_reach_every_lane() {
    Rows.insert(
        f.h.testDb.jdbc(),
        IntStream.rangeClosed(1, 500)
            .mapToObj(n -> Rows.user("u%03d".formatted(n)).dedicated(true))
            .toList());

    List<List<String>> pages = lanePages("/lanes?queuedLimit=0");

    assertThat(pages)
        .extracting(List::size)
        .containsExactly(JobQueries.MAX_LANES_PER_PAGE, 501 - JobQueries.MAX_LANES_PER_PAGE);
    assertThat(pages.stream().flatMap(List::stream))
        .hasSize(501)
        .doesNotHaveDuplicates()
        .startsWith("shared", "user:u001")
        .endsWith("user:u500");
  }

  @Test
  void a_lane_with_a_long_queue_takes_a_page_of_its_own_at_the_largest_queued_limit() {
    // Shown with 200 queued jobs, each lane costs 200 head rows of at most 2,317 bytes: two such
    // lanes would pass the budget.
    for (String user : List.of("ann", "ben", "cat")) {
      Rows.job().user(user).ownLane().insert(f.h.testDb.jdbc(), 200);
    }

    List<List<String>> pages = lanePages("/lanes?queuedLimit=200");

    assertThat(pages)
        .containsExactly(List.of("shared", "user:ann"), List.of("user:ben"), List.of("user:cat"));
  }

  private List<List<String>> lanePages(String first) {
    List<List<String>> pages = new ArrayList<>();
    for (String next = first; next != null; ) {
      ApiResponse r = f.get(next, ADMIN);
      assertThat(r.status()).as(r.bodyText()).isEqualTo(200);
      JsonNode page = json(r);
      List<String> lanes = new ArrayList<>();
      page.get("lanes")
          .forEach(
              l -> {
                lanes.add(l.get("lane").asText());
                assertThat(l.get("queuedJobs").size())
                    .isEqualTo((int) Math.min(l.get("queued").asLong(), limitOf(first)));
              });
      pages.add(lanes);
      next = page.get("next").isNull() ? null : page.get("next").asText();
    }
    return pages;
  }

  private static int limitOf(String target) {
    return Integer.parseInt(target.replaceAll(".*queuedLimit=([0-9]+).*", "$1"));
  }

  private List<Long> submit(Caller caller, int n, String payload) {
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(f.submit(caller, "noop", payload));
    }
    return ids;
  }

  /** Every page's job ids, following {@code next} from {@code first}. */
  private List<List<Long>> pages(String first, Caller caller) {
    List<List<Long>> pages = new ArrayList<>();
    for (String next = first; next != null; ) {
      ApiResponse r = f.get(next, caller);
      assertThat(r.status()).as(r.bodyText()).isEqualTo(200);
      JsonNode page = json(r);
      pages.add(ids(page.get("jobs")));
      next = page.get("next").isNull() ? null : page.get("next").asText();
    }
    return pages;
  }

  private List<List<Long>> eventPages(String first) {
    List<List<Long>> pages = new ArrayList<>();
    for (String next = first; next != null; ) {
      JsonNode page = json(f.get(next, ALICE));
      pages.add(ids(page.get("events")));
      next = page.get("next").isNull() ? null : page.get("next").asText();
    }
    return pages;
  }

  private List<Long> eventIds(long job) {
    return f
        .h
        .testDb
        .jdbc()
        .query(
            "select id from build_job_event where job_id = :job order by id", Params.of("job", job))
        .stream()
        .map(r -> r.longValue("id"))
        .toList();
  }

  private static List<Long> ids(JsonNode list) {
    List<Long> ids = new ArrayList<>();
    list.forEach(j -> ids.add(j.get("id").asLong()));
    return ids;
  }

  private static List<Long> reversed(List<Long> ids) {
    return LongStream.range(0, ids.size())
        .mapToObj(i -> ids.get(ids.size() - 1 - (int) i))
        .toList();
  }
}
