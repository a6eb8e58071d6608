package buildqueue.api;

import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.kinds.KindCatalogue;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * POST /jobs for the kinds of an operator's catalogue: the payloadSchema decides, and a refusal
 * writes nothing.
 */
class CatalogueKindsApiTest extends ApiTest {
  private static final KindCatalogue CATALOGUE =
      KindCatalogue.parse(
          "kinds.json",
          """
      {"kinds": {"render-article": {"command": ["node", "/opt/render/index.js"], "timeout": "15m",
        "payloadSchema": {"type": "object", "required": ["title", "pages"],
          "properties": {"title": {"type": "string"},
                         "pages": {"type": "array", "items": {"type": "object", "required": ["title"],
                                   "properties": {"title": {"type": "string"}}}}}}}}}
      """,
          buildqueue.worker.QueueKindLimits.of(buildqueue.core.QueueConfig.defaults()));

  private CheckedApi api;

  @BeforeEach
  void openCatalogueApi() {
    api = new CheckedApi(new HttpApi(f.h.queue, f.queries, CATALOGUE.registry()));
  }

  private ApiResponse submit(String body) {
    return api.handle(ApiRequest.json("POST", "/jobs", body, ALICE));
  }

  @Test
  void a_payload_its_schema_refuses_is_a_400_naming_the_json_path_and_nothing_is_written() {
    Map<String, Long> before = f.rowCounts();

    ApiResponse r =
        submit(
            "{\"kind\": \"render-article\", \"payload\": {\"title\": \"T\","
                + " \"pages\": [{\"title\": \"a\"}, {\"title\": \"b\"}, {\"title\": 3}]}}");

    JsonNode p = assertProblem(r, 400, "/jobs");
    assertThat(p.get("detail").asText())
        .contains("kind \"render-article\"")
        .contains("$.pages[2].title: integer found, string expected");
    assertThat(f.rowCounts()).isEqualTo(before);
    assertThat(before.get("build_job")).isZero();
  }

  @Test
  void a_missing_required_property_is_named_and_nothing_is_written() {
    Map<String, Long> before = f.rowCounts();

    JsonNode p =
        assertProblem(
            submit("{\"kind\": \"render-article\", \"payload\": {\"pages\": []}}"), 400, "/jobs");

    assertThat(p.get("detail").asText()).contains("$.title: is required but missing");
    assertThat(f.rowCounts()).isEqualTo(before);
  }

  @Test
  void a_payload_that_fits_is_accepted_as_a_job_of_that_kind() {
    ApiResponse r =
        submit(
            "{\"kind\": \"render-article\", \"payload\": {\"title\": \"T\", \"pages\": [{\"title\": \"a\"}]}}");

    assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
    long id = ApiFixture.json(r).get("id").asLong();
    assertThat(f.h.job(id).string("kind")).isEqualTo("render-article");
  }

  @Test
  void the_built_in_demo_stays_and_an_unknown_kind_lists_the_catalogues() {
    ApiResponse demo =
        submit("{\"kind\": \"demo\", \"payload\": {\"steps\": 1, \"stepMillis\": 1}}");
    assertThat(demo.status()).as(demo.bodyText()).isEqualTo(201);

    JsonNode p = assertProblem(submit("{\"kind\": \"render\"}"), 400, "/jobs");
    assertThat(p.get("detail").asText()).contains("demo, render-article");
  }
}
