package buildqueue.aws.image;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Checks, without Docker, that the worker image builds from the repository as the README says:
 *
 * <ul>
 *   <li>every {@code COPY}/{@code ADD} source of every Dockerfile under {@code infra/} is in the
 *       tree and in the build context (the repository root), under the Dockerfile's own ignore file
 *       ({@code <Dockerfile>.dockerignore}) if it has one, else the root {@code .dockerignore},
 *       with Docker's matching rules ({@link DockerIgnore}). A source that the ignore file leaves
 *       out is a problem, as for Docker's CopyIgnoredFile check (the build fails with "not found");
 *       so is a file under a copied directory that it leaves out (the image would silently lack
 *       it);
 *   <li>every {@code docker build} command in the README's code blocks and in the Dockerfiles'
 *       comments passes {@code --platform} equal to the task definition's {@code RuntimePlatform}
 *       in {@code template.yaml}.
 * </ul>
 *
 * <p>Run it after {@code mvn package} (the shaded jar is a source): {@code java -cp
 * functions/aws/target/test-classes buildqueue.aws.image.ImageContextCheck <repository root>}.
 * Prints each problem and exits 1 if there is any, 0 if none, 2 on a usage error. JDK only.
 */
public final class ImageContextCheck {
  private ImageContextCheck() {}

  static final String DOCKERFILES = "infra";
  static final String IGNORE_FILE = ".dockerignore";
  private static final Pattern GLOB = Pattern.compile("(?<!\\\\)[*?\\[]");

  public static void main(String[] args) {
    if (args.length != 1 || !Files.isDirectory(Path.of(args[0]))) {
      System.err.println("usage: ImageContextCheck <repository root>");
      System.exit(2);
    }
    Path root = Path.of(args[0]).toAbsolutePath().normalize();
    List<String> problems = problems(root);
    problems.forEach(p -> System.out.println("problem: " + p));
    if (!problems.isEmpty()) {
      System.out.println(
          problems.size() + " problem(s): the worker image would not build as the README says");
      System.exit(1);
    }
    System.out.println("image context ok: " + summary(root));
  }

  /** Every problem found; empty if the image's context and platform are right. */
  public static List<String> problems(Path root) {
    List<String> problems = new ArrayList<>();
    List<Path> dockerfiles = dockerfiles(root);
    if (dockerfiles.isEmpty()) {
      problems.add("no Dockerfile under " + DOCKERFILES + "/");
    }
    for (Path dockerfile : dockerfiles) {
      problems.addAll(contextProblems(root, dockerfile));
    }
    problems.addAll(platformProblems(root, dockerfiles));
    return problems;
  }

  static String summary(Path root) {
    List<Path> dockerfiles = dockerfiles(root);
    long sources =
        dockerfiles.stream().mapToLong(d -> Dockerfiles.contextSources(read(d)).size()).sum();
    return dockerfiles.size()
        + " Dockerfile(s), "
        + sources
        + " context source(s), platform "
        + ImagePlatform.runtimePlatforms(read(root.resolve("template.yaml")))
            .get(0)
            .dockerPlatform();
  }

  static List<Path> dockerfiles(Path root) {
    Path dir = root.resolve(DOCKERFILES);
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files
          .filter(Files::isRegularFile)
          .filter(ImageContextCheck::isDockerfile)
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static boolean isDockerfile(Path p) {
    String name = p.getFileName().toString();
    return !name.endsWith(IGNORE_FILE)
        && (name.equals("Dockerfile")
            || name.startsWith("Dockerfile.")
            || name.endsWith(".Dockerfile"));
  }

  /** The ignore file Docker applies to a build of this Dockerfile with the root as its context. */
  static Path ignoreFileFor(Path root, Path dockerfile) {
    Path own = dockerfile.resolveSibling(dockerfile.getFileName() + IGNORE_FILE);
    return Files.exists(own) ? own : root.resolve(IGNORE_FILE);
  }

  static List<String> contextProblems(Path root, Path dockerfile) {
    List<String> problems = new ArrayList<>();
    String name = relative(root, dockerfile);
    Path ignoreFile = ignoreFileFor(root, dockerfile);
    String ignoreName = relative(root, ignoreFile);
    DockerIgnore ignore;
    try {
      ignore =
          Files.exists(ignoreFile) ? DockerIgnore.parse(read(ignoreFile)) : DockerIgnore.none();
    } catch (IllegalArgumentException e) {
      return List.of(ignoreName + ": " + e.getMessage() + " (Docker refuses the build)");
    }
    for (Dockerfiles.Source source : Dockerfiles.contextSources(read(dockerfile))) {
      String where = name + ": " + source;
      if (source.path().contains("$")) {
        problems.add(where + ": names a variable; this check reads literal paths only");
        continue;
      }
      // Docker reads a source relative to the context root; it cannot leave the context.
      String path = GoPaths.clean("/" + source.path()).substring(1);
      if (path.isEmpty()) {
        continue; // the whole context
      }
      if (GLOB.matcher(path).find()) {
        globProblems(root, where, path, ignore, ignoreName, problems);
        continue;
      }
      Path file = root.resolve(path);
      if (!Files.exists(file)) {
        problems.add(
            where
                + ": "
                + path
                + " is missing from the tree"
                + (path.contains("/target/")
                    ? " (run mvn -B -ntp package -DskipTests first)"
                    : ""));
        continue;
      }
      DockerIgnore.Decision d = ignore.decide(path);
      if (d.excluded()) {
        problems.add(
            where
                + ": "
                + path
                + " is excluded from the build context by "
                + ignoreName
                + " "
                + d.by().orElseThrow()
                + ", so Docker cannot copy it");
        continue;
      }
      if (Files.isDirectory(file)) {
        for (String under : tree(root, path)) {
          DockerIgnore.Decision u = ignore.decide(under);
          if (u.excluded()) {
            problems.add(
                where
                    + ": "
                    + under
                    + " is excluded by "
                    + ignoreName
                    + " "
                    + u.by().orElseThrow()
                    + ", so the image would lack it");
          }
        }
      }
    }
    return problems;
  }

  private static void globProblems(
      Path root,
      String where,
      String glob,
      DockerIgnore ignore,
      String ignoreName,
      List<String> problems) {
    DockerIgnore.Matcher matcher = DockerIgnore.Matcher.of(glob);
    Matcher first = GLOB.matcher(glob);
    first.find();
    int slash = glob.lastIndexOf('/', first.start());
    List<String> matches =
        tree(root, slash < 0 ? "" : glob.substring(0, slash)).stream()
            .filter(matcher::matches)
            .toList();
    if (matches.isEmpty()) {
      problems.add(where + ": nothing in the tree matches " + glob);
    } else if (matches.stream().allMatch(ignore::excludes)) {
      problems.add(where + ": every path matching " + glob + " is excluded by " + ignoreName);
    }
  }

  static List<String> platformProblems(Path root, List<Path> dockerfiles) {
    List<String> problems = new ArrayList<>();
    List<ImagePlatform.RuntimePlatform> platforms =
        ImagePlatform.runtimePlatforms(read(root.resolve("template.yaml")));
    if (platforms.isEmpty()) {
      return List.of(
          "template.yaml: no RuntimePlatform in the task definition, so the image's platform is unstated");
    }
    String expected = platforms.get(0).dockerPlatform();
    for (ImagePlatform.RuntimePlatform p : platforms) {
      if (p.dockerPlatform() == null) {
        problems.add(
            "template.yaml line "
                + p.line()
                + ": RuntimePlatform "
                + p.operatingSystemFamily()
                + "/"
                + p.cpuArchitecture()
                + " has no Linux image platform this check knows (LINUX with X86_64 or ARM64)");
      } else if (!p.dockerPlatform().equals(expected)) {
        problems.add(
            "template.yaml line "
                + p.line()
                + ": RuntimePlatform "
                + p.dockerPlatform()
                + " differs from "
                + expected
                + " (line "
                + platforms.get(0).line()
                + "): one image cannot serve both");
      }
    }
    if (expected == null) {
      return problems;
    }
    List<ImagePlatform.BuildCommand> readme =
        ImagePlatform.markdownBuildCommands(read(root.resolve("README.md")));
    if (readme.isEmpty()) {
      problems.add("README.md: no docker build command in a code block");
    }
    check(problems, "README.md", readme, expected);
    for (Path d : dockerfiles) {
      check(problems, relative(root, d), ImagePlatform.commentBuildCommands(read(d)), expected);
    }
    return problems;
  }

  private static void check(
      List<String> problems,
      String doc,
      List<ImagePlatform.BuildCommand> commands,
      String expected) {
    for (ImagePlatform.BuildCommand c : commands) {
      if (c.platform() == null) {
        problems.add(
            doc
                + " line "
                + c.line()
                + ": `"
                + c.text()
                + "` has no --platform; the task definition's"
                + " RuntimePlatform needs --platform "
                + expected);
      } else if (!c.platform().equals(expected)) {
        problems.add(
            doc
                + " line "
                + c.line()
                + ": `"
                + c.text()
                + "` builds for "
                + c.platform()
                + ", but the task definition's RuntimePlatform is "
                + expected);
      }
    }
  }

  /**
   * Every file and directory under a directory of the tree, as slash-separated paths from the root.
   */
  static List<String> tree(Path root, String under) {
    Path dir = root.resolve(under);
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> all = Files.walk(dir)) {
      return all.filter(p -> !p.equals(dir))
          .map(p -> relative(root, p))
          .filter(p -> !p.startsWith(".git/"))
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String relative(Path root, Path p) {
    return root.relativize(p).toString().replace('\\', '/');
  }

  static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
