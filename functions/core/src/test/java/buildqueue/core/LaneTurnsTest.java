package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Migrator;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The choice of a lane's next job, and a user joining the turns, are each written once (LaneTurns'
 * class comment says why): in the live definition of one function of the schema (the last migration
 * that defines it; a released migration's older text is history), which every statement that takes
 * a job or queues one calls, and nowhere in the Java.
 */
class LaneTurnsTest {
  /** The walk's lock on a turn row: only the choice walks the turns. */
  private static final String WALK = "for update of u skip locked";

  /** Only joining writes a turn row into being. */
  private static final String JOIN = "insert into build_lane_turn";

  @Test
  void
      the_choice_of_a_lanes_next_job_is_written_once_and_every_statement_that_takes_a_job_calls_it()
          throws Exception {
    Map<String, String> live = liveFunctions();

    assertThat(definitionsHolding(live, WALK)).containsExactly("build_lane_next_job");
    assertThat(javaSourcesHolding(WALK)).isEmpty();
    // The dispatch chooses; chaining chooses in build_lane_chain, which the worker's functions
    // call.
    for (String taker : List.of("build_lane_dispatch", "build_lane_chain")) {
      assertThat(live.get(taker)).as(taker).contains("build_lane_next_job(");
    }
    for (String chaining : List.of("build_worker_end", "build_worker_take_next")) {
      assertThat(live.get(chaining)).as(chaining).contains("build_lane_chain(");
    }
  }

  /**
   * The one copy, kept for speed (docs/architecture.md §12, V010): build_worker_end of a lane that
   * takes its oldest job chooses that job inline, in the statement that ends the previous one, as
   * the choice's FIFO branch for chaining does (build_lane_next_job, p_hold_lane false): the lane's
   * next queued job that is not backing off (by priority, then age), locked skip locked, and none
   * while the lane is paused.
   */
  @Test
  void the_end_of_a_job_in_a_fifo_lane_chooses_as_the_choices_fifo_branch() throws Exception {
    Map<String, String> live = liveFunctions();
    String end = live.get("build_worker_end");
    String head = end.substring(end.indexOf("fifo_head as ("), end.indexOf("taken as ("));
    String choice = live.get("build_lane_next_job");
    int fifoAt = choice.indexOf("if not p_fair");
    String fifoBranch = choice.substring(fifoAt, choice.indexOf("end if", fifoAt));
    for (String part :
        List.of(
            "from build_job q",
            "q.status = 'queued'",
            "q.not_before is null or q.not_before <= v_now",
            "order by q.priority desc, q.id",
            "limit 1",
            "for update of q skip locked")) {
      assertThat(head).as("build_worker_end's fifo_head").contains(part);
      assertThat(fifoBranch).as("build_lane_next_job's FIFO branch").contains(part);
    }
    assertThat(head)
        .as("a lane taking turns is chosen by build_lane_chain")
        .contains("not e.turns");
    assertThat(end).contains("build_lane_chain(");
    // A paused lane has no next job, for the choice and for its one copy alike (V015).
    assertThat(choice.substring(0, fifoAt))
        .contains("from build_lane_pause p where p.lane = p_lane");
    assertThat(head).contains("from build_lane_pause p where p.lane = e.lane");
  }

  @Test
  void a_user_joins_the_turns_through_one_function_wherever_a_job_enters_the_lane()
      throws Exception {
    Map<String, String> live = liveFunctions();

    assertThat(definitionsHolding(live, JOIN)).containsExactly("build_lane_turn_join");
    assertThat(javaSourcesHolding(JOIN)).isEmpty();
    assertThat(live.get("build_worker_add_follow_ups")).contains("build_lane_turn_join(");
    assertThat(LaneTurns.joined("inserted")).contains("build_lane_turn_join(");
  }

  /** Each function's text as the last migration that (re)defines it writes it, by name. */
  private static Map<String, String> liveFunctions() throws Exception {
    Pattern name =
        Pattern.compile("(?is)^create\\s+(?:or\\s+replace\\s+)?function\\s+(\\w+)\\s*\\(");
    Map<String, String> live = new LinkedHashMap<>();
    for (String migration : Migrator.MIGRATIONS) {
      for (String statement : statementsOf(resource("/buildqueue/db/migrations/" + migration))) {
        Matcher m = name.matcher(statement);
        if (m.find()) {
          live.put(m.group(1), statement);
        }
      }
    }
    assertThat(live)
        .as("the functions found")
        .containsKeys("build_lane_next_job", "build_worker_end");
    return live;
  }

  private static List<String> definitionsHolding(Map<String, String> live, String text) {
    return live.entrySet().stream()
        .filter(e -> e.getValue().contains(text))
        .map(Map.Entry::getKey)
        .toList();
  }

  private static List<Path> javaSourcesHolding(String text) throws IOException {
    try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
      return files
          .filter(p -> p.toString().endsWith(".java"))
          .filter(p -> read(p).contains(text))
          .toList();
    }
  }

  private static String read(Path p) {
    try {
      return Files.readString(p, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The migration's statements as the migrator cuts them (comments dropped). */
  @SuppressWarnings("unchecked")
  private static List<String> statementsOf(String script) throws ReflectiveOperationException {
    Method statements =
        Class.forName("buildqueue.db.SqlScript").getDeclaredMethod("statements", String.class);
    statements.setAccessible(true);
    return (List<String>) statements.invoke(null, script);
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = LaneTurnsTest.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
