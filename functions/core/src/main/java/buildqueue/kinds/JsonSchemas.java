package buildqueue.kinds;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaException;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import com.networknt.schema.path.PathType;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Turns a kind's {@code payloadSchema} into a {@link PayloadSchema}: checked against its dialect's
 * meta-schema, compiled once, then shared by every request (a compiled schema is thread-safe).
 *
 * <p>Draft 2020-12 unless the schema names another dialect in {@code $schema} (drafts 4, 6, 7 and
 * 2019-09 are known). Nothing is fetched: the meta-schemas ship inside the validator, and a {@code
 * $ref} may point only inside the schema itself ({@code #/$defs/page}); a reference to another file
 * or a URL refuses the schema when the catalogue loads, not at the first submission.
 */
final class JsonSchemas {
  /** How many of a payload's failures a 400 names; the rest are counted. */
  static final int MAX_REPORTED_ERRORS = 3;

  private static final SchemaRegistry REGISTRY =
      SchemaRegistry.withDefaultDialect(
          SpecificationVersion.DRAFT_2020_12,
          b ->
              b.schemaRegistryConfig(
                      SchemaRegistryConfig.builder().pathType(PathType.JSON_PATH).build())
                  // Only the bundled meta-schemas may be loaded; everything else would be a remote
                  // fetch.
                  .schemaLoader(l -> l.allow(iri -> isMetaSchema(iri.toString()))));

  private JsonSchemas() {}

  /**
   * Compiles {@code schema}; throws {@link IllegalArgumentException} saying what is wrong with it
   * (the caller adds the file, the kind and the key).
   */
  static PayloadSchema compile(JsonNode schema) {
    if (!schema.isObject()) {
      throw new IllegalArgumentException(
          "must be a JSON Schema object such as {\"type\": \"object\"}, not " + kindOf(schema));
    }
    SpecificationVersion dialect = dialect(schema);
    List<Error> problems =
        REGISTRY.getSchema(SchemaLocation.of(dialect.getDialectId())).validate(schema);
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(
          "is not a valid JSON Schema ("
              + name(dialect)
              + "): "
              + summary(problems, e -> e.getInstanceLocation() + ": " + e.getMessage()));
    }
    Schema compiled;
    try {
      compiled = REGISTRY.getSchema(schema);
      // Resolves every $ref now, so a reference that cannot be followed refuses the catalogue.
      compiled.initializeValidators();
    } catch (SchemaException e) {
      throw new IllegalArgumentException(refusal(e), e);
    }
    return payload -> {
      List<Error> errors = compiled.validate(payload);
      if (!errors.isEmpty()) {
        throw new IllegalArgumentException(summary(errors, JsonSchemas::describe));
      }
    };
  }

  private static SpecificationVersion dialect(JsonNode schema) {
    JsonNode declared = schema.get("$schema");
    if (declared == null) {
      return SpecificationVersion.DRAFT_2020_12;
    }
    Optional<SpecificationVersion> known =
        declared.isTextual()
            ? SpecificationVersion.fromDialectId(declared.textValue())
            : Optional.empty();
    return known.orElseThrow(
        () ->
            new IllegalArgumentException(
                "names the dialect "
                    + declared
                    + " in \"$schema\", which this queue does not know; leave \"$schema\" out for draft 2020-12, or name one of "
                    + List.of(SpecificationVersion.values()).stream()
                        .map(v -> "\"" + v.getDialectId() + "\"")
                        .collect(Collectors.joining(", "))));
  }

  private static String refusal(SchemaException e) {
    String why = e.getMessage();
    if (why != null && why.contains("not allowed to be loaded")) {
      return "refers to another document ("
          + why
          + "); a payloadSchema may only refer within itself, such as"
          + " \"$ref\": \"#/$defs/page\", so nothing is fetched over the network";
    }
    return "cannot be used: " + why;
  }

  /** A failure as a person reads it: where in the payload, and what was expected. */
  private static String describe(Error e) {
    if ("required".equals(e.getKeyword()) && e.getProperty() != null) {
      return e.getInstanceLocation().append(e.getProperty()) + ": is required but missing";
    }
    return e.getInstanceLocation() + ": " + e.getMessage();
  }

  private static String summary(
      List<Error> errors, java.util.function.Function<Error, String> each) {
    String first =
        errors.stream().limit(MAX_REPORTED_ERRORS).map(each).collect(Collectors.joining("; "));
    int more = errors.size() - MAX_REPORTED_ERRORS;
    return more > 0 ? first + " (and " + more + " more)" : first;
  }

  private static boolean isMetaSchema(String iri) {
    return iri.startsWith("https://json-schema.org/") || iri.startsWith("http://json-schema.org/");
  }

  private static String name(SpecificationVersion v) {
    return switch (v) {
      case DRAFT_4 -> "draft 4";
      case DRAFT_6 -> "draft 6";
      case DRAFT_7 -> "draft 7";
      case DRAFT_2019_09 -> "draft 2019-09";
      case DRAFT_2020_12 -> "draft 2020-12";
    };
  }

  static String kindOf(JsonNode node) {
    if (node.isTextual()) {
      return "a string";
    }
    if (node.isNumber()) {
      return "a number";
    }
    if (node.isBoolean()) {
      return node.asText();
    }
    if (node.isArray()) {
      return "an array";
    }
    if (node.isNull()) {
      return "null";
    }
    return "an object";
  }
}
