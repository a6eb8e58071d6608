package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The order by priority, then age, is served by an index (V015), not by a sort of every queued job:
 * the walk's probe of a user's next job ({@code build_job_user_order}), a lane's next job without
 * turns and its run-next probe ({@code build_job_lane_order}). Each plan is printed; with 6,000
 * queued jobs of mixed priorities the planner reads one index entry, in order, for each.
 */
@ExtendWith(PostgresExtension.class)
class PriorityIndexTest {

  private static String plan(TestDatabase tdb, String sql) {
    String plan =
        tdb.jdbc().query("explain " + sql, Params.none()).stream()
            .map((Row r) -> r.string("QUERY PLAN"))
            .collect(Collectors.joining("\n"));
    System.out.println(sql + "\n" + plan + "\n");
    return plan;
  }

  @Test
  void the_next_job_by_priority_then_age_is_read_from_an_index_without_a_sort(TestDatabase tdb) {
    Rows.job().user("a").lane("shared").insert(tdb.jdbc(), 2000);
    Rows.job().user("b").lane("shared").insert(tdb.jdbc(), 2000);
    Rows.job().user("c").lane("user:c").insert(tdb.jdbc(), 2000);
    tdb.jdbc().update("update build_job set priority = (id % 3) - 1", Params.none());
    tdb.jdbc().update("analyze build_job", Params.none());
    String ready = "and (q.not_before is null or q.not_before <= now())";

    String user =
        plan(
            tdb,
            "select q.id from build_job q where q.user_id = 'a' and q.lane = 'shared'"
                + " and q.status = 'queued' "
                + ready
                + " order by q.priority desc, q.id limit 1 for update of q skip locked");
    String lane =
        plan(
            tdb,
            "select q.id from build_job q where q.lane = 'user:c' and q.status = 'queued' "
                + ready
                + " order by q.priority desc, q.id limit 1 for update of q skip locked");
    String next =
        plan(
            tdb,
            "select q.id from build_job q where q.lane = 'shared' and q.status = 'queued'"
                + " and q.priority = 2 "
                + ready
                + " order by q.priority desc, q.id limit 1 for update of q skip locked");

    assertThat(user).contains("build_job_user_order").doesNotContain("Sort");
    assertThat(lane).contains("build_job_lane_order").doesNotContain("Sort");
    assertThat(next).contains("build_job_lane_order").doesNotContain("Sort");
  }
}
