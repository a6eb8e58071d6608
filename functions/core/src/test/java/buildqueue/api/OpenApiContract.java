package buildqueue.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.Dialects;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Holds a response to {@code openapi.json}: the operation its request reached must document its
 * status, its content type and its required headers, and its JSON body must match the documented
 * schema. The schemas are checked by networknt's json-schema-validator in its OpenAPI 3.1 dialect
 * (draft 2020-12 plus OpenAPI's keywords); this class only finds which schema applies, the way a
 * client reads the document (path template, method, status, media type).
 *
 * <p>Used by {@link CheckedApi}, through which the route tests make every call.
 */
public final class OpenApiContract {
  // Not a classpath: or file location: the registry must read the document given to it, never load
  // one.
  private static final String LOCATION = "urn:buildqueue:openapi";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final OpenApiContract SHIPPED = new OpenApiContract(load());

  private final JsonNode doc;
  private final SchemaRegistry registry;
  private final Map<String, Schema> refs = new ConcurrentHashMap<>();

  /** The contract as it ships in the jar. */
  public static OpenApiContract shipped() {
    return SHIPPED;
  }

  /** A contract from another document (a test's deliberately different one). */
  static OpenApiContract of(JsonNode doc) {
    return new OpenApiContract(doc);
  }

  private OpenApiContract(JsonNode doc) {
    this.doc = doc;
    String text = doc.toString();
    // The document is handed to the registry under its own location, so "#/components/..."
    // references resolve inside it and nothing is read from elsewhere.
    this.registry =
        SchemaRegistry.withDefaultDialect(
            Dialects.getOpenApi31(), b -> b.schemas(Map.of(LOCATION, text)));
  }

  JsonNode document() {
    return doc;
  }

  /** Fails the test, naming each mismatch, unless {@code response} fits the contract. */
  public void check(ApiRequest request, ApiResponse response) {
    List<String> violations = violations(request.method(), request.path(), response);
    if (!violations.isEmpty()) {
      throw new AssertionError(
          "The response to "
              + request.method()
              + " "
              + request.path()
              + " does not match "
              + "openapi.json: "
              + String.join("; ", violations)
              + "\nresponse: "
              + response
              + " "
              + response.bodyText());
    }
  }

  /** What in {@code response} the contract does not allow; empty when it fits. */
  List<String> violations(String method, String path, ApiResponse response) {
    String template = template(path);
    if (template == null) {
      // A path that is no route: the answer is a problem, as for every refusal.
      return problemOnly(response, List.of(400, 404), "a path that is no route", method);
    }
    String pointer = "/paths/" + escape(template);
    // HEAD is held to GET's operation: the same status and headers, and no body.
    boolean head = method.equals("HEAD");
    String documentedMethod = head ? "get" : method.toLowerCase(Locale.ROOT);
    JsonNode operation = doc.at(pointer).get(documentedMethod);
    if (operation == null || !operation.isObject()) {
      // A malformed path is refused before its method is looked at.
      List<String> v =
          new ArrayList<>(
              problemOnly(response, List.of(400, 405), method + " on " + template, method));
      if (response.status() == 405 && response.header("Allow").isEmpty()) {
        v.add("a 405 must say Allow");
      }
      return v;
    }
    String where = method + " " + template;
    JsonNode documented = operation.path("responses").get(Integer.toString(response.status()));
    if (documented == null) {
      return List.of(
          where
              + " does not document status "
              + response.status()
              + " (it documents "
              + fieldNames(operation.path("responses"))
              + ")");
    }
    return fits(resolve(documented), response, where + " " + response.status(), head);
  }

  private List<String> problemOnly(
      ApiResponse response, List<Integer> statuses, String what, String method) {
    if (!statuses.contains(response.status())) {
      return List.of(
          what + " may only be answered with " + statuses + ", not " + response.status());
    }
    return fits(
        resolve(
            doc.at(
                "/components/responses/"
                    + switch (response.status()) {
                      case 400 -> "InvalidRequest";
                      case 404 -> "NotFound";
                      default -> "MethodNotAllowed";
                    })),
        response,
        what,
        method.equals("HEAD"));
  }

  /**
   * @param head the answer to a HEAD: the documented headers, and no body whatever the content
   */
  private List<String> fits(JsonNode documented, ApiResponse response, String where, boolean head) {
    List<String> v = new ArrayList<>();
    Iterator<Map.Entry<String, JsonNode>> headers = documented.path("headers").fields();
    while (headers.hasNext()) {
      Map.Entry<String, JsonNode> h = headers.next();
      Optional<String> value = response.header(h.getKey());
      if (value.isEmpty()) {
        if (h.getValue().path("required").asBoolean(false)) {
          v.add(where + ": the required header " + h.getKey() + " is missing");
        }
      } else if (h.getValue().has("schema")) {
        for (Error e :
            schema(h.getValue().get("schema"))
                .validate(JSON.getNodeFactory().textNode(value.get()))) {
          v.add(where + ": the header " + h.getKey() + ": " + e.getMessage());
        }
      }
    }
    JsonNode content = documented.get("content");
    if (head) {
      if (response.body().length > 0) {
        v.add(where + ": a HEAD answer has " + response.body().length + " bytes of body");
      }
      return v;
    }
    if (content == null) {
      if (response.body().length > 0) {
        v.add(where + ": documents no body but has " + response.body().length + " bytes");
      }
      return v;
    }
    String mediaType =
        response.header("Content-Type").map(t -> t.split(";", 2)[0].trim()).orElse("");
    JsonNode media = content.get(mediaType);
    if (media == null) {
      v.add(
          where
              + ": Content-Type \""
              + mediaType
              + "\" is not documented ("
              + fieldNames(content)
              + ")");
      return v;
    }
    JsonNode body;
    if (mediaType.endsWith("json")) {
      try {
        body = JSON.readTree(response.body());
      } catch (IOException e) {
        v.add(where + ": the body is not JSON: " + e.getMessage());
        return v;
      }
    } else {
      body = JSON.getNodeFactory().textNode(response.bodyText());
    }
    for (Error e : schema(media.path("schema")).validate(body)) {
      v.add(where + ": " + e.getInstanceLocation() + ": " + e.getMessage());
    }
    return v;
  }

  private Schema schema(JsonNode schema) {
    JsonNode ref = schema.get("$ref");
    if (ref != null && ref.asText().startsWith("#/")) {
      return refs.computeIfAbsent(
          ref.asText(), r -> compiled(registry.getSchema(SchemaLocation.of(LOCATION + r))));
    }
    return compiled(registry.getSchema(SchemaLocation.of(LOCATION), schema));
  }

  private static Schema compiled(Schema s) {
    s.initializeValidators();
    return s;
  }

  /** Follows a response's {@code $ref} into {@code components/responses}. */
  private JsonNode resolve(JsonNode node) {
    JsonNode ref = node.get("$ref");
    return ref == null ? node : resolve(doc.at(ref.asText().substring(1)));
  }

  /**
   * The documented path template {@code path} falls under; literal segments win over parameters.
   */
  String template(String path) {
    if (!path.startsWith("/")) {
      return null;
    }
    List<String> segments =
        path.equals("/") ? List.of() : List.of(path.substring(1).split("/", -1));
    String best = null;
    int bestLiterals = -1;
    for (Iterator<String> it = doc.path("paths").fieldNames(); it.hasNext(); ) {
      String t = it.next();
      List<String> parts = t.equals("/") ? List.of() : List.of(t.substring(1).split("/", -1));
      if (parts.size() != segments.size()) {
        continue;
      }
      int literals = 0;
      boolean fits = true;
      for (int i = 0; i < parts.size() && fits; i++) {
        boolean parameter = parts.get(i).startsWith("{");
        fits = parameter ? !segments.get(i).isEmpty() : parts.get(i).equals(segments.get(i));
        literals += parameter ? 0 : 1;
      }
      if (fits && literals > bestLiterals) {
        best = t;
        bestLiterals = literals;
      }
    }
    return best;
  }

  /** Each documented operation as "METHOD /template". */
  List<String> operations() {
    return operations(false);
  }

  /**
   * The operations only the local server answers ({@code x-buildqueue-local-only}: {@link
   * HttpApi#withSpotReclaims}).
   */
  List<String> localOnlyOperations() {
    return operations(true);
  }

  private List<String> operations(boolean localOnly) {
    List<String> ops = new ArrayList<>();
    doc.path("paths")
        .fields()
        .forEachRemaining(
            p ->
                p.getValue()
                    .fieldNames()
                    .forEachRemaining(
                        m -> {
                          if (List.of("get", "put", "post", "delete", "patch", "head", "options")
                                  .contains(m)
                              && (!localOnly
                                  || p.getValue()
                                      .path(m)
                                      .path("x-buildqueue-local-only")
                                      .asBoolean())) {
                            ops.add(m.toUpperCase(Locale.ROOT) + " " + p.getKey());
                          }
                        }));
    return ops;
  }

  private static String escape(String template) {
    return template.replace("~", "~0").replace("/", "~1");
  }

  private static String fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names.stream().collect(Collectors.joining(", "));
  }

  private static JsonNode load() {
    try (InputStream in = OpenApiContract.class.getResourceAsStream(OpenApiDocument.RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(
            OpenApiDocument.RESOURCE + " is missing from the classpath");
      }
      return JSON.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
