package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.fake.AmbiguousSql;
import buildqueue.db.Migrator;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every statement text the code can send to the Data API, found mechanically: each {@code static
 * final String} of the core and aws main classes that reads as SQL, and each statement of every
 * migration as the migrator's own splitter cuts it. AWS documents that the Data API refuses more
 * than one statement and binds {@code :name} parameters, but not how it reads comments and string
 * literals (Aurora User Guide, data-api.differences), so no text may depend on it: a {@code ;} only
 * at a statement's end, and no {@code :word} inside a literal or a comment.
 */
class StatementTextTest {
  /** How a statement constant starts; other string constants (messages, names) are not SQL. */
  private static final Pattern SQL_START =
      Pattern.compile(
          "(?is)^\\s*(--|/\\*|with\\b|select\\b|insert\\b|update\\b|delete\\b|create\\b|alter\\b|drop\\b|set\\b|lock\\b|truncate\\b|comment\\b|grant\\b|vacuum\\b|analyze\\b)");

  @Test
  void
      every_statement_the_code_can_send_has_semicolons_only_at_its_end_and_no_parameter_lookalikes_in_literals_or_comments() {
    Map<String, String> statements = allStatements();

    List<String> problems = new ArrayList<>();
    statements.forEach(
        (where, sql) ->
            problems.addAll(
                AmbiguousSql.problems(sql).stream().map(p -> where + ": " + p).toList()));

    assertThat(problems).isEmpty();
  }

  @Test
  void the_statements_found_include_every_group_of_transitions_and_every_migration() {
    Map<String, String> statements = allStatements();

    assertThat(statements.keySet())
        .anyMatch(k -> k.startsWith("buildqueue.core.DispatchTransitions."))
        .anyMatch(k -> k.startsWith("buildqueue.core.TickTransitions."))
        .anyMatch(k -> k.startsWith("buildqueue.core.WorkerTransitions."))
        .anyMatch(k -> k.startsWith("buildqueue.core.ExitTransitions."))
        .anyMatch(k -> k.startsWith("buildqueue.core.JobTransitions."))
        .anyMatch(k -> k.startsWith("buildqueue.core.JobQueries."))
        .anyMatch(k -> k.startsWith("buildqueue.core.OutboxTransitions."))
        .anyMatch(k -> k.startsWith("buildqueue.db.Migrator."));
    for (String migration : Migrator.MIGRATIONS) {
      assertThat(statements.keySet()).anyMatch(k -> k.startsWith(migration + "#"));
    }
    assertThat(statements)
        .doesNotContainKey("buildqueue.aws.ecs.EcsWorkerPlatform.WORKER_ID_VARIABLE");
  }

  @Test
  void the_check_catches_each_kind_of_ambiguous_text() {
    assertThat(AmbiguousSql.problems("select 1; select 2")).isNotEmpty();
    assertThat(AmbiguousSql.problems("select 1 -- one; two\n")).isNotEmpty();
    assertThat(AmbiguousSql.problems("select 1 /* a; b */")).isNotEmpty();
    assertThat(AmbiguousSql.problems("select 'a;b'")).isNotEmpty();
    assertThat(AmbiguousSql.problems("select to_char(now(), 'HH24:MI:SS')")).isNotEmpty();
    assertThat(AmbiguousSql.problems("select 1 -- see :name\n")).isNotEmpty();
    assertThat(AmbiguousSql.problems("select \"a:b\" from t")).isNotEmpty();
    assertThat(
            AmbiguousSql.problems(
                "create function f() returns int language sql as $$ select :x $$"))
        .isNotEmpty();

    assertThat(
            AmbiguousSql.problems("select :a::int, 'user:' || :b, 'it''s' -- a comment: fine\n;"))
        .isEmpty();
    assertThat(AmbiguousSql.problems("select 1;  \n")).isEmpty();
  }

  // ---- finding every statement text ---------------------------------------------------------

  /** Where each statement comes from ("class.FIELD" or "migration#n") and its text. */
  static Map<String, String> allStatements() {
    Map<String, String> out = new LinkedHashMap<>();
    for (Class<?> type : mainClasses(Migrator.class)) {
      out.putAll(sqlConstants(type));
    }
    for (Class<?> type : mainClasses(DataApiDatabase.class)) {
      out.putAll(sqlConstants(type));
    }
    for (String migration : Migrator.MIGRATIONS) {
      List<String> parts = splitLikeTheMigrator(read("/buildqueue/db/migrations/" + migration));
      for (int k = 0; k < parts.size(); k++) {
        out.put(migration + "#" + (k + 1), parts.get(k));
      }
    }
    return out;
  }

  private static Map<String, String> sqlConstants(Class<?> type) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Field f : type.getDeclaredFields()) {
      int m = f.getModifiers();
      if (!Modifier.isStatic(m) || !Modifier.isFinal(m) || f.getType() != String.class) {
        continue;
      }
      try {
        f.setAccessible(true);
        String value = (String) f.get(null);
        if (value != null && SQL_START.matcher(value).find()) {
          out.put(type.getName() + "." + f.getName(), value);
        }
      } catch (ReflectiveOperationException | RuntimeException e) {
        throw new AssertionError("cannot read " + type.getName() + "." + f.getName(), e);
      }
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static List<String> splitLikeTheMigrator(String script) {
    try {
      Method statements =
          Class.forName("buildqueue.db.SqlScript").getDeclaredMethod("sendable", String.class);
      statements.setAccessible(true);
      return (List<String>) statements.invoke(null, script);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("the migrator's splitter moved; find it again", e);
    }
  }

  /** Every class in the same jar or classes folder as {@code anchor}: one module's main code. */
  private static List<Class<?>> mainClasses(Class<?> anchor) {
    List<String> names = new ArrayList<>();
    try {
      Path location = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(location)) {
        try (Stream<Path> files = Files.walk(location)) {
          files
              .filter(p -> p.toString().endsWith(".class"))
              .forEach(
                  p -> names.add(className(location.relativize(p).toString().replace('\\', '/'))));
        }
      } else {
        try (JarFile jar = new JarFile(location.toFile())) {
          for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
            String entry = e.nextElement().getName();
            if (entry.endsWith(".class") && entry.startsWith("buildqueue/")) {
              names.add(className(entry));
            }
          }
        }
      }
    } catch (IOException | URISyntaxException e) {
      throw new AssertionError("cannot list the classes beside " + anchor, e);
    }
    List<Class<?>> classes = new ArrayList<>();
    for (String name : names) {
      if (name.endsWith("package-info") || name.endsWith("module-info")) {
        continue;
      }
      try {
        classes.add(Class.forName(name, false, anchor.getClassLoader()));
      } catch (ClassNotFoundException | LinkageError e) {
        throw new AssertionError("cannot load " + name, e);
      }
    }
    assertThat(classes).as("classes beside " + anchor.getName()).isNotEmpty();
    return classes;
  }

  private static String className(String path) {
    return path.substring(0, path.length() - ".class".length()).replace('/', '.');
  }

  private static String read(String resource) {
    try (InputStream in = StatementTextTest.class.getResourceAsStream(resource)) {
      assertThat(in).as(resource).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
