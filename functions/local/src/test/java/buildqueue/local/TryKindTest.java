package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code try KIND PAYLOAD}: one job on a queue of its own (embedded PostgreSQL in a temporary
 * directory, a worker as a child process), its log and outcome printed, its outcome the exit code.
 */
class TryKindTest {
  private static final String REPORT =
      """
      {"kinds": {"report": {"command": ["sh", "-c", "echo writing report; echo '{\\"progress\\": 1}' >> \\"$BUILDQUEUE_CONTROL\\""],
        "timeout": "5m",
        "payloadSchema": {"type": "object", "required": ["sections"],
          "properties": {"sections": {"type": "integer", "minimum": 1}}}}}}
      """;

  @TempDir Path dir;
  private final Map<String, String> env = new HashMap<>(Map.of("USER", "tester"));
  private String out;
  private String err;

  private int run(String... args) {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    Main main =
        new Main(
            new PrintStream(o, true, StandardCharsets.UTF_8),
            new PrintStream(e, true, StandardCharsets.UTF_8),
            env);
    int code = assertTimeoutPreemptively(Duration.ofSeconds(180), () -> main.run(args));
    out = o.toString(StandardCharsets.UTF_8);
    err = e.toString(StandardCharsets.UTF_8);
    return code;
  }

  private Path catalogue(String json) throws Exception {
    Path file = dir.resolve("kinds.json");
    Files.writeString(file, json);
    return file;
  }

  @Test
  void try_runs_a_demo_job_in_the_foreground_prints_its_log_and_outcome_and_exits_0() {
    int code = run("try", "demo", "{\"steps\": 2, \"stepMillis\": 1}");

    assertThat(code).as("out: %s%nerr: %s", out, err).isEqualTo(Main.OK);
    assertThat(out)
        .contains("step 1 of 2 done", "step 2 of 2 done")
        .contains("succeeded after 1 attempt, progress 2");
  }

  @Test
  void try_of_a_job_that_fails_prints_its_error_and_exits_1() {
    int code = run("try", "demo", "{\"steps\": 3, \"stepMillis\": 1, \"failAtStep\": 2}");

    assertThat(code).as("out: %s%nerr: %s", out, err).isEqualTo(Main.API_ERROR);
    assertThat(out)
        .contains("step 1 of 3 done")
        .doesNotContain("step 2 of 3 done")
        .contains("failed after 1 attempt, progress 1: demo job failed on purpose at step 2 of 3");
  }

  @Test
  void try_runs_a_kind_of_the_catalogue_named_by_the_environment() throws Exception {
    env.put(TryCommand.KINDS_FILE_ENV, catalogue(REPORT).toString());

    int code = run("try", "report", "{\"sections\": 1}");

    assertThat(code).as("out: %s%nerr: %s", out, err).isEqualTo(Main.OK);
    assertThat(out).contains("writing report").contains("succeeded");
  }

  @Test
  void try_refuses_a_payload_its_kind_rejects_with_exit_2_naming_the_path_and_runs_nothing()
      throws Exception {
    int code =
        run("try", "report", "{\"sections\": \"five\"}", "--kinds", catalogue(REPORT).toString());

    assertThat(code).isEqualTo(Main.USAGE);
    assertThat(err).contains("$.sections");
    assertThat(out).doesNotContain("writing report").doesNotContain("queued");
  }

  @Test
  void try_with_a_bad_catalogue_exits_2_naming_the_file_and_the_key() throws Exception {
    Path bad =
        catalogue(
            "{\"kinds\": {\"report\": {\"command\": [\"sh\", \"r.sh\"], \"timeout\": \"ten minutes\"}}}");

    int code = run("try", "report", "{}", "--kinds", bad.toString());

    assertThat(code).isEqualTo(Main.USAGE);
    assertThat(err).contains(bad.toString()).contains("kind \"report\"").contains("\"timeout\"");
  }

  @Test
  void try_without_a_payload_says_how_to_give_one() {
    int code = run("try", "demo");

    assertThat(code).isEqualTo(Main.USAGE);
    assertThat(err).contains("try <kind> <payload-json>");
  }
}
