package buildqueue.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An earlier buildqueue embedded PostgreSQL 14; this one embeds the template's major version, which
 * cannot open a 14 data directory. The server refuses such a directory with what to do, and leaves
 * it as it was.
 */
class DataDirectoryVersionTest {
  @TempDir Path dataDir;

  private LocalSettings settings() {
    return LocalSettings.defaults()
        .withPort(0)
        .withDataDir(dataDir)
        .withShutdownGrace(Duration.ZERO);
  }

  /** The files PostgreSQL 14's initdb leaves that matter here: PG_VERSION, and data beside it. */
  private Path oldCluster() throws Exception {
    Path pg = Files.createDirectories(dataDir.resolve("postgres"));
    Files.writeString(pg.resolve("PG_VERSION"), "14\n");
    Files.createDirectories(pg.resolve("base/5"));
    Files.writeString(pg.resolve("base/5/16384"), "the jobs of an earlier buildqueue");
    return pg;
  }

  @Test
  void a_data_directory_of_postgresql_14_is_refused_saying_what_to_do_and_left_as_it_was()
      throws Exception {
    Path pg = oldCluster();
    int major = EmbeddedCluster.embeddedMajorVersion();

    for (int attempt = 1;
        attempt <= 2;
        attempt++) { // the second sees the same refusal: nothing is held or changed
      assertThatThrownBy(() -> LocalRuntime.start(settings()))
          .isInstanceOf(BuildQueueException.class)
          .hasMessageContaining("made by PostgreSQL 14")
          .hasMessageContaining("runs PostgreSQL " + major)
          .hasMessageContaining(pg.toString())
          .hasMessageContaining("mv " + pg + " " + pg + "-pg14")
          .hasMessageContaining("Nothing was changed");
    }

    assertThat(Files.readString(pg.resolve("PG_VERSION"))).isEqualTo("14\n");
    assertThat(Files.readString(pg.resolve("base/5/16384")))
        .isEqualTo("the jobs of an earlier buildqueue");
    try (var files = Files.list(pg)) {
      assertThat(files.map(p -> p.getFileName().toString()))
          .containsExactlyInAnyOrder("PG_VERSION", "base");
    }
  }

  @Test
  void serve_on_a_data_directory_of_postgresql_14_exits_with_the_message_and_no_stack_trace()
      throws Exception {
    oldCluster();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();

    int code =
        new Main(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                Map.of("USER", "tester"))
            .run("serve", "--port", "0", "--data-dir", dataDir.toString());

    String printed = err.toString(StandardCharsets.UTF_8);
    assertThat(code).isEqualTo(Main.API_ERROR);
    assertThat(printed)
        .startsWith("buildqueue: the server did not start: the embedded PostgreSQL data in ")
        .contains("made by PostgreSQL 14")
        .contains("move the directory away")
        .doesNotContain("Exception")
        .doesNotContain("\tat ");
  }

  @Test
  void a_fresh_data_directory_is_made_by_the_major_version_the_server_expects_and_opens_again()
      throws Exception {
    try (LocalRuntime runtime = LocalRuntime.start(settings())) {
      assertThat(
              runtime
                  .database()
                  .query("show server_version_num")
                  .get(0)
                  .string("server_version_num"))
          .startsWith(Integer.toString(EmbeddedCluster.embeddedMajorVersion()));
    }
    assertThat(Files.readString(dataDir.resolve("postgres").resolve("PG_VERSION")).strip())
        .isEqualTo(Integer.toString(EmbeddedCluster.embeddedMajorVersion()));
    try (LocalRuntime again = LocalRuntime.start(settings())) {
      assertThat(again.database().query("select 1 as one")).hasSize(1);
    }
  }
}
