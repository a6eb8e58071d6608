package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class QueueConfigTest {
  @Test
  void the_defaults_are_the_documented_values() {
    assertThat(QueueConfig.defaults())
        .isEqualTo(
            new QueueConfig(
                1,
                Duration.ofMinutes(60),
                Duration.ofMinutes(5),
                Duration.ofSeconds(60),
                Duration.ofMinutes(5),
                Duration.ofSeconds(5),
                Duration.ofSeconds(60),
                5,
                Duration.ofSeconds(10),
                Duration.ofDays(7),
                Duration.ZERO,
                QueueConfig.SharedOrder.FAIR,
                1000,
                Ledger.fargate()));
  }

  @Test
  void a_builder_changes_only_the_fields_it_names_and_to_builder_keeps_every_other() {
    QueueConfig config =
        QueueConfig.builder().sharedSlots(3).linger(Duration.ofSeconds(2)).maxQueuedJobs(7).build();

    assertThat(config)
        .isEqualTo(
            QueueConfig.defaults()
                .withSharedSlots(3)
                .withLinger(Duration.ofSeconds(2))
                .withMaxQueuedJobs(7));
    QueueConfig every =
        new QueueConfig(
            2,
            Duration.ofMinutes(9),
            Duration.ofMinutes(2),
            Duration.ofSeconds(7),
            Duration.ofSeconds(3),
            Duration.ofSeconds(4),
            Duration.ofSeconds(6),
            8,
            Duration.ofSeconds(11),
            Duration.ofDays(2),
            Duration.ofSeconds(1),
            QueueConfig.SharedOrder.FIFO,
            12,
            Ledger.fargate().withWorkerSize(250, 512).withBudget(3600L, "day"));
    assertThat(every.toBuilder().build()).isEqualTo(every);
    assertThat(every.withRetention(Duration.ofDays(3)))
        .isEqualTo(
            new QueueConfig(
                2,
                Duration.ofMinutes(9),
                Duration.ofMinutes(2),
                Duration.ofSeconds(7),
                Duration.ofSeconds(3),
                Duration.ofSeconds(4),
                Duration.ofSeconds(6),
                8,
                Duration.ofSeconds(11),
                Duration.ofDays(3),
                Duration.ofSeconds(1),
                QueueConfig.SharedOrder.FIFO,
                12,
                Ledger.fargate().withWorkerSize(250, 512).withBudget(3600L, "day")));
  }

  @Test
  void build_checks_the_settings_and_names_the_field() {
    assertThatThrownBy(() -> QueueConfig.builder().launchBackoff(Duration.ofSeconds(-1)).build())
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("launchBackoff");
  }
}
