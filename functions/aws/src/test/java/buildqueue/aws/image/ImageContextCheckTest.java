package buildqueue.aws.image;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.testing.SampleEvents;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The check on small trees laid out like the repository: the real {@code infra/Dockerfile}, a
 * shaded jar, the catalogue and a program, with the ignore file, template and README varied.
 */
class ImageContextCheckTest {
  /** The .dockerignore the repository had before issue 21: only the jar gets in. */
  static final String JAR_ONLY =
      "# The worker image needs only the shaded jar.\n*\n!functions/aws/target/buildqueue-aws.jar\n";

  static final String TEMPLATE =
      """
      Resources:
        WorkerTaskDefinition:
          Type: AWS::ECS::TaskDefinition
          Properties:
            RuntimePlatform:
              CpuArchitecture: X86_64
              OperatingSystemFamily: LINUX
            ExecutionRoleArn: x
      """;
  static final String README =
      """
      # x
      ```sh
      docker build -f infra/Dockerfile --platform linux/amd64 \\
        -t "$REGISTRY/buildqueue-worker:0.1.0" .
      ```
      """;

  @TempDir Path root;

  @BeforeEach
  void tree() throws IOException {
    write("infra/Dockerfile", Files.readString(SampleEvents.repoFile("infra/Dockerfile")));
    write("functions/aws/target/buildqueue-aws.jar", "jar");
    write("infra/kinds/kinds.json", "{}");
    write("infra/programs/render-article/render.js", "//");
    write("template.yaml", TEMPLATE);
    write("README.md", README);
    write(".dockerignore", Files.readString(SampleEvents.repoFile(".dockerignore")));
  }

  private void write(String path, String text) throws IOException {
    Path p = root.resolve(path);
    Files.createDirectories(p.getParent());
    Files.writeString(p, text);
  }

  @Test
  void the_repositorys_ignore_file_lets_in_every_source() {
    assertThat(ImageContextCheck.problems(root)).isEmpty();
  }

  @Test
  void an_ignore_file_letting_in_only_the_jar_excludes_the_catalogue_and_the_programs()
      throws IOException {
    write(".dockerignore", JAR_ONLY);

    List<String> problems = ImageContextCheck.problems(root);

    assertThat(problems).hasSize(2);
    assertThat(problems.get(0))
        .contains("infra/Dockerfile: COPY infra/kinds/kinds.json")
        .contains("excluded from the build context by .dockerignore line 2 \"*\"");
    assertThat(problems.get(1))
        .contains("COPY infra/programs/")
        .contains("infra/programs is excluded");
  }

  @Test
  void a_source_missing_from_the_tree_is_a_problem_that_says_to_package_first() throws IOException {
    Files.delete(root.resolve("functions/aws/target/buildqueue-aws.jar"));

    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains("functions/aws/target/buildqueue-aws.jar is missing from the tree")
        .contains("mvn -B -ntp package -DskipTests");
  }

  @Test
  void a_file_left_out_under_a_copied_directory_is_a_problem() throws IOException {
    write(".dockerignore", Files.readString(root.resolve(".dockerignore")) + "**/*.md\n");
    write("infra/programs/render-article/NOTES.md", "x");

    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains("infra/programs/render-article/NOTES.md is excluded by .dockerignore")
        .contains("\"**/*.md\"")
        .contains("the image would lack it");
  }

  @Test
  void a_dockerfiles_own_ignore_file_wins_over_the_root_one() throws IOException {
    write("infra/Dockerfile.dockerignore", JAR_ONLY);
    assertThat(ImageContextCheck.problems(root))
        .hasSize(2)
        .allSatisfy(p -> assertThat(p).contains("infra/Dockerfile.dockerignore line 2"));

    write(
        "infra/Dockerfile.dockerignore",
        "*\n!functions/aws/target/*.jar\n!infra/kinds\n!infra/programs\n");
    write(".dockerignore", JAR_ONLY);
    assertThat(ImageContextCheck.problems(root)).isEmpty();
  }

  @Test
  void a_wildcard_source_needs_a_match_in_the_context() throws IOException {
    write(
        "infra/extra.Dockerfile",
        "FROM x\nCOPY infra/kinds/*.json /k/\nCOPY infra/kinds/*.yaml /k/\n");
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains(
            "infra/extra.Dockerfile: COPY infra/kinds/*.yaml (line 3): nothing in the tree matches");

    write(
        ".dockerignore", Files.readString(root.resolve(".dockerignore")) + "infra/kinds/*.json\n");
    assertThat(ImageContextCheck.problems(root))
        .anySatisfy(
            p ->
                assertThat(p)
                    .contains(
                        "COPY infra/kinds/*.json (line 2): every path matching infra/kinds/*.json is excluded"));
  }

  @Test
  void a_source_with_a_variable_cannot_be_checked_and_says_so() throws IOException {
    write(
        "infra/extra.Dockerfile",
        "FROM x\nARG JAR=functions/aws/target/buildqueue-aws.jar\nCOPY ${JAR} /app/\n");
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains("names a variable");
  }

  @Test
  void a_bad_pattern_in_the_ignore_file_is_a_problem() throws IOException {
    write(".dockerignore", "*\n!infra/[kinds\n");
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .startsWith(".dockerignore: syntax error in pattern");
  }

  @Test
  void a_build_command_without_the_task_definitions_platform_is_a_problem() throws IOException {
    write("README.md", README.replace(" --platform linux/amd64", ""));
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains("README.md line 3")
        .contains("has no --platform")
        .contains("--platform linux/amd64");

    write("README.md", README.replace("linux/amd64", "linux/arm64"));
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains(
            "builds for linux/arm64, but the task definition's RuntimePlatform is linux/amd64");

    write("README.md", README);
    // An ARM64 task definition: the README's command and the two in the Dockerfile's comments.
    write("template.yaml", TEMPLATE.replace("X86_64", "ARM64"));
    assertThat(ImageContextCheck.problems(root))
        .hasSize(3)
        .allSatisfy(
            p ->
                assertThat(p)
                    .contains(
                        "builds for linux/amd64, but the task definition's RuntimePlatform is linux/arm64"));
  }

  @Test
  void a_build_command_in_a_dockerfiles_comment_is_held_to_the_same_platform() throws IOException {
    write(
        "infra/extra.Dockerfile",
        "# Build: docker buildx build -f infra/extra.Dockerfile \\\n#   --platform=linux/arm64 .\nFROM x\n");
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains("infra/extra.Dockerfile line 1")
        .contains("builds for linux/arm64");
  }

  @Test
  void a_template_without_a_runtime_platform_or_a_readme_without_a_build_is_a_problem()
      throws IOException {
    write("README.md", "# nothing to build\n\nRun `docker build` somewhere.\n");
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .isEqualTo("README.md: no docker build command in a code block");

    write("template.yaml", TEMPLATE.replaceAll("(?s)RuntimePlatform:.*?LINUX\n", ""));
    assertThat(ImageContextCheck.problems(root))
        .singleElement()
        .asString()
        .contains("no RuntimePlatform");
  }
}
