package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Params;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A request's own statement carries the events it claims as one JSON value (V009's {@code
 * build_outbox_claim}), so the claim must fit the Data API's row ({@link RowLimits#MAX_ROW_BYTES})
 * whatever the backlog holds.
 */
@ExtendWith(PostgresExtension.class)
class OutboxClaimSizeTest {

  @Test
  void a_claim_of_events_with_long_errors_fits_one_data_api_row_and_leaves_the_rest_unclaimed(
      TestDatabase tdb) {
    long job = Rows.job().user("bob").insert(tdb.jdbc());
    String error = "e".repeat(RowLimits.MAX_ERROR_BYTES);
    for (int i = 0; i < OutboxTransitions.FOLDED_CLAIM; i++) {
      Rows.event(job).type("failed").message(error).insert(tdb.jdbc());
    }

    String claimed =
        tdb.jdbc()
            .query(
                "select build_outbox_claim(null::timestamptz, 60000::bigint, :limit::integer) as events",
                Params.of("limit", OutboxTransitions.FOLDED_CLAIM))
            .get(0)
            .string("events");

    int taken = OutboxTransitions.claimedOf(claimed).size();
    assertThat(claimed.getBytes(java.nio.charset.StandardCharsets.UTF_8).length)
        .isLessThan(RowLimits.MAX_ROW_BYTES);
    assertThat(taken).isBetween(1, OutboxTransitions.FOLDED_CLAIM - 1);
    long unclaimed =
        tdb.jdbc()
            .query(
                "select count(*) as n from build_job_event"
                    + " where publish_claimed_until is null and published_at is null")
            .get(0)
            .longValue("n");
    // Every event the job's rows wrote besides the claimed ones is left for the next claimer.
    long all = tdb.jdbc().query("select count(*) as n from build_job_event").get(0).longValue("n");
    assertThat(unclaimed).isEqualTo(all - taken);
  }
}
