package buildqueue.aws.ecs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class EcsSettingsTest {
  static final List<String> SUBNETS = List.of("subnet-0aaa");

  @Test
  void each_missing_field_is_named_in_the_error() {
    assertThatThrownBy(() -> new EcsSettings(null, "td", SUBNETS, List.of(), false, "worker"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("cluster");
    assertThatThrownBy(() -> new EcsSettings("c", " ", SUBNETS, List.of(), false, "worker"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("taskDefinition");
    assertThatThrownBy(() -> new EcsSettings("c", "td", List.of(), List.of(), false, "worker"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("subnets")
        .hasMessageContaining("was 0");
    assertThatThrownBy(() -> new EcsSettings("c", "td", SUBNETS, null, false, "worker"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("securityGroups");
    assertThatThrownBy(() -> new EcsSettings("c", "td", SUBNETS, List.of(), false, ""))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("containerName");
  }

  @Test
  void invalid_values_are_named_in_the_error() {
    assertThatThrownBy(
            () -> new EcsSettings("my cluster", "td", SUBNETS, List.of(), false, "worker"))
        .hasMessageContaining("cluster")
        .hasMessageContaining("my cluster");
    assertThatThrownBy(
            () ->
                new EcsSettings(
                    "c", "td", Collections.nCopies(17, "subnet-0aaa"), List.of(), false, "worker"))
        .hasMessageContaining("subnets")
        .hasMessageContaining("17");
    assertThatThrownBy(
            () ->
                new EcsSettings(
                    "c", "td", SUBNETS, Collections.nCopies(6, "sg-1"), false, "worker"))
        .hasMessageContaining("securityGroups")
        .hasMessageContaining("6");
    assertThatThrownBy(
            () ->
                new EcsSettings("c", "td", List.of("subnet-0aaa", ""), List.of(), false, "worker"))
        .hasMessageContaining("subnets")
        .hasMessageContaining("position 2");
  }

  @Test
  void the_task_definition_is_a_family_a_revision_or_an_arn_and_passes_through_unchanged() {
    for (String td :
        List.of(
            "buildqueue-worker",
            "my_stack-worker:12",
            "arn:aws:ecs:eu-west-1:111122223333:task-definition/buildqueue-worker:3")) {
      assertThat(new EcsSettings("c", td, SUBNETS, List.of(), false, "worker").taskDefinition())
          .isEqualTo(td);
    }
    for (String bad :
        List.of(
            "buildqueue worker",
            "worker:0",
            "worker:latest",
            "worker:",
            "task-definition/worker:1",
            "arn:aws:ecs:eu-west-1:111122223333:cluster/buildqueue-worker")) {
      assertThatThrownBy(() -> new EcsSettings("c", bad, SUBNETS, List.of(), false, "worker"))
          .as(bad)
          .isInstanceOf(BuildQueueException.class)
          .hasMessageContaining("taskDefinition")
          .hasMessageContaining("'" + bad + "'");
    }
  }

  @Test
  void settings_are_immutable() {
    List<String> subnets = new ArrayList<>(SUBNETS);
    EcsSettings settings = new EcsSettings("c", "td", subnets, List.of(), false, "worker");
    subnets.add("subnet-0bbb");

    assertThat(settings.subnets()).containsExactly("subnet-0aaa");
    assertThatThrownBy(() -> settings.subnets().add("x"))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void a_cluster_given_by_arn_has_its_short_name() {
    EcsSettings byArn =
        new EcsSettings(
            "arn:aws:ecs:eu-west-1:111122223333:cluster/queue-workers",
            "td",
            SUBNETS,
            List.of(),
            false,
            "worker");

    assertThat(byArn.clusterName()).isEqualTo("queue-workers");
    assertThat(
            new EcsSettings("queue-workers", "td", SUBNETS, List.of(), false, "worker")
                .clusterName())
        .isEqualTo("queue-workers");
  }

  @Test
  void client_settings_name_the_bad_field() {
    assertThatThrownBy(() -> EcsClients.Settings.defaults(""))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("region");
    assertThatThrownBy(() -> EcsClients.Settings.defaults("eu-west-1").withMaxAttempts(0))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("maxAttempts");
    assertThatThrownBy(
            () -> EcsClients.Settings.defaults("eu-west-1").withTimeouts(null, null, null))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("socketTimeout");
  }

  @Test
  void the_default_call_timeout_ends_inside_the_queues_launch_grace() {
    assertThat(EcsClients.Settings.defaults("eu-west-1").callTimeout())
        .isLessThan(buildqueue.core.QueueConfig.defaults().launchGrace());
  }
}
