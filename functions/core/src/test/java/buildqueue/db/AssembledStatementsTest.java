package buildqueue.db;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A statement assembled from shared pieces with {@code String.formatted} exists whole only at run
 * time, so a reviewer of the Java never reads what the database runs. Each one is pinned here as
 * the whole text in {@code src/test/resources/buildqueue/statements/Class.FIELD.sql} (a text block
 * or a template constant, then {@code .formatted}): a change to a piece shows in the diff as the
 * change to every statement it reaches. Found by scanning the main sources, so a new assembled
 * statement fails until its text is pinned. To rewrite the files after a deliberate change: {@code
 * -Dstatements.pin=true}.
 */
class AssembledStatementsTest {
  private static final Path SOURCES = Path.of("src/main/java");
  private static final Path PINNED = Path.of("src/test/resources/buildqueue/statements");
  private static final Pattern ASSEMBLED =
      Pattern.compile(
          "static final String (\\w+) =\\s*(?:\"\"\"(?:(?!\"\"\").)*\"\"\"\\s*|[A-Z_]+)\\.formatted\\(",
          Pattern.DOTALL);

  record Statement(String className, String field, String text) {
    Path pinned() {
      return PINNED.resolve(
          className.substring(className.lastIndexOf('.') + 1) + "." + field + ".sql");
    }
  }

  @Test
  void every_assembled_statement_is_the_text_pinned_beside_the_tests() throws Exception {
    List<Statement> statements = assembledStatements();
    assertThat(statements).as("the scan finds the assembled statements").isNotEmpty();
    boolean pin = Boolean.getBoolean("statements.pin");
    for (Statement s : statements) {
      if (pin) {
        Files.createDirectories(PINNED);
        Files.writeString(s.pinned(), s.text());
      }
      assertThat(s.pinned())
          .as("%s.%s is pinned (-Dstatements.pin=true writes it)", s.className(), s.field())
          .exists();
      assertThat(s.text())
          .as("%s.%s as it runs, against %s", s.className(), s.field(), s.pinned())
          .isEqualTo(Files.readString(s.pinned()));
    }
    try (Stream<Path> files = Files.list(PINNED)) {
      assertThat(files.map(p -> p.getFileName().toString()))
          .as("no pinned text is left for a statement that is gone")
          .containsExactlyInAnyOrderElementsOf(
              statements.stream().map(s -> s.pinned().getFileName().toString()).toList());
    }
  }

  private static List<Statement> assembledStatements()
      throws IOException, ReflectiveOperationException {
    List<Statement> found = new ArrayList<>();
    List<Path> sources;
    try (Stream<Path> files = Files.walk(SOURCES)) {
      sources = files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
    }
    for (Path source : sources) {
      Matcher m = ASSEMBLED.matcher(Files.readString(source, StandardCharsets.UTF_8));
      String className =
          SOURCES.relativize(source).toString().replace(".java", "").replace('/', '.');
      while (m.find()) {
        Field f = Class.forName(className).getDeclaredField(m.group(1));
        f.setAccessible(true);
        found.add(new Statement(className, m.group(1), (String) f.get(null)));
      }
    }
    return found;
  }
}
