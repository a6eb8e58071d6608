package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CommandLineSizesTest {
  private static CommandLine serve(String... args) {
    return CommandLine.parse(
        "serve", List.of(args), Set.of("max-log-bytes", "retention"), Set.of());
  }

  @Test
  void a_size_is_bytes_or_kib_mib_gib() {
    assertThat(serve("--max-log-bytes", "1048576").bytes("max-log-bytes", 7)).isEqualTo(1_048_576);
    assertThat(serve("--max-log-bytes", "512k").bytes("max-log-bytes", 7)).isEqualTo(512 * 1024);
    assertThat(serve("--max-log-bytes=100M").bytes("max-log-bytes", 7))
        .isEqualTo(100L * 1024 * 1024);
    assertThat(serve("--max-log-bytes", "2g").bytes("max-log-bytes", 7))
        .isEqualTo(2L * 1024 * 1024 * 1024);
    assertThat(serve().bytes("max-log-bytes", 7)).isEqualTo(7);
  }

  @Test
  void a_size_that_is_not_one_is_a_usage_error_naming_the_flag() {
    for (String bad : List.of("0", "-1", "ten", "5t", "", "m", "99999999999999999g")) {
      assertThatThrownBy(() -> serve("--max-log-bytes", bad).bytes("max-log-bytes", 7))
          .as(bad)
          .isInstanceOf(CommandLine.UsageException.class)
          .hasMessageContaining("--max-log-bytes");
    }
  }

  @Test
  void a_retention_is_given_in_days_too() {
    assertThat(serve("--retention", "7d").duration("retention", Duration.ZERO))
        .isEqualTo(Duration.ofDays(7));
    assertThatThrownBy(() -> serve("--retention", "7w").duration("retention", Duration.ZERO))
        .isInstanceOf(CommandLine.UsageException.class)
        .hasMessageContaining("7d");
  }
}
