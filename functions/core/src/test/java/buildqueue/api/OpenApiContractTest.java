package buildqueue.api;

import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * openapi.json describes the API the code answers with: every route is in it, it is served, every
 * schema in it compiles, and the check every route test runs through ({@link CheckedApi}) does
 * refuse a response that does not match.
 */
class OpenApiContractTest extends ApiTest {
  @Test
  void every_route_of_the_api_is_documented_and_every_documented_operation_is_a_route() {
    List<String> shared = new ArrayList<>(OpenApiContract.shipped().operations());
    shared.removeAll(OpenApiContract.shipped().localOnlyOperations());

    assertThat(shared).containsExactlyInAnyOrderElementsOf(f.api.unchecked().routes());
  }

  @Test
  void the_local_only_operations_are_the_routes_only_the_local_server_adds() {
    HttpApi local = f.api.unchecked().withSpotReclaims(id -> null);

    assertThat(OpenApiContract.shipped().localOnlyOperations())
        .containsExactly("POST /workers/{id}/reclaim");
    assertThat(OpenApiContract.shipped().operations())
        .containsExactlyInAnyOrderElementsOf(local.routes());
  }

  @Test
  void the_readme_route_table_lists_exactly_the_documented_operations() throws IOException {
    Path dir = Path.of("").toAbsolutePath();
    while (!Files.isRegularFile(dir.resolve("README.md"))
        || !Files.isDirectory(dir.resolve("functions"))) {
      dir = dir.getParent();
    }
    Matcher row =
        Pattern.compile("(?m)^\\| `(GET|POST|PUT|DELETE|PATCH) (/[^`?\\s]*)")
            .matcher(Files.readString(dir.resolve("README.md")));
    List<String> listed = new ArrayList<>();
    while (row.find()) {
      listed.add(row.group(1) + " " + row.group(2));
    }

    assertThat(listed).containsExactlyInAnyOrderElementsOf(OpenApiContract.shipped().operations());
  }

  @Test
  void get_openapi_json_is_served_without_a_token_as_the_document_that_ships() {
    ApiResponse r = f.get("/openapi.json", null);

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("Content-Type")).hasValue("application/json");
    JsonNode served = json(r);
    assertThat(served.get("openapi").asText()).isEqualTo("3.1.0");
    assertThat(served).isEqualTo(OpenApiContract.shipped().document());
  }

  @Test
  void every_schema_and_every_reference_in_the_document_resolves() {
    JsonNode doc = OpenApiContract.shipped().document();
    List<String> refs = new ArrayList<>();
    collectRefs(doc, refs);
    assertThat(refs)
        .isNotEmpty()
        .allSatisfy(ref -> assertThat(doc.at(ref.substring(1)).isMissingNode()).as(ref).isFalse());
  }

  @Test
  void a_job_response_that_breaks_the_contract_fails_the_check() {
    long id = f.submit(ALICE, "noop", "{}");
    f.h.awaitStatus(id, "succeeded");
    ApiResponse good = f.get("/jobs/" + id, ALICE);
    ObjectNode broken = (ObjectNode) json(good);
    broken.put("progress", "three");
    broken.remove("status");
    ApiResponse bad =
        new ApiResponse(200, good.headers(), broken.toString().getBytes(StandardCharsets.UTF_8));

    assertThat(OpenApiContract.shipped().violations("GET", "/jobs/" + id, bad))
        .anySatisfy(v -> assertThat(v).contains("GET /jobs/{id} 200").contains("/progress"))
        .anySatisfy(v -> assertThat(v).contains("status"));
    assertThatThrownBy(
            () -> OpenApiContract.shipped().check(ApiRequest.of("GET", "/jobs/" + id, ALICE), bad))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("does not match openapi.json");
  }

  @Test
  void an_undocumented_status_content_type_or_missing_header_fails_the_check() {
    OpenApiContract contract = OpenApiContract.shipped();
    ApiResponse teapot =
        new ApiResponse(418, Map.of("Content-Type", "application/json"), "{}".getBytes());
    ApiResponse html =
        new ApiResponse(200, Map.of("Content-Type", "text/html"), "<p>up</p>".getBytes());
    ApiResponse noLocation =
        f.post("/jobs", "{\"kind\": \"noop\"}", ALICE).withHeader("Location", "x");
    ApiResponse logWithoutTotal =
        new ApiResponse(
            200,
            Map.of("Content-Type", "text/plain; charset=utf-8", "Buildqueue-Job-Status", "running"),
            "line\n".getBytes());

    assertThat(contract.violations("GET", "/health", teapot))
        .singleElement()
        .asString()
        .contains("does not document status 418");
    assertThat(contract.violations("GET", "/health", html))
        .singleElement()
        .asString()
        .contains("Content-Type \"text/html\" is not documented");
    assertThat(contract.violations("GET", "/jobs/1/log", logWithoutTotal))
        .singleElement()
        .asString()
        .contains("the required header Buildqueue-Log-Total-Bytes is missing");
    assertThat(contract.violations("POST", "/jobs", noLocation)).isEmpty();
    assertThat(
            contract.violations(
                "GET",
                "/jobs/1/log",
                logWithoutTotal
                    .withHeader("Buildqueue-Log-Total-Bytes", "5")
                    .withHeader("Buildqueue-Job-Status", "sleeping")))
        .singleElement()
        .asString()
        .contains("the header Buildqueue-Job-Status");
  }

  @Test
  void the_route_tests_check_through_a_contract_so_a_wrong_document_fails_a_real_call() {
    ObjectNode doc = OpenApiContract.shipped().document().deepCopy();
    ((ObjectNode) doc.at("/components/schemas/Job/properties/progress")).put("type", "string");
    CheckedApi strict = new CheckedApi(f.api.unchecked(), OpenApiContract.of(doc));
    long id = f.submit(ALICE, "noop", "{}");

    assertThatThrownBy(() -> strict.handle(ApiRequest.of("GET", "/jobs/" + id, ALICE)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("/progress");
    assertThat(f.get("/jobs/" + id, ALICE).status())
        .as("the shipped document accepts it")
        .isEqualTo(200);
  }

  @Test
  void the_document_is_openapi_3_1_that_the_client_generators_parser_reads_without_a_message() {
    SwaggerParseResult parsed = parse(OpenApiContract.shipped().document());

    assertThat(parsed.getMessages()).isEmpty();
    assertThat(parsed.getOpenAPI().getOpenapi()).isEqualTo("3.1.0");
    assertThat(parsed.getOpenAPI().getPaths()).hasSize(24);
  }

  @Test
  void the_parser_does_report_a_broken_document() {
    ObjectNode doc = OpenApiContract.shipped().document().deepCopy();
    ((ObjectNode) doc.at("/paths/~1jobs~1{id}/get/responses/200/content/application~1json/schema"))
        .put("$ref", "#/components/schemas/NoSuchSchema");
    ((ObjectNode) doc.at("/paths/~1lanes/get")).remove("responses");

    assertThat(parse(doc).getMessages()).isNotEmpty();
  }

  private static SwaggerParseResult parse(JsonNode doc) {
    ParseOptions options = new ParseOptions();
    options.setResolve(true);
    return new OpenAPIV3Parser().readContents(doc.toString(), null, options);
  }

  private static void collectRefs(JsonNode node, List<String> refs) {
    if (node.isObject() && node.has("$ref")) {
      refs.add(node.get("$ref").asText());
    }
    node.forEach(child -> collectRefs(child, refs));
  }
}
