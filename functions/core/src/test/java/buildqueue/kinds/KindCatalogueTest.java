package buildqueue.kinds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import buildqueue.core.QueueConfig;
import buildqueue.platform.Capacity;
import buildqueue.worker.CommandJobHandler;
import buildqueue.worker.CommandRunner;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.QueueKindLimits;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The kind catalogue: what a good file becomes, and every rule a bad one breaks, named in the
 * refusal.
 */
class KindCatalogueTest {
  private static final QueueConfig QUEUE = QueueConfig.defaults();
  private static final KindLimits DEFAULTS = QueueKindLimits.of(QUEUE);
  private static final String GOOD =
      """
      {"kinds": {
        "render-article": {
          "command": ["node", "/opt/render/index.js"],
          "timeout": "15m",
          "payloadSchema": {"type": "object", "required": ["articleId"],
                            "properties": {"articleId": {"type": "string"}}},
          "retryExitCodes": [75],
          "env": {"NODE_ENV": "production"},
          "cancelGracePeriod": "30s"
        },
        "thumbs.v2": {"command": ["/usr/local/bin/thumbs"], "timeout": "45m"}
      }}
      """;

  @TempDir Path dir;

  private Path write(String json) throws Exception {
    Path file = dir.resolve("kinds.json");
    Files.writeString(file, json, StandardCharsets.UTF_8);
    return file;
  }

  @Test
  void a_good_catalogue_loads_into_command_kinds_with_their_defaults() throws Exception {
    Path file = write(GOOD);

    KindCatalogue catalogue = KindCatalogue.load(file, DEFAULTS);

    assertThat(catalogue.file()).contains(file);
    assertThat(catalogue.kinds())
        .extracting(CommandKind::name)
        .containsExactly("render-article", "thumbs.v2");
    CommandKind render = catalogue.kind("render-article").orElseThrow();
    assertThat(render.command()).containsExactly("node", "/opt/render/index.js");
    assertThat(render.timeout()).isEqualTo(Duration.ofMinutes(15));
    assertThat(render.retryExitCodes()).containsExactly(75);
    assertThat(render.env()).isEqualTo(Map.of("NODE_ENV", "production"));
    assertThat(render.cancelGracePeriod()).isEqualTo(Duration.ofSeconds(30));

    CommandKind thumbs = catalogue.kind("thumbs.v2").orElseThrow();
    assertThat(thumbs.timeout()).isEqualTo(Duration.ofMinutes(45));
    assertThat(thumbs.retryExitCodes()).isEmpty();
    assertThat(thumbs.env()).isEmpty();
    assertThat(thumbs.cancelGracePeriod()).isEqualTo(CommandKind.DEFAULT_CANCEL_GRACE_PERIOD);
    assertThat(thumbs.payloadSchema()).isSameAs(PayloadSchema.ANY_OBJECT);
  }

  @Test
  void an_empty_list_of_kinds_is_a_catalogue_with_only_demo() throws Exception {
    KindCatalogue catalogue = KindCatalogue.load(write("{\"kinds\": {}}"), DEFAULTS);

    assertThat(catalogue.kinds()).isEmpty();
    assertThat(catalogue.registry().kinds()).containsExactly(DemoKind.NAME);
  }

  @Test
  void the_handlers_are_demo_and_one_per_kind_running_through_the_given_runner() throws Exception {
    KindCatalogue catalogue = KindCatalogue.load(write(GOOD), DEFAULTS);
    List<String> ran = new java.util.ArrayList<>();
    CommandRunner runner =
        (kind, context) -> {
          ran.add(kind.name());
          return JobOutcome.succeeded();
        };

    JobHandlers handlers = JobHandlers.forCatalogue(catalogue, runner);

    assertThat(handlers.kinds()).containsExactly("demo", "render-article", "thumbs.v2");
    CommandJobHandler render = (CommandJobHandler) handlers.get("render-article").orElseThrow();
    assertThat(render.commandKind()).isEqualTo(catalogue.kind("render-article").orElseThrow());
    assertThat(render.run(null)).isEqualTo(JobOutcome.succeeded());
    assertThat(ran).containsExactly("render-article");
    assertThatThrownBy(() -> render.validate(new ObjectMapper().readTree("{}")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("$.articleId");
  }

  @Test
  void the_longest_timeout_is_the_worker_lifetime_less_the_chain_window_and_the_deadline_margin()
      throws Exception {
    assertThat(DEFAULTS.maxTimeout()).isEqualTo(Duration.ofMinutes(54));
    String at = "{\"kinds\": {\"k\": {\"command\": [\"true\"], \"timeout\": \"54m\"}}}";
    assertThat(KindCatalogue.load(write(at), DEFAULTS).kinds().get(0).timeout())
        .isEqualTo(Duration.ofMinutes(54));

    String over = "{\"kinds\": {\"k\": {\"command\": [\"true\"], \"timeout\": \"54m1s\"}}}";
    Path file = write(over);
    assertThatThrownBy(() -> KindCatalogue.load(file, DEFAULTS))
        .hasMessageContaining("at most 54m")
        .hasMessageContaining("raise the worker lifetime");

    KindLimits longer =
        QueueKindLimits.of(
            QUEUE.withLease(Duration.ofMinutes(120), QUEUE.leaseSlack(), QUEUE.deadlineMargin()));
    assertThat(KindCatalogue.load(file, longer).kinds().get(0).timeout())
        .isEqualTo(Duration.ofSeconds(54 * 60 + 1));
  }

  @ParameterizedTest
  @ValueSource(strings = {"15m", "1h30m", "500ms", "1h", "2m30s", "1s250ms", "45s"})
  void durations_are_written_in_hours_minutes_seconds_and_milliseconds(String text) {
    Duration d = CatalogueDuration.parse(text).orElseThrow();
    assertThat(CatalogueDuration.format(d)).isEqualTo(text);
    assertThat(CatalogueDuration.parse("90s")).contains(Duration.ofSeconds(90));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "15", "15 minutes", "1m1h", "PT15M", "-5s", "1.5h", "15M"})
  void anything_else_is_not_a_duration(String text) {
    assertThat(CatalogueDuration.parse(text)).isEmpty();
  }

  /** A bad catalogue, the kind and key its refusal must name, and words that say what to do. */
  static Stream<Arguments> badCatalogues() {
    return Stream.of(
        bad(
            "unknown top-level key",
            "{\"kinds\": {}, \"version\": 2}",
            null,
            "\"version\"",
            "top level"),
        bad("kinds missing", "{}", null, "\"kinds\"", "missing"),
        bad("kinds not an object", "{\"kinds\": []}", null, "\"kinds\"", "an array"),
        bad("not an object", "[]", null, "must be a JSON object", null),
        bad("empty file", "", null, "empty", null),
        bad(
            "a kind is not an object",
            kinds("\"render\": \"node x\""),
            "render",
            "not a string",
            null),
        bad(
            "unknown key",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"timout\": \"2m\""),
            "render",
            "\"timout\"",
            "did you mean \"timeout\""),
        bad(
            "unknown key, not close",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"image\": \"x\""),
            "render",
            "\"image\"",
            "a kind's keys are command, timeout"),
        bad("command missing", kind("\"timeout\": \"1m\""), "render", "\"command\"", "is missing"),
        bad(
            "command as a shell string",
            kind("\"command\": \"node /opt/render/index.js\", \"timeout\": \"1m\""),
            "render",
            "\"command\"",
            "[\"node\", \"/opt/render/index.js\"]"),
        bad(
            "command empty",
            kind("\"command\": [], \"timeout\": \"1m\""),
            "render",
            "\"command\"",
            "empty array"),
        bad(
            "command element empty",
            kind("\"command\": [\"node\", \"\"], \"timeout\": \"1m\""),
            "render",
            "\"command\"",
            "element 1"),
        bad(
            "command element not a string",
            kind("\"command\": [\"node\", 3], \"timeout\": \"1m\""),
            "render",
            "\"command\"",
            "a number"),
        bad(
            "command with NUL",
            kind("\"command\": [\"no\\u0000de\"], \"timeout\": \"1m\""),
            "render",
            "\"command\"",
            "NUL"),
        bad("timeout missing", kind("\"command\": [\"x\"]"), "render", "\"timeout\"", "is missing"),
        bad(
            "timeout not a duration",
            kind("\"command\": [\"x\"], \"timeout\": \"15 minutes\""),
            "render",
            "\"timeout\"",
            "must be a duration such as \"90s\", \"15m\" or \"1h30m\", not \"15 minutes\""),
        bad(
            "timeout a number",
            kind("\"command\": [\"x\"], \"timeout\": 900"),
            "render",
            "\"timeout\"",
            "not 900"),
        bad(
            "timeout zero",
            kind("\"command\": [\"x\"], \"timeout\": \"0s\""),
            "render",
            "\"timeout\"",
            "longer than 0s"),
        bad(
            "timeout past the worker's life",
            kind("\"command\": [\"x\"], \"timeout\": \"2h\""),
            "render",
            "\"timeout\"",
            "WorkerLifetimeMinutes"),
        bad(
            "grace not a duration",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"cancelGracePeriod\": 10"),
            "render",
            "\"cancelGracePeriod\"",
            "must be a duration"),
        bad(
            "capacity not a string",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"capacity\": 1"),
            "render",
            "\"capacity\"",
            "must be one of \"on-demand\", \"spot\", \"spot-then-on-demand\""),
        bad(
            "capacity unknown",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"capacity\": \"FARGATE_SPOT\""),
            "render",
            "\"capacity\"",
            "is \"FARGATE_SPOT\"; it must be one of \"on-demand\", \"spot\", \"spot-then-on-demand\""),
        bad(
            "grace too long",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"cancelGracePeriod\": \"6m\""),
            "render",
            "\"cancelGracePeriod\"",
            "at most 5m"),
        bad(
            "retry code 0",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"retryExitCodes\": [0]"),
            "render",
            "\"retryExitCodes\"",
            "0, which is success"),
        bad(
            "retry code 256",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"retryExitCodes\": [256]"),
            "render",
            "\"retryExitCodes\"",
            "1 to 255"),
        bad(
            "retry code a string",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"retryExitCodes\": [\"75\"]"),
            "render",
            "\"retryExitCodes\"",
            "not \"75\""),
        bad(
            "retry codes not an array",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"retryExitCodes\": 75"),
            "render",
            "\"retryExitCodes\"",
            "must be an array"),
        bad(
            "env not an object",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"env\": [\"A=1\"]"),
            "render",
            "\"env\"",
            "must be an object"),
        bad(
            "env bad name",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"env\": {\"1A\": \"x\"}"),
            "render",
            "\"env\"",
            "\"1A\""),
        bad(
            "env reserved name",
            kind(
                "\"command\": [\"x\"], \"timeout\": \"1m\", \"env\": {\"BUILDQUEUE_JOB_ID\": \"x\"}"),
            "render",
            "\"env\"",
            "BUILDQUEUE_JOB_ID"),
        bad(
            "env value a number",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"env\": {\"N\": 1}"),
            "render",
            "\"env\"",
            "must be a string"),
        bad(
            "schema not an object",
            kind("\"command\": [\"x\"], \"timeout\": \"1m\", \"payloadSchema\": \"object\""),
            "render",
            "\"payloadSchema\"",
            "JSON Schema object"),
        bad(
            "schema breaks its meta-schema",
            kind(
                "\"command\": [\"x\"], \"timeout\": \"1m\", \"payloadSchema\": {\"type\": \"objekt\"}"),
            "render",
            "\"payloadSchema\"",
            "not a valid JSON Schema (draft 2020-12): $.type"),
        bad(
            "schema refers to a URL",
            kind(
                "\"command\": [\"x\"], \"timeout\": \"1m\", \"payloadSchema\": {\"$ref\": \"https://example.com/s.json\"}"),
            "render",
            "\"payloadSchema\"",
            "may only refer within itself"),
        bad(
            "schema refers to another file",
            kind(
                "\"command\": [\"x\"], \"timeout\": \"1m\", \"payloadSchema\": {\"$ref\": \"page.json\"}"),
            "render",
            "\"payloadSchema\"",
            "may only refer within itself"),
        bad(
            "schema refers to nothing",
            kind(
                "\"command\": [\"x\"], \"timeout\": \"1m\", \"payloadSchema\": {\"$ref\": \"#/$defs/page\"}"),
            "render",
            "\"payloadSchema\"",
            "/$defs/page"),
        bad(
            "schema in an unknown dialect",
            kind(
                "\"command\": [\"x\"], \"timeout\": \"1m\", \"payloadSchema\": {\"$schema\": \"https://example.com/meta\"}"),
            "render",
            "\"payloadSchema\"",
            "does not know"),
        bad(
            "upper-case name",
            kinds("\"Render\": {\"command\": [\"x\"], \"timeout\": \"1m\"}"),
            "Render",
            "lower-case",
            null),
        bad(
            "name starting with a dot",
            kinds("\".render\": {\"command\": [\"x\"], \"timeout\": \"1m\"}"),
            ".render",
            "starting with a letter or digit",
            null),
        bad(
            "name too long",
            kinds("\"" + "a".repeat(65) + "\": {\"command\": [\"x\"], \"timeout\": \"1m\"}"),
            "a".repeat(65),
            "1 to 64",
            null),
        bad(
            "demo redefined",
            kinds("\"demo\": {\"command\": [\"x\"], \"timeout\": \"1m\"}"),
            "demo",
            "built in",
            null),
        bad(
            "malformed JSON",
            "{\"kinds\": {\n  \"render\": {\"command\": [\"x\"] \"timeout\": \"1m\"}}}",
            null,
            "line 2, column",
            "not valid JSON"),
        bad(
            "duplicate key",
            "{\"kinds\": {\"render\": {\"command\": [\"x\"], \"timeout\": \"1m\", \"timeout\": \"2m\"}}}",
            null,
            "Duplicate field 'timeout'",
            "line 1, column"),
        bad(
            "duplicate kind",
            "{\"kinds\": {\"a\": {\"command\": [\"x\"], \"timeout\": \"1m\"},\n"
                + " \"a\": {\"command\": [\"y\"], \"timeout\": \"1m\"}}}",
            null,
            "Duplicate field 'a'",
            "line 2"),
        bad("trailing content", "{\"kinds\": {}} {}", null, "not valid JSON", null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCatalogues")
  void a_bad_catalogue_is_refused_whole_naming_the_file_the_kind_and_the_key(
      String rule, String json, String kind, String key, String advice) throws Exception {
    Path file = write(json);

    Throwable refused =
        org.assertj.core.api.Assertions.catchThrowable(() -> KindCatalogue.load(file, DEFAULTS));

    assertThat(refused)
        .as(rule)
        .isInstanceOf(KindCatalogueException.class)
        .isInstanceOf(BuildQueueException.class);
    String message = refused.getMessage();
    assertThat(message).as(rule).startsWith(file + ": ");
    if (kind != null) {
      assertThat(message).as(rule).contains("kind \"" + kind + "\"");
    }
    assertThat(message).as(rule).contains(key);
    if (advice != null) {
      assertThat(message).as(rule).contains(advice);
    }
    assertThat(message).as(rule + ": one line").doesNotContain("\n");
  }

  @Test
  void a_missing_file_is_refused_naming_it() {
    Path missing = dir.resolve("nope.json");

    assertThatThrownBy(() -> KindCatalogue.load(missing, DEFAULTS))
        .isInstanceOf(KindCatalogueException.class)
        .hasMessageStartingWith(missing + ": ")
        .hasMessageContaining("no such file");
  }

  @Test
  void a_payload_schema_may_name_an_earlier_draft_and_refer_within_itself() throws Exception {
    String json =
        """
        {"kinds": {"k": {"command": ["x"], "timeout": "1m", "payloadSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "type": "object", "properties": {"page": {"$ref": "#/definitions/page"}},
          "definitions": {"page": {"type": "integer"}}}}}}
        """;
    PayloadSchema schema = KindCatalogue.load(write(json), DEFAULTS).kinds().get(0).payloadSchema();

    schema.check(new ObjectMapper().readTree("{\"page\": 3}"));
    assertThatThrownBy(() -> schema.check(new ObjectMapper().readTree("{\"page\": \"3\"}")))
        .hasMessage("$.page: string found, integer expected");
  }

  @Test
  void kinds_in_order_keep_their_names_and_set_semantics() throws Exception {
    String json =
        "{\"kinds\": {\"b\": {\"command\": [\"x\"], \"timeout\": \"1m\", \"retryExitCodes\": [75, 75, 3]},"
            + " \"a\": {\"command\": [\"y\"], \"timeout\": \"1m\"}}}";
    KindCatalogue catalogue = KindCatalogue.load(write(json), DEFAULTS);

    assertThat(catalogue.kinds()).extracting(CommandKind::name).containsExactly("b", "a");
    assertThat(catalogue.kinds().get(0).retryExitCodes()).isEqualTo(Set.of(75, 3));
    assertThat(catalogue.toString()).contains("kinds.json").contains("b, a");
  }

  @Test
  void a_kind_may_name_its_capacity_and_the_others_take_the_stacks() throws Exception {
    String json =
        "{\"kinds\": {\"spotty\": {\"command\": [\"x\"], \"timeout\": \"1m\", \"capacity\": \"spot\"},"
            + " \"either\": {\"command\": [\"x\"], \"timeout\": \"1m\", \"capacity\": \"spot-then-on-demand\"},"
            + " \"plain\": {\"command\": [\"y\"], \"timeout\": \"1m\"}}}";
    KindCatalogue catalogue = KindCatalogue.load(write(json), DEFAULTS);

    assertThat(catalogue.kind("spotty").orElseThrow().capacity()).contains(Capacity.SPOT);
    assertThat(catalogue.kind("plain").orElseThrow().capacity()).isEmpty();
    assertThat(catalogue.capacities())
        .containsExactly(
            Map.entry("spotty", Capacity.SPOT), Map.entry("either", Capacity.SPOT_THEN_ON_DEMAND));
  }

  private static Arguments bad(String rule, String json, String kind, String key, String advice) {
    return Arguments.of(rule, json, kind, key, advice);
  }

  private static String kinds(String body) {
    return "{\"kinds\": {" + body + "}}";
  }

  private static String kind(String body) {
    return kinds("\"render\": {" + body + "}");
  }
}
