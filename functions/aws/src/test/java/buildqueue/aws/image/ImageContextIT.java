package buildqueue.aws.image;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.testing.SampleEvents;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * After {@code package}, with the shaded jar in place: the repository's worker image builds from
 * its context as the README says, for the platform the task definition runs. No Docker engine is
 * needed: {@link ImageContextCheck} applies Docker's rules.
 */
class ImageContextIT {
  private static final Path ROOT =
      SampleEvents.repoFile("infra/Dockerfile").getParent().getParent();

  @Test
  void every_copy_source_of_the_worker_image_is_in_its_build_context_after_package() {
    assertThat(ROOT.resolve("functions/aws/target/buildqueue-aws.jar"))
        .as("the shaded jar (package)")
        .isRegularFile();
    List<Dockerfiles.Source> sources =
        Dockerfiles.contextSources(ImageContextCheck.read(ROOT.resolve("infra/Dockerfile")));
    assertThat(sources)
        .extracting(Dockerfiles.Source::path)
        .contains(
            "functions/aws/target/buildqueue-aws.jar", "infra/kinds/kinds.json", "infra/programs/");

    assertThat(ImageContextCheck.problems(ROOT)).isEmpty();
  }

  @Test
  void the_readmes_build_command_builds_for_the_task_definitions_runtime_platform() {
    List<ImagePlatform.RuntimePlatform> platforms =
        ImagePlatform.runtimePlatforms(ImageContextCheck.read(ROOT.resolve("template.yaml")));
    List<ImagePlatform.BuildCommand> commands =
        ImagePlatform.markdownBuildCommands(ImageContextCheck.read(ROOT.resolve("README.md")));

    assertThat(platforms)
        .as("RuntimePlatform blocks in template.yaml")
        .singleElement()
        .extracting(ImagePlatform.RuntimePlatform::dockerPlatform)
        .isEqualTo("linux/amd64");
    assertThat(commands)
        .as("docker build commands in the README")
        .isNotEmpty()
        .allSatisfy(
            c ->
                assertThat(c.platform()).as(c.text()).isEqualTo(platforms.get(0).dockerPlatform()));
  }

  @Test
  void the_check_runs_from_the_test_classes_alone_and_exits_by_its_findings(@TempDir Path other)
      throws Exception {
    Run clean = run(ROOT);
    assertThat(clean.code()).as(clean.output()).isZero();
    assertThat(clean.output())
        .startsWith("image context ok: 1 Dockerfile(s), 3 context source(s), platform linux/amd64");

    // The same tree with the ignore file the repository had: only the jar let in.
    for (String f :
        List.of(
            "infra/Dockerfile",
            "infra/kinds/kinds.json",
            "template.yaml",
            "README.md",
            "functions/aws/target/buildqueue-aws.jar",
            "infra/programs/render-article/render.js")) {
      Files.createDirectories(other.resolve(f).getParent());
      Files.copy(ROOT.resolve(f), other.resolve(f));
    }
    Files.writeString(other.resolve(".dockerignore"), ImageContextCheckTest.JAR_ONLY);
    Run broken = run(other);
    assertThat(broken.code()).as(broken.output()).isEqualTo(1);
    assertThat(broken.output().lines().filter(l -> l.startsWith("problem: "))).hasSize(2);
    assertThat(broken.output())
        .contains(
            "infra/kinds/kinds.json is excluded from the build context by .dockerignore line 2");
  }

  private record Run(int code, String output) {}

  private static Run run(Path root) throws IOException, InterruptedException {
    ProcessBuilder pb =
        new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            Path.of("target", "test-classes").toString(),
            ImageContextCheck.class.getName(),
            root.toString());
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Run(p.exitValue(), output);
  }
}
