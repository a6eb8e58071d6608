package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The build's guard on released migrations: an edit fails here, before it reaches any database
 * (where the migrator would refuse it, {@link Migrator}). Each released migration's SHA-256, as the
 * migrator records it; a new migration adds its line when it is released, and no line ever changes.
 * To change the schema, add a migration.
 */
class MigrationChecksumsTest {
  private static final Map<String, String> RELEASED = new LinkedHashMap<>();

  static {
    RELEASED.put(
        "V001__queue.sql", "d473a368e9bec9732784f2e8a13870fd828fec4ed5452ab4d6eef5db1a41bca0");
    RELEASED.put(
        "V002__event_publish_claim.sql",
        "95f6e7e31d66002e702db88c90bb3d4c77ff806717afc2a07aa8b99be537a51d");
    RELEASED.put(
        "V003__job_logs.sql", "30a30868c256849781d4cdfc559e8af61ed2cdba07e175271863d261abaa2caf");
    RELEASED.put(
        "V004__fair_shares.sql",
        "a2546bb9f2b6425ee0cc32564248ba1585132b2f635f9da5d93102775106b908");
    RELEASED.put(
        "V005__worker_role.sql",
        "776162084137085b4b0567ce6abdd3e0376fa9adf31538ac379844631d2ae0d8");
    RELEASED.put(
        "V006__worker_plans.sql",
        "3ca3ac423eb4bf901db994fd78ed54836955f6997e0d480179b2b574958d4569");
    RELEASED.put(
        "V007__worker_start_lock_order.sql",
        "a6ad5e6adfe14025345cfeb695e536709d83555bf566451657a64db8644bfa87");
    RELEASED.put(
        "V008__lane_choice.sql",
        "6e1efe921afdc365addab13bad7a93c80ce61238ff10b465e3205513ca2e2de2");
    RELEASED.put(
        "V009__fewer_round_trips.sql",
        "1b84a3013612d85a4ccc9f68a03d836454dc806bc52bf2e6d3797b1439fd4f43");
    RELEASED.put(
        "V010__chained_end_one_statement.sql",
        "614328a446c3dfed5849c31d158e7c5e93bda8a20f162f566d90ca2601ae6854");
    RELEASED.put(
        "V011__outbox_claim_fits_a_row.sql",
        "6f780992a6582c642543dee99d2157fc9808e2fe506a07a56450bd5ab1917b27");
    RELEASED.put(
        "V012__spot_reclaims.sql",
        "0f91d655cb93548f4d9dfb30e66ce35a417f1cea930121be27609da0f7be1682");
    RELEASED.put(
        "V013__compute_ledger.sql",
        "3180233b8886c448367fdd6a11c936d8b6208a992a7448b0fcea7765a00108f0");
    RELEASED.put(
        "V014__idle_tick.sql", "0d1aad06fc77a048530196a8a981b10a1fdc5b5ca3b9ab54a754ef51cbc6e574");
    RELEASED.put(
        "V015__priorities_and_pause.sql",
        "50fdce16aaa1ca19c7740b0cc700b9356631d49029bed1e6530bbdeed66eeff1");
    RELEASED.put(
        "V016__retry_links.sql",
        "4dce98c8690e45f88a30b916716da3552b432984d838ac458ea56b933496629a");
    RELEASED.put(
        "V017__lane_recent_finished.sql",
        "f1f1f53a923dac15b587083da4bdafba842a4e2e80a10de3003a6a062c0329c0");
    RELEASED.put(
        "V018__artifacts.sql", "9fa3c792d2272df2f3c772945e2ece2fc8b8593df381ad53e8dde6f68eda3880");
    RELEASED.put(
        "V019__webhooks_and_trace_context.sql",
        "90dffa01ca7d2abf4098e5d2d06a184d8937cbd37b0f500287e01484a6742fad");
  }

  @Test
  void every_migration_has_the_checksum_it_was_released_with() {
    assertThat(Migrator.MIGRATIONS)
        .as("each migration has its line here")
        .isEqualTo(RELEASED.keySet().stream().toList());
    RELEASED.forEach(
        (name, sum) ->
            assertThat(Migrator.checksumOf(name))
                .as(
                    name
                        + " was edited after its release: restore it and put the change in a new migration")
                .isEqualTo(sum));
  }

  @Test
  void the_checksum_is_of_the_text_whatever_its_line_ends() {
    assertThat(Migrator.checksum("select 1;\r\nselect 2;\r\n"))
        .isEqualTo(Migrator.checksum("select 1;\nselect 2;\n"));
    assertThat(Migrator.checksum("select 1;\n")).isNotEqualTo(Migrator.checksum("select 1; \n"));
  }
}
