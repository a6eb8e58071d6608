package buildqueue.kinds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.core.QueueConfig;
import buildqueue.worker.QueueKindLimits;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * A kind's payloadSchema at submit: each failure named by its JSON path, with what was expected.
 */
class PayloadSchemaTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** An article: a title, pages with titles and numbers, an optional author with a name. */
  private static final PayloadSchema ARTICLE =
      KindCatalogue.parse(
              "kinds.json",
              """
      {"kinds": {"render-article": {"command": ["node", "index.js"], "timeout": "15m", "payloadSchema": {
        "type": "object",
        "required": ["title", "pages"],
        "additionalProperties": false,
        "properties": {
          "title": {"type": "string", "minLength": 1},
          "pages": {"type": "array", "maxItems": 100, "items": {"$ref": "#/$defs/page"}},
          "author": {"type": "object", "properties": {"name": {"type": "string"}}}
        },
        "$defs": {"page": {"type": "object", "required": ["title"],
                           "properties": {"title": {"type": "string"}, "number": {"type": "integer", "minimum": 1}}}}
      }}}}
      """,
              QueueKindLimits.of(QueueConfig.defaults()))
          .kinds()
          .get(0)
          .payloadSchema();

  private static JsonNode json(String text) throws Exception {
    return JSON.readTree(text);
  }

  private static String refusal(String payload) throws Exception {
    JsonNode p = json(payload);
    Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> ARTICLE.check(p));
    assertThat(t).as(payload).isInstanceOf(IllegalArgumentException.class);
    return t.getMessage();
  }

  @Test
  void a_payload_that_fits_passes() throws Exception {
    ARTICLE.check(
        json(
            "{\"title\": \"Hello\", \"pages\": [{\"title\": \"One\", \"number\": 1}],"
                + " \"author\": {\"name\": \"Ada\"}}"));
  }

  @Test
  void a_wrong_type_in_an_array_element_is_named_by_its_index() throws Exception {
    String message =
        refusal(
            "{\"title\": \"T\", \"pages\": [{\"title\": \"a\"}, {\"title\": \"b\"}, {\"title\": 3}]}");

    assertThat(message).isEqualTo("$.pages[2].title: integer found, string expected");
  }

  @Test
  void a_wrong_type_in_a_nested_object_is_named_by_its_path() throws Exception {
    assertThat(refusal("{\"title\": \"T\", \"pages\": [], \"author\": {\"name\": 7}}"))
        .isEqualTo("$.author.name: integer found, string expected");
  }

  @Test
  void a_missing_required_property_is_named_where_it_should_be() throws Exception {
    assertThat(refusal("{\"pages\": []}")).isEqualTo("$.title: is required but missing");
    assertThat(refusal("{\"title\": \"T\", \"pages\": [{\"number\": 2}]}"))
        .isEqualTo("$.pages[0].title: is required but missing");
  }

  @Test
  void a_value_out_of_range_says_what_was_expected() throws Exception {
    assertThat(refusal("{\"title\": \"T\", \"pages\": [{\"title\": \"a\", \"number\": 0}]}"))
        .isEqualTo("$.pages[0].number: must have a minimum value of 1");
  }

  @Test
  void an_unexpected_property_is_named() throws Exception {
    assertThat(refusal("{\"title\": \"T\", \"pages\": [], \"colour\": \"red\"}"))
        .startsWith("$: ")
        .contains("'colour'");
  }

  @Test
  void at_most_three_failures_are_named_and_the_rest_counted() throws Exception {
    String message =
        refusal("{\"title\": 1, \"pages\": [{\"title\": 2}, {\"title\": 3}, {\"title\": 4}, {}]}");

    assertThat(message.split("; ")).hasSize(3);
    assertThat(message)
        .startsWith("$.title: integer found, string expected; ")
        .endsWith("(and 2 more)");
  }

  @Test
  void without_a_schema_any_object_passes_and_anything_else_is_refused() throws Exception {
    PayloadSchema.ANY_OBJECT.check(json("{\"anything\": [1, 2]}"));
    assertThatThrownBy(() -> PayloadSchema.ANY_OBJECT.check(json("[1]")))
        .hasMessageStartingWith("$: ");
  }
}
