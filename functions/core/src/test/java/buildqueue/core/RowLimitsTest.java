package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.api.HttpApi;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The budget in {@link RowLimits}'s javadoc adds up, and error texts are cut where it says. */
class RowLimitsTest {

  @Test
  void the_widest_job_row_and_the_widest_event_row_fit_the_data_api_row_limit() {
    assertThat(RowLimits.widestJobRowBytes())
        .isEqualTo(62_517)
        .isLessThanOrEqualTo(RowLimits.MAX_ROW_BYTES);
    assertThat(RowLimits.widestEventRowBytes())
        .isEqualTo(53_900)
        .isLessThanOrEqualTo(RowLimits.MAX_ROW_BYTES);
    assertThat(RowLimits.logTailRowBytes())
        .isEqualTo(62_312)
        .isLessThanOrEqualTo(RowLimits.MAX_ROW_BYTES);
  }

  @Test
  void the_user_id_budget_covers_the_longest_user_id_the_api_accepts() {
    assertThat(4 * HttpApi.MAX_KEY_CHARS).isLessThanOrEqualTo(RowLimits.MAX_USER_ID_BYTES);
  }

  @Test
  void an_error_within_the_limit_is_kept_as_it_is() {
    String text = "é".repeat(RowLimits.MAX_ERROR_BYTES / 2);
    assertThat(RowLimits.boundedError(text)).isSameAs(text);
    assertThat(RowLimits.boundedError(null)).isNull();
  }

  @Test
  void a_longer_error_is_cut_at_a_character_boundary_and_marked() {
    // 4-byte characters after one ASCII byte: no cut can land on a boundary by luck.
    String text = "x" + "\uD83D\uDE00".repeat(RowLimits.MAX_ERROR_BYTES);

    String cut = RowLimits.boundedError(text);

    byte[] bytes = cut.getBytes(StandardCharsets.UTF_8);
    assertThat(bytes.length)
        .isLessThanOrEqualTo(RowLimits.MAX_ERROR_BYTES)
        .isGreaterThan(RowLimits.MAX_ERROR_BYTES - 8);
    assertThat(cut).endsWith("…").startsWith("x\uD83D\uDE00");
    assertThat(new String(bytes, StandardCharsets.UTF_8)).isEqualTo(cut);
    assertThat(cut.substring(0, cut.length() - 1).codePoints().skip(1)).containsOnly(0x1F600);
  }
}
