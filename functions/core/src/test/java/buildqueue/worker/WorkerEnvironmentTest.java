package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.core.QueueConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WorkerEnvironmentTest {
  private static final UUID TOKEN = UUID.fromString("0f8fad5b-d9cb-469f-a165-70867728950e");

  private static Map<String, String> complete() {
    Map<String, String> env = new HashMap<>();
    env.put(WorkerEnvironment.WORKER_ID, "42");
    env.put(WorkerEnvironment.WORKER_TOKEN, TOKEN.toString());
    env.put(WorkerEnvironment.DATABASE_URL, "jdbc:postgresql://localhost:5432/bq?password=hunter2");
    return env;
  }

  @Test
  void a_complete_environment_is_read_with_the_default_settings() {
    WorkerEnvironment env = WorkerEnvironment.read(complete());
    assertThat(env.workerId()).isEqualTo(42);
    assertThat(env.token()).isEqualTo(TOKEN);
    assertThat(env.databaseUser()).isNull();
    assertThat(env.config().chainWindow()).isEqualTo(Duration.ofMinutes(5));
  }

  @Test
  void each_missing_required_variable_is_named() {
    for (String name :
        new String[] {
          WorkerEnvironment.WORKER_ID,
          WorkerEnvironment.WORKER_TOKEN,
          WorkerEnvironment.DATABASE_URL
        }) {
      Map<String, String> env = complete();
      env.remove(name);
      assertThatThrownBy(() -> WorkerEnvironment.read(env))
          .isInstanceOf(BuildQueueException.class)
          .hasMessageStartingWith(name + " is not set");
    }
  }

  @Test
  void a_malformed_token_is_named_without_echoing_it() {
    Map<String, String> env = complete();
    env.put(WorkerEnvironment.WORKER_TOKEN, "not-a-uuid-secret");
    assertThatThrownBy(() -> WorkerEnvironment.read(env))
        .hasMessageContaining(WorkerEnvironment.WORKER_TOKEN)
        .hasMessageNotContaining("not-a-uuid-secret");
  }

  @Test
  void the_queue_settings_the_worker_applies_come_from_the_dispatcher() {
    Map<String, String> env = complete();
    env.put(WorkerEnvironment.CHAIN_WINDOW_MS, "0");
    env.put(WorkerEnvironment.DEADLINE_MARGIN_MS, "5000");
    WorkerEnvironment read = WorkerEnvironment.read(env);
    assertThat(read.config().chainWindow()).isZero();
    assertThat(read.config().deadlineMargin()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void the_shared_lanes_order_is_fair_unless_the_dispatcher_says_fifo() {
    assertThat(WorkerEnvironment.read(complete()).config().sharedOrder())
        .isEqualTo(QueueConfig.SharedOrder.FAIR);
    Map<String, String> env = complete();
    env.put(WorkerEnvironment.SHARED_ORDER, "fifo");
    assertThat(WorkerEnvironment.read(env).config().sharedOrder())
        .isEqualTo(QueueConfig.SharedOrder.FIFO);
    env.put(WorkerEnvironment.SHARED_ORDER, "round-robin");
    assertThatThrownBy(() -> WorkerEnvironment.read(env))
        .hasMessage(WorkerEnvironment.SHARED_ORDER + " must be fair or fifo, was \"round-robin\"");
  }

  @Test
  void its_text_form_leaves_out_the_token_and_the_url_parameters() {
    assertThat(WorkerEnvironment.read(complete()).toString())
        .doesNotContain(TOKEN.toString())
        .doesNotContain("hunter2");
  }

  @Test
  void a_worker_with_a_missing_variable_exits_with_the_environment_code() {
    Map<String, String> env = complete();
    env.remove(WorkerEnvironment.DATABASE_URL);
    assertThat(WorkerMain.run(env)).isEqualTo(WorkerMain.EXIT_BAD_ENVIRONMENT);
  }

  @Test
  void without_a_kind_catalogue_the_worker_knows_only_the_built_in_kinds() {
    WorkerEnvironment env = WorkerEnvironment.read(complete());

    assertThat(env.kindsFile()).isEmpty();
    assertThat(WorkerMain.handlers(env, complete()).kinds()).containsExactly("demo");
  }

  @Test
  void the_kind_catalogue_it_is_given_becomes_its_handlers(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("kinds.json");
    Files.writeString(
        file,
        "{\"kinds\": {\"render\": {\"command\": [\"node\", \"r.js\"], \"timeout\": \"15m\"}}}");
    Map<String, String> vars = complete();
    vars.put(WorkerEnvironment.KINDS_FILE, file.toString());

    WorkerEnvironment env = WorkerEnvironment.read(vars);

    assertThat(env.kindsFile()).contains(file);
    assertThat(WorkerMain.handlers(env, vars).kinds()).containsExactly("demo", "render");
  }

  @Test
  void a_relative_catalogue_path_is_refused_naming_the_variable() {
    Map<String, String> env = complete();
    env.put(WorkerEnvironment.KINDS_FILE, "kinds.json");

    assertThatThrownBy(() -> WorkerEnvironment.read(env))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining(WorkerEnvironment.KINDS_FILE)
        .hasMessageContaining("absolute path");
  }

  @Test
  void a_bad_catalogue_stops_the_worker_before_it_touches_the_database(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("kinds.json");
    Files.writeString(
        file, "{\"kinds\": {\"render\": {\"command\": \"node r.js\", \"timeout\": \"15m\"}}}");
    Map<String, String> env = complete();
    env.put(WorkerEnvironment.DATABASE_URL, "jdbc:postgresql://127.0.0.1:1/nothing-listens-here");
    env.put(WorkerEnvironment.KINDS_FILE, file.toString());

    assertThat(WorkerMain.run(env)).isEqualTo(WorkerMain.EXIT_BAD_ENVIRONMENT);
  }

  @Test
  void the_worker_lifetime_bounds_the_catalogue_as_the_servers_does() {
    Map<String, String> env = complete();
    env.put(
        WorkerEnvironment.WORKER_LIFETIME_MS, Long.toString(Duration.ofMinutes(120).toMillis()));

    assertThat(WorkerEnvironment.read(env).config().workerLifetime())
        .isEqualTo(Duration.ofMinutes(120));
  }
}
