package buildqueue.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.kinds.ArtifactLimits;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checks before an upload, and the local store's rules (never overwrite, never escape). */
class ArtifactFilesTest {
  @TempDir Path dir;

  private Path write(String name, int bytes) throws Exception {
    Path f = dir.resolve("out").resolve(name);
    Files.createDirectories(f.getParent());
    Files.write(f, new byte[bytes]);
    return f;
  }

  @Test
  void files_are_collected_by_name_and_each_limit_is_named_when_broken() throws Exception {
    write("b.txt", 10);
    write("dist/a.bin", 20);
    Path out = dir.resolve("out");

    assertThat(ArtifactFiles.collect(out, ArtifactLimits.GLOBAL))
        .extracting(ArtifactFiles.LocalArtifact::name)
        .containsExactly("b.txt", "dist/a.bin");
    assertThatThrownBy(() -> ArtifactFiles.collect(out, new ArtifactLimits(1, 100, 100)))
        .hasMessageContaining("2 files")
        .hasMessageContaining("the limit (maxFiles) is 1");
    assertThatThrownBy(() -> ArtifactFiles.collect(out, new ArtifactLimits(5, 15, 100)))
        .hasMessageContaining("\"dist/a.bin\" has 20 bytes")
        .hasMessageContaining("(maxFileBytes) is 15");
    assertThatThrownBy(() -> ArtifactFiles.collect(out, new ArtifactLimits(5, 100, 25)))
        .hasMessageContaining("30 bytes in all")
        .hasMessageContaining("(maxTotalBytes) is 25");
    assertThat(ArtifactFiles.collect(dir.resolve("missing"), ArtifactLimits.GLOBAL)).isEmpty();
  }

  @Test
  void a_symbolic_link_is_refused_it_could_point_at_the_workers_own_files() throws Exception {
    write("ok.txt", 1);
    Files.createSymbolicLink(dir.resolve("out/secret"), Path.of("/etc/passwd"));

    assertThatThrownBy(() -> ArtifactFiles.collect(dir.resolve("out"), ArtifactLimits.GLOBAL))
        .hasMessageContaining("\"secret\" is not a regular file");
  }

  @Test
  void names_are_relative_without_dot_parts_control_characters_or_excess_length() {
    assertThat(ArtifactFiles.nameProblem("dist/app.tar.gz")).isNull();
    assertThat(ArtifactFiles.nameProblem("../x")).contains("\"..\"");
    assertThat(ArtifactFiles.nameProblem("/etc/x")).contains("relative");
    assertThat(ArtifactFiles.nameProblem("a//b")).contains("empty");
    assertThat(ArtifactFiles.nameProblem("a\nb")).contains("control character");
    assertThat(ArtifactFiles.nameProblem("x".repeat(256))).contains("the limit is 255 bytes");
  }

  @Test
  void the_directory_store_never_overwrites_and_removes_an_attempt_whole() throws Exception {
    DirectoryArtifactStore store = new DirectoryArtifactStore(dir.resolve("store"));
    AttemptKey key = new AttemptKey(7, 1, 3);
    Path f = write("a.txt", 4);

    ArtifactStore.StoredArtifact stored = store.put(key, "sub/a.txt", f);

    assertThat(stored.bytes()).isEqualTo(4);
    assertThat(stored.sha256())
        .isEqualTo("df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119");
    assertThatThrownBy(() -> store.put(key, "sub/a.txt", f))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThatThrownBy(() -> store.put(key, "../../escape", f)).hasMessageContaining("\"..\"");
    assertThat(store.download(key, "sub/a.txt", Duration.ofMinutes(1)))
        .isEqualTo(
            new ArtifactStore.Download.LocalFile(
                dir.resolve("store/jobs/7/attempt-1-worker-3/sub/a.txt"), 4));
    assertThat(store.isEmpty()).isFalse();

    store.removeAttempt(key);
    store.removeAttempt(key);

    assertThat(store.isEmpty()).isTrue();
  }
}
