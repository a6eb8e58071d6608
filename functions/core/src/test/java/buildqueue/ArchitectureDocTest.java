package buildqueue;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Row;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestDatabases;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md held to the schema and the code, so that a rename or a new column breaks the
 * build rather than the reader: §3's tables (one per table, one column a row) against the migrated
 * schema; the SQL functions it names against the schema and against the statements that call them;
 * the statement constants and methods of §4 against the classes; §6.1's lease checks against the
 * worker functions' bodies; §9's list of assembled statements against the texts {@code
 * AssembledStatementsTest} pins; §5's invariants against their citations ({@code §5.N}) and {@code
 * InvariantTest}'s methods; every test class it and docs/development.md name against the test
 * sources; and no measured figure on the page (they live in BENCHMARKS.md). Failures say what to
 * change in the page.
 */
class ArchitectureDocTest {
  private static final Path ROOT = RepositoryStandsAloneTest.repositoryRoot();
  private static final List<String> DOC = lines(ROOT.resolve("docs/architecture.md"));
  private static final Path CORE_MAIN = ROOT.resolve("functions/core/src/main/java");
  private static final Path PINNED =
      ROOT.resolve("functions/core/src/test/resources/buildqueue/statements");

  private static final Pattern HEADING = Pattern.compile("^(#{2,3}) (\\d+(?:\\.\\d+)?)\\.? ");
  private static final Pattern TABLE_HEADING = Pattern.compile("^#### `(\\w+)`");
  private static final Pattern CODE = Pattern.compile("`([^`]+)`");
  private static final Pattern QUALIFIED = Pattern.compile("^([A-Z]\\w*)\\.(\\w+)$");
  private static final Pattern CONSTANT = Pattern.compile("^[A-Z][A-Z0-9_]*[A-Z0-9](_\\*)?$");
  private static final Pattern METHOD = Pattern.compile("^[a-z]\\w*$");
  private static final Pattern SQL_FUNCTION = Pattern.compile("\\b(build_\\w+)(\\(_(\\w+)\\))?");
  private static final Pattern CALL = Pattern.compile("\\b(build_\\w+)\\s*\\(");
  private static final Pattern SQL_START =
      Pattern.compile("(?is)^\\s*(with|select|update|insert|delete)\\b.*");
  private static final Pattern DIAGRAM_CONSTANT =
      Pattern.compile("\\b[A-Z][A-Z0-9_]*[A-Z0-9](?:_\\*)?(?![\\w.])");
  private static final Pattern CITATION = Pattern.compile("§5\\.(\\d+)");
  private static final Pattern INVARIANT_TEST = Pattern.compile("void\\s+invariant_(\\d+)_");

  /** Milliseconds and percentages: what a benchmark measures (settings are in s, min, h). */
  private static final Pattern FIGURE = Pattern.compile("\\d(?:[\\d.,]*\\d)? ?(?:ms|%)(?![\\w])");

  private static final Pattern TEST_CLASS = Pattern.compile("^[A-Z]\\w*(Test|IT)$");

  /**
   * The guard that stops a worker function at the lease, and the one that stops it a margin before.
   */
  private static final Pattern LEASE_GUARD = Pattern.compile("expires_at\\s*>\\s*[\\w.]*now\\b");

  private static final Pattern MARGIN_GUARD =
      Pattern.compile("expires_at\\s*-\\s*\\w*deadline_margin\\w*[^<>;\\n]*>\\s*[\\w.]*now\\b");
  private static final Map<String, String> TYPE_NAMES =
      Map.of("int8", "bigint", "int4", "integer", "int2", "smallint", "bool", "boolean");

  /** The migrated schema, read once: columns of each table in order, and each function's body. */
  private record Schema(
      Map<String, Map<String, String>> tables,
      Map<String, String> functions,
      Set<String> relations) {}

  private static Schema schema;

  private static synchronized Schema schema() {
    if (schema == null) {
      try (TestDatabase tdb = TestDatabases.create()) {
        Map<String, Map<String, String>> tables = new TreeMap<>();
        for (Row r :
            tdb.jdbc()
                .query(
                    """
            select c.table_name, c.column_name, c.udt_name
            from information_schema.columns c join information_schema.tables t
              on t.table_schema = c.table_schema and t.table_name = c.table_name
            where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
            order by c.table_name, c.ordinal_position""")) {
          String udt = r.string("udt_name");
          tables
              .computeIfAbsent(r.string("table_name"), k -> new LinkedHashMap<>())
              .put(r.string("column_name"), TYPE_NAMES.getOrDefault(udt, udt));
        }
        Map<String, String> functions = new TreeMap<>();
        for (Row r :
            tdb.jdbc()
                .query(
                    """
            select p.proname, p.prosrc from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'public'""")) {
          functions.merge(r.string("proname"), r.string("prosrc"), (a, b) -> a + "\n" + b);
        }
        Set<String> relations = new TreeSet<>();
        for (Row r :
            tdb.jdbc()
                .query(
                    """
            select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = 'public'
            union select conname from pg_constraint""")) {
          relations.add(r.string("relname"));
        }
        schema = new Schema(tables, functions, relations);
      }
    }
    return schema;
  }

  // §3: the tables

  @Test
  void every_table_and_column_the_document_lists_is_in_the_schema_with_its_type() {
    List<String> found = new ArrayList<>();
    documentedTables()
        .forEach(
            (table, columns) -> {
              Map<String, String> actual = schema().tables().get(table);
              if (actual == null) {
                found.add("§3 lists the table " + table + ", which no migration creates");
                return;
              }
              columns.forEach(
                  (column, type) -> {
                    if (!actual.containsKey(column)) {
                      found.add(
                          "§3 lists "
                              + table
                              + "."
                              + column
                              + ", which the schema does not have "
                              + actual.keySet());
                    } else if (!actual.get(column).equals(type)) {
                      found.add(
                          "§3 gives "
                              + table
                              + "."
                              + column
                              + " the type "
                              + type
                              + "; the schema's is "
                              + actual.get(column));
                    }
                  });
            });
    assertThat(found).isEmpty();
  }

  @Test
  void every_column_of_every_table_is_in_the_document() {
    Map<String, Map<String, String>> documented = documentedTables();
    List<String> found = new ArrayList<>();
    schema()
        .tables()
        .forEach(
            (table, columns) -> {
              if (!documented.containsKey(table)) {
                found.add(
                    "the table "
                        + table
                        + " is not in §3: add a \"#### `"
                        + table
                        + "`\" heading and its table of columns");
                return;
              }
              for (String column : columns.keySet()) {
                if (!documented.get(table).containsKey(column)) {
                  found.add(
                      table
                          + "."
                          + column
                          + " ("
                          + columns.get(column)
                          + ") is not in §3's table of "
                          + table);
                }
              }
            });
    assertThat(found).isEmpty();
  }

  // §3, §4.3, §6.1: the SQL functions

  @Test
  void every_sql_function_the_document_names_exists_and_every_function_is_named() {
    Set<String> named = new TreeSet<>();
    for (String line : DOC) {
      Matcher m = SQL_FUNCTION.matcher(line);
      while (m.find()) {
        named.addAll(functionNames(m));
      }
    }
    Set<String> functions = schema().functions().keySet();
    List<String> found = new ArrayList<>();
    for (String name : named) {
      if (!functions.contains(name) && !schema().relations().contains(name)) {
        found.add(
            "docs/architecture.md names "
                + name
                + ": no function, table, index, sequence or constraint has that name");
      }
    }
    for (String table : tableCells(section("3"), "function")) {
      for (String name : functionsIn(table)) {
        if (!functions.contains(name)) {
          found.add("§3 lists the SQL function " + name + ", which the schema does not have");
        }
      }
    }
    for (String name : functions) {
      if (!named.contains(name)) {
        found.add("the SQL function " + name + " is named nowhere in docs/architecture.md");
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void the_sql_functions_of_each_transition_are_the_ones_its_statements_call() {
    List<String> found = new ArrayList<>();
    for (List<String> row : transitionRows()) {
      Set<String> documented = functionsIn(row.get(3));
      for (String name : documented) {
        if (!schema().functions().containsKey(name)) {
          found.add("§4.3 " + row.get(0) + ": the SQL function " + name + " does not exist");
        }
      }
      List<String> statements = new ArrayList<>();
      for (Reference r : references(row.get(2))) {
        if (r.isConstant() && constantProblem(r.owner(), r.member()) == null) {
          statements.add(
              statementConstants(r.owner()).get(r.member())); // the rest: the test of names
        }
      }
      if (statements.isEmpty()) {
        continue;
      }
      Set<String> called = new TreeSet<>();
      statements.forEach(s -> calls(s, called));
      for (String name : documented) {
        if (!called.contains(name)) {
          found.add(
              "§4.3 "
                  + row.get(0)
                  + ": lists "
                  + name
                  + ", which its statements never call "
                  + called);
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void every_worker_function_checks_the_lease_the_document_says() {
    List<List<String>> rows = tableRows(section("6.1"), "function");
    assertThat(rows).as("§6.1 has its table of worker functions").isNotEmpty();
    Set<String> listed = new TreeSet<>();
    List<String> found = new ArrayList<>();
    for (List<String> row : rows) {
      String name = functionsIn(row.get(0)).iterator().next();
      listed.add(name);
      String body = schema().functions().get(name);
      if (body == null) {
        found.add("§6.1 lists " + name + ", which the schema does not have");
        continue;
      }
      String says =
          row.get(2).startsWith("`expires_at − deadlineMargin`")
              ? "expires_at − deadlineMargin"
              : row.get(2).startsWith("`expires_at`") ? "expires_at" : "—";
      String does =
          MARGIN_GUARD.matcher(body).find()
              ? "expires_at − deadlineMargin"
              : LEASE_GUARD.matcher(body).find() ? "expires_at" : "—";
      if (!says.equals(does)) {
        found.add("§6.1 says " + name + " refuses from " + says + "; its body's guard: " + does);
      }
    }
    assertThat(found).isEmpty();
    assertThat(listed)
        .as("§6.1 lists every function the worker role may execute")
        .isEqualTo(
            schema().functions().keySet().stream()
                .filter(f -> f.startsWith("build_worker_"))
                .filter(
                    f ->
                        !f.equals("build_worker_of_evidence")
                            && !f.equals("build_worker_role_login"))
                .collect(Collectors.toCollection(TreeSet::new)));
  }

  // §4: the transitions

  @Test
  void every_statement_constant_and_method_the_document_names_exists() {
    List<String> found = new ArrayList<>();
    for (List<String> row : transitionRows()) {
      for (Reference r : references(row.get(2))) {
        String problem =
            r.isConstant()
                ? constantProblem(r.owner(), r.member())
                : methodProblem(r.owner(), r.member());
        if (problem != null) {
          found.add("§4.3 " + row.get(0) + ": " + problem);
        }
      }
    }
    Set<String> constants = new TreeSet<>();
    transitionClasses().forEach(c -> constants.addAll(statementConstants(c).keySet()));
    boolean inDiagram = false;
    for (String line : section("4")) {
      if (line.startsWith("```")) {
        inDiagram = line.startsWith("```mermaid") && !inDiagram;
        continue;
      }
      Matcher code = CODE.matcher(line);
      while (code.find()) {
        Matcher q = QUALIFIED.matcher(code.group(1));
        if (q.matches() && CONSTANT.matcher(q.group(2)).matches()) {
          String problem = constantProblem(q.group(1), q.group(2));
          if (problem != null) {
            found.add("§4: " + problem);
          }
        }
      }
      if (inDiagram && line.contains("-->")) {
        for (String inParentheses : parenthesized(line)) {
          Matcher m = DIAGRAM_CONSTANT.matcher(inParentheses.replaceAll("\\b[A-Z]\\w*\\.", ""));
          while (m.find()) {
            if (!matchesAny(m.group(), constants)) {
              found.add(
                  "§4's diagram names "
                      + m.group()
                      + ", no statement of "
                      + transitionClasses()
                      + ": "
                      + line.strip());
            }
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void the_reads_the_document_names_exist() {
    Matcher reads =
        Pattern.compile("Reads \\(`(\\w+)`[^)]*:([^)]*)\\)")
            .matcher(String.join(" ", section("4.3")));
    assertThat(reads.find())
        .as("§4.3 names the reads: \"Reads (`Class`…: `Owner.NAME`, …)\"")
        .isTrue();
    List<String> found = new ArrayList<>();
    int named = 0;
    Matcher m = CODE.matcher(reads.group(2));
    while (m.find()) {
      Matcher qualified = QUALIFIED.matcher(m.group(1));
      if (qualified.matches() && CONSTANT.matcher(qualified.group(2)).matches()) {
        named++;
        String problem = constantProblem(qualified.group(1), qualified.group(2));
        if (problem != null) {
          found.add("§4.3's reads: " + problem);
        }
      }
    }
    assertThat(named).as("§4.3's reads name their statements as `Owner.NAME`").isPositive();
    assertThat(found).isEmpty();
  }

  @Test
  void every_transition_statement_of_the_code_is_in_the_table() {
    Set<String> named = new TreeSet<>();
    for (List<String> row : transitionRows()) {
      for (Reference r : references(row.get(2))) {
        named.add(r.owner() + "." + r.member());
      }
    }
    List<String> missing = new ArrayList<>();
    for (String c : transitionClasses()) {
      for (String field : statementConstants(c).keySet()) {
        if (!named.contains(c + "." + field)) {
          missing.add(c + "." + field + " runs SQL but §4.3 has no row for it");
        }
      }
    }
    assertThat(missing).isEmpty();
  }

  // §9: the assembled statements

  @Test
  void the_assembled_statements_the_document_lists_are_the_ones_pinned_beside_the_tests()
      throws IOException {
    List<String> section = section("9");
    int at = -1;
    for (int i = 0; i < section.size(); i++) {
      if (section.get(i).contains("The assembled statements:")) {
        at = i;
      }
    }
    assertThat(at)
        .as("§9 lists the assembled statements after \"The assembled statements:\"")
        .isNotNegative();
    Set<String> listed = new TreeSet<>();
    String list = section.get(at).substring(section.get(at).indexOf("The assembled statements:"));
    for (int i = at + 1; i < section.size() && section.get(i).startsWith("  "); i++) {
      list += " " + section.get(i);
    }
    Matcher m = CODE.matcher(list);
    while (m.find()) {
      if (QUALIFIED.matcher(m.group(1)).matches()) {
        listed.add(m.group(1));
      }
    }
    Set<String> pinned;
    try (Stream<Path> files = Files.list(PINNED)) {
      pinned =
          files
              .map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(".sql"))
              .map(n -> n.substring(0, n.length() - ".sql".length()))
              .collect(Collectors.toCollection(TreeSet::new));
    }
    assertThat(listed)
        .as("§9's list of assembled statements against %s", ROOT.relativize(PINNED))
        .isEqualTo(pinned);
  }

  // §5: the invariants

  @Test
  void every_invariant_cited_in_code_or_tests_is_in_the_document() {
    Set<Integer> invariants = invariants();
    List<String> found = new ArrayList<>();
    citations()
        .forEach(
            (n, where) -> {
              if (!invariants.contains(n)) {
                found.add(
                    where.get(0)
                        + " cites §5."
                        + n
                        + " (or has invariant_"
                        + n
                        + "_); §5 has "
                        + invariants);
              }
            });
    assertThat(found).isEmpty();
  }

  @Test
  void every_invariant_of_the_document_is_cited_by_a_test_and_has_its_own_in_InvariantTest() {
    Map<Integer, List<String>> citations = citations();
    Set<Integer> ownTests = new TreeSet<>();
    Matcher m = INVARIANT_TEST.matcher(String.join("\n", lines(testSource("InvariantTest"))));
    while (m.find()) {
      ownTests.add(Integer.parseInt(m.group(1)));
    }
    List<String> found = new ArrayList<>();
    for (int n : invariants()) {
      if (citations.getOrDefault(n, List.of()).stream().noneMatch(w -> w.contains("/src/test/"))) {
        found.add("§5." + n + " is cited by no test");
      }
    }
    assertThat(found).isEmpty();
    assertThat(ownTests)
        .as("InvariantTest: one invariant_N_ test per invariant of §5")
        .isEqualTo(invariants());
  }

  // Names of tests

  @Test
  void every_test_class_the_documents_name_exists() {
    Set<String> tests = new TreeSet<>();
    sources().stream()
        .filter(p -> p.toString().contains("/src/test/"))
        .forEach(
            p -> {
              String name = p.getFileName().toString();
              tests.add(name.substring(0, name.length() - ".java".length()));
            });
    List<String> found = new ArrayList<>();
    for (String doc : List.of("docs/architecture.md", "docs/development.md")) {
      List<String> lines = lines(ROOT.resolve(doc));
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = CODE.matcher(lines.get(i));
        while (m.find()) {
          if (TEST_CLASS.matcher(m.group(1)).matches() && !tests.contains(m.group(1))) {
            found.add(
                doc + ":" + (i + 1) + " names " + m.group(1) + ", which no test source defines");
          }
        }
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void the_page_holds_no_measured_figures() {
    List<String> found = new ArrayList<>();
    for (int i = 0; i < DOC.size(); i++) {
      Matcher m = FIGURE.matcher(DOC.get(i));
      while (m.find()) {
        found.add(
            "docs/architecture.md:"
                + (i + 1)
                + ": "
                + m.group()
                + " — measured figures go to BENCHMARKS.md");
      }
    }
    assertThat(found).isEmpty();
  }

  @Test
  void the_checks_read_what_they_check() {
    // Guards the parsing: if it found nothing, every test above would pass.
    assertThat(documentedTables()).containsKeys("build_job", "build_worker", "build_lane_turn");
    assertThat(documentedTables().get("build_job")).containsKeys("id", "status", "supersede_key");
    assertThat(schema().tables()).containsKeys("build_job", "build_schema_migration");
    assertThat(transitionRows()).hasSizeGreaterThan(20);
    assertThat(transitionClasses())
        .contains("JobTransitions", "WorkerTransitions", "ExitTransitions");
    assertThat(statementConstants("JobTransitions")).containsKeys("ENQUEUE", "CANCEL");
    assertThat(invariants()).hasSize(10);
    assertThat(citations()).containsKeys(1, 9);
    assertThat(schema().functions().get("build_worker_check_in")).containsPattern(LEASE_GUARD);
    assertThat(schema().functions().get("build_worker_start")).containsPattern(MARGIN_GUARD);
  }

  // The page

  /**
   * Lines of section {@code number} ("3", "4.3"): from its heading to the next of its level or
   * above.
   */
  private static List<String> section(String number) {
    List<String> lines = new ArrayList<>();
    int level = 0;
    for (String line : DOC) {
      Matcher m = HEADING.matcher(line);
      if (m.find()) {
        if (level > 0 && m.group(1).length() <= level) {
          break;
        }
        if (m.group(2).equals(number)) {
          level = m.group(1).length();
          continue;
        }
      }
      if (level > 0) {
        lines.add(line);
      }
    }
    assertThat(lines).as("docs/architecture.md has a section %s", number).isNotEmpty();
    return lines;
  }

  /**
   * The data rows, cells trimmed, of each table in {@code lines} whose first header cell is {@code
   * first}.
   */
  private static List<List<String>> tableRows(List<String> lines, String first) {
    List<List<String>> rows = new ArrayList<>();
    boolean inTable = false;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (!line.startsWith("|")) {
        inTable = false;
      } else if (i + 1 < lines.size() && lines.get(i + 1).startsWith("|---")) {
        inTable = cells(line).get(0).equals(first);
        i++;
      } else if (inTable) {
        rows.add(cells(line));
      }
    }
    return rows;
  }

  private static List<String> tableCells(List<String> lines, String first) {
    return tableRows(lines, first).stream().map(r -> r.get(0)).toList();
  }

  private static List<String> cells(String row) {
    String inner = row.strip().substring(1, row.strip().length() - 1);
    return Arrays.stream(inner.split("\\|", -1)).map(String::strip).toList();
  }

  /** §3: each "#### `table`" heading and its table of columns, column → type. */
  private static Map<String, Map<String, String>> documentedTables() {
    Map<String, Map<String, String>> tables = new TreeMap<>();
    List<String> section = section("3");
    for (int i = 0; i < section.size(); i++) {
      Matcher m = TABLE_HEADING.matcher(section.get(i));
      if (m.find()) {
        int end = i + 1;
        while (end < section.size() && !section.get(end).startsWith("#")) {
          end++;
        }
        Map<String, String> columns = new LinkedHashMap<>();
        for (List<String> row : tableRows(section.subList(i + 1, end), "column")) {
          columns.put(row.get(0).replace("`", ""), row.get(1));
        }
        tables.put(m.group(1), columns);
      }
    }
    return tables;
  }

  private static List<List<String>> transitionRows() {
    return tableRows(section("4.3"), "transition");
  }

  /** A class and a member of it named in §4.3's Java column. */
  private record Reference(String owner, String member) {
    boolean isConstant() {
      return CONSTANT.matcher(member).matches();
    }
  }

  /** The references of a Java cell; a bare name belongs to the first class the cell names. */
  private static List<Reference> references(String cell) {
    List<Reference> references = new ArrayList<>();
    String owner = null;
    Matcher m = CODE.matcher(cell);
    while (m.find()) {
      Matcher q = QUALIFIED.matcher(m.group(1));
      if (q.matches()) {
        owner = owner == null ? q.group(1) : owner;
        references.add(new Reference(q.group(1), q.group(2)));
      } else if (owner != null
          && (CONSTANT.matcher(m.group(1)).matches() || METHOD.matcher(m.group(1)).matches())) {
        references.add(new Reference(owner, m.group(1)));
      }
    }
    return references;
  }

  /** The classes whose statement constants §4.3 names. */
  private static Set<String> transitionClasses() {
    Set<String> classes = new TreeSet<>();
    for (List<String> row : transitionRows()) {
      references(row.get(2)).stream()
          .filter(Reference::isConstant)
          .forEach(r -> classes.add(r.owner()));
    }
    return classes;
  }

  private static Set<String> functionsIn(String text) {
    Set<String> names = new TreeSet<>();
    Matcher m = SQL_FUNCTION.matcher(text);
    while (m.find()) {
      names.addAll(functionNames(m));
    }
    return names;
  }

  /**
   * "build_job_interruption(_detail)" names build_job_interruption and
   * build_job_interruption_detail.
   */
  private static List<String> functionNames(Matcher m) {
    return m.group(3) == null
        ? List.of(m.group(1))
        : List.of(m.group(1), m.group(1) + "_" + m.group(3));
  }

  private static List<String> parenthesized(String line) {
    List<String> parts = new ArrayList<>();
    Matcher m = Pattern.compile("\\(([^()]*)\\)").matcher(line);
    while (m.find()) {
      parts.add(m.group(1));
    }
    return parts;
  }

  private static boolean matchesAny(String name, Set<String> constants) {
    return name.endsWith("_*")
        ? constants.stream().anyMatch(c -> c.startsWith(name.substring(0, name.length() - 1)))
        : constants.contains(name);
  }

  private static Set<Integer> invariants() {
    Set<Integer> numbers = new TreeSet<>();
    for (String line : section("5")) {
      Matcher m = Pattern.compile("^(\\d+)\\. ").matcher(line);
      if (m.find()) {
        numbers.add(Integer.parseInt(m.group(1)));
      }
    }
    return numbers;
  }

  // The code and the schema

  /** Each invariant cited in the sources (§5.N, or a test named invariant_N_…), with where. */
  private static Map<Integer, List<String>> citations() {
    Map<Integer, List<String>> citations = new TreeMap<>();
    for (Path file : sources()) {
      List<String> lines = lines(file);
      for (int i = 0; i < lines.size(); i++) {
        for (Pattern p : List.of(CITATION, INVARIANT_TEST)) {
          Matcher m = p.matcher(lines.get(i));
          while (m.find()) {
            citations
                .computeIfAbsent(Integer.parseInt(m.group(1)), k -> new ArrayList<>())
                .add(ROOT.relativize(file) + ":" + (i + 1));
          }
        }
      }
    }
    return citations;
  }

  /** Every Java source of the repository (main and test, every module). */
  private static List<Path> sources() {
    List<Path> sources = new ArrayList<>();
    for (String dir : List.of("functions", "bench")) {
      try (Stream<Path> walk = Files.walk(ROOT.resolve(dir))) {
        walk.filter(p -> p.toString().endsWith(".java") && !p.toString().contains("/target/"))
            .sorted()
            .forEach(sources::add);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return sources;
  }

  private static Path testSource(String simpleName) {
    return sources().stream()
        .filter(p -> p.getFileName().toString().equals(simpleName + ".java"))
        .filter(p -> p.toString().contains("/src/test/"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no test source " + simpleName + ".java"));
  }

  /** The core class of this simple name, found by its source file wherever its package is. */
  private static Class<?> coreClass(String simpleName) {
    try (Stream<Path> walk = Files.walk(CORE_MAIN)) {
      List<Path> found =
          walk.filter(p -> p.getFileName().toString().equals(simpleName + ".java")).toList();
      if (found.size() != 1) {
        return null;
      }
      String name = CORE_MAIN.relativize(found.get(0)).toString().replace('/', '.');
      return Class.forName(name.substring(0, name.length() - ".java".length()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  /**
   * Static final String fields of a core class that hold a whole statement (SQL, no template
   * holes).
   */
  private static Map<String, String> statementConstants(String simpleName) {
    Class<?> type = coreClass(simpleName);
    Map<String, String> constants = new TreeMap<>();
    if (type == null) {
      return constants;
    }
    for (Field f : type.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers())
          && Modifier.isFinal(f.getModifiers())
          && f.getType() == String.class) {
        String value = fieldValue(f);
        if (SQL_START.matcher(value).matches() && !value.contains("%s")) {
          constants.put(f.getName(), value);
        }
      }
    }
    return constants;
  }

  private static String constantProblem(String simpleName, String field) {
    if (field.endsWith("_*")) {
      return statementConstants(simpleName).keySet().stream()
              .anyMatch(c -> c.startsWith(field.substring(0, field.length() - 1)))
          ? null
          : simpleName + " has no statement constant " + field;
    }
    if (coreClass(simpleName) == null) {
      return "no class " + simpleName + " in functions/core";
    }
    return statementConstants(simpleName).containsKey(field)
        ? null
        : simpleName
            + " has no statement constant "
            + field
            + " (it has "
            + statementConstants(simpleName).keySet()
            + ")";
  }

  private static String methodProblem(String simpleName, String method) {
    Class<?> type = coreClass(simpleName);
    if (type == null) {
      return "no class " + simpleName + " in functions/core";
    }
    for (Method m : type.getDeclaredMethods()) {
      if (m.getName().equals(method)) {
        return null;
      }
    }
    return simpleName + " has no method " + method;
  }

  private static String fieldValue(Field f) {
    try {
      f.setAccessible(true);
      return (String) f.get(null);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Adds to {@code called} every schema function {@code sql} calls, and those they call in turn.
   */
  private static void calls(String sql, Set<String> called) {
    Matcher m = CALL.matcher(sql);
    while (m.find()) {
      String body = schema().functions().get(m.group(1));
      if (body != null && called.add(m.group(1))) {
        calls(body, called);
      }
    }
  }

  private static List<String> lines(Path file) {
    try {
      return Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
