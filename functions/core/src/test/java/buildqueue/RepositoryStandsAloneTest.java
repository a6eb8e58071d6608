package buildqueue;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A clone holds every document the code points to: no text file of the repository cites a file
 * outside it (the design notes and the original implementation the project was ported from lived
 * beside the repository, not in it), every {@code docs/…} path it names exists, every {@code §N} it
 * cites is a section of docs/architecture.md, and every relative link in a Markdown file reaches a
 * file. Failures name file:line.
 */
class RepositoryStandsAloneTest {
  /** Text that points outside the repository. Written split so this file does not match itself. */
  private static final List<String> OUTSIDE =
      List.of(
          "../" + "shared",
          "shared/" + "reference",
          "design" + ".md",
          "build_queue" + ".js",
          "aws-" + "facts.md",
          "aws-" + "facts §",
          "/work" + "/shared");

  private static final Pattern DOCS_PATH = Pattern.compile("\\bdocs/[A-Za-z0-9_./-]+\\.md");
  private static final Pattern SECTION = Pattern.compile("§(\\d+)(?:\\.(\\d+))?");
  private static final Pattern MARKDOWN_LINK = Pattern.compile("\\]\\(([^)#\\s]+)(?:#[^)]*)?\\)");
  private static final Set<String> TEXT =
      Set.of(
          "java",
          "md",
          "xml",
          "yaml",
          "yml",
          "json",
          "sql",
          "sh",
          "txt",
          "html",
          "js",
          "mjs",
          "py",
          "properties",
          "toml",
          "cfg");
  private static final Set<String> SKIPPED_DIRECTORIES =
      Set.of("target", "node_modules", ".git", ".idea");

  private static final Path ROOT = repositoryRoot();
  private static final Path ARCHITECTURE = ROOT.resolve("docs/architecture.md");

  @Test
  void no_text_file_points_outside_the_repository() {
    List<String> found = new ArrayList<>();
    for (Path file : textFiles()) {
      List<String> lines = lines(file);
      for (int i = 0; i < lines.size(); i++) {
        for (String outside : OUTSIDE) {
          if (lines.get(i).contains(outside)) {
            found.add(
                where(file, i)
                    + ": \""
                    + outside
                    + "\" is outside the repository; point to docs/architecture.md");
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void every_docs_path_named_exists() {
    List<String> found = new ArrayList<>();
    for (Path file : textFiles()) {
      List<String> lines = lines(file);
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = DOCS_PATH.matcher(lines.get(i));
        while (m.find()) {
          if (!Files.isRegularFile(ROOT.resolve(m.group()))) {
            found.add(where(file, i) + ": " + m.group() + " does not exist");
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void every_section_cited_is_a_section_of_the_architecture_document() {
    Set<String> sections = sections();
    int invariants = invariants();
    List<String> found = new ArrayList<>();
    for (Path file : textFiles()) {
      if (file.equals(ARCHITECTURE)) {
        continue;
      }
      List<String> lines = lines(file);
      boolean anchored = String.join("\n", lines).contains("architecture.md");
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = SECTION.matcher(lines.get(i));
        while (m.find()) {
          if (!anchored) {
            found.add(
                where(file, i)
                    + ": "
                    + m.group()
                    + " cites a section, but the file never says of what;"
                    + " name docs/architecture.md");
          } else if (m.group(2) != null && m.group(1).equals("5")) {
            if (Integer.parseInt(m.group(2)) > invariants) {
              found.add(
                  where(file, i)
                      + ": "
                      + m.group()
                      + ": there are "
                      + invariants
                      + " invariants in §5");
            }
          } else if (!sections.contains(
              m.group(2) == null ? m.group(1) : m.group(1) + "." + m.group(2))) {
            found.add(
                where(file, i)
                    + ": "
                    + m.group()
                    + " is not a section of docs/architecture.md "
                    + sections);
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void every_relative_link_in_a_markdown_file_reaches_a_file() {
    List<String> found = new ArrayList<>();
    for (Path file : textFiles()) {
      if (!file.toString().endsWith(".md")) {
        continue;
      }
      List<String> lines = lines(file);
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = MARKDOWN_LINK.matcher(lines.get(i));
        while (m.find()) {
          String target = m.group(1);
          if (target.contains("://") || target.startsWith("mailto:")) {
            continue;
          }
          Path resolved = file.getParent().resolve(target).normalize();
          if (!resolved.startsWith(ROOT) || !Files.exists(resolved)) {
            found.add(
                where(file, i) + ": the link " + target + " reaches no file of the repository");
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void the_check_reads_the_repository_and_finds_its_own_marker() {
    // Guards the scan itself: if it read no files (a wrong root), every test above would pass.
    assertThat(textFiles())
        .contains(ARCHITECTURE, ROOT.resolve("README.md"))
        .anyMatch(p -> p.endsWith("RepositoryStandsAloneTest.java"));
    assertThat(sections()).contains("1", "5", "12", "4.3");
    assertThat(invariants()).isEqualTo(10);
  }

  /** The numbers of docs/architecture.md's headings: "## 5. Invariants" → 5, "### 4.3 …" → 4.3. */
  private static Set<String> sections() {
    Set<String> sections = new TreeSet<>();
    Pattern heading = Pattern.compile("^#{2,3} (\\d+)(?:\\.(\\d+))?\\.? ");
    for (String line : lines(ARCHITECTURE)) {
      Matcher m = heading.matcher(line);
      if (m.find()) {
        sections.add(m.group(2) == null ? m.group(1) : m.group(1) + "." + m.group(2));
      }
    }
    return sections;
  }

  /** How many numbered items §5 lists. */
  private static int invariants() {
    int count = 0;
    boolean inSection = false;
    for (String line : lines(ARCHITECTURE)) {
      if (line.startsWith("## ")) {
        inSection = line.startsWith("## 5. ");
      } else if (inSection && line.matches("^\\d+\\. .*")) {
        count++;
      }
    }
    return count;
  }

  private static List<Path> textFiles() {
    List<Path> files = new ArrayList<>();
    try (Stream<Path> walk = Files.walk(ROOT)) {
      walk.filter(Files::isRegularFile)
          .filter(p -> ROOT.relativize(p).getNameCount() > 0)
          .filter(
              p -> {
                for (Path part : ROOT.relativize(p)) {
                  if (SKIPPED_DIRECTORIES.contains(part.toString())) {
                    return false;
                  }
                }
                return true;
              })
          .filter(RepositoryStandsAloneTest::isText)
          .sorted()
          .forEach(files::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return files;
  }

  private static boolean isText(Path p) {
    String name = p.getFileName().toString();
    int dot = name.lastIndexOf('.');
    return name.equals("Dockerfile")
        || name.equals("run")
        || (dot > 0 && TEXT.contains(name.substring(dot + 1)));
  }

  private static List<String> lines(Path file) {
    try {
      return List.of(
          StandardCharsets.UTF_8
              .newDecoder()
              .decode(java.nio.ByteBuffer.wrap(Files.readAllBytes(file)))
              .toString()
              .split("\n", -1));
    } catch (CharacterCodingException e) {
      return List.of(); // not text after all
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String where(Path file, int index) {
    return ROOT.relativize(file) + ":" + (index + 1);
  }

  /**
   * The directory holding the root pom.xml and README.md, found upwards from the test's directory.
   */
  static Path repositoryRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("README.md"))
          && Files.isDirectory(p.resolve("functions"))
          && Files.isRegularFile(p.resolve("pom.xml"))) {
        return p;
      }
    }
    throw new IllegalStateException(
        "no repository root (README.md, pom.xml and functions/) above "
            + Path.of("").toAbsolutePath());
  }
}
