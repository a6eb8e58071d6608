package buildqueue.api;

import buildqueue.core.BuildQueue;
import buildqueue.core.WebhookEndpoints;
import buildqueue.core.WebhookEndpoints.Delivery;
import buildqueue.core.WebhookEndpoints.Endpoint;
import buildqueue.core.WebhookSignature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Webhook endpoints (admins; docs/architecture.md "Webhooks"): {@code PUT /webhooks/{name}}, {@code
 * GET /webhooks}, {@code GET /webhooks/{name}}, {@code DELETE /webhooks/{name}}, the delivery log
 * {@code GET /webhooks/{name}/deliveries} and {@code POST
 * /webhooks/{name}/deliveries/{deliveryId}/replay}. A secret is shown once, in the answer of the
 * save that generated it; otherwise only its fingerprint, and never in an error.
 */
record WebhookRoutes(BuildQueue queue) implements Route.Resource {
  private static final String EXAMPLE =
      "{\"url\": \"https://ci.example.com/hooks/buildqueue\", \"userId\": \"alice\","
          + " \"eventTypes\": [\"succeeded\", \"failed\"]}";
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");
  private static final Pattern EVENT_TYPE = Pattern.compile("[a-z][a-z-]{0,39}");
  private static final Pattern DELIVERY_ID = Pattern.compile("[0-9]{1,18}");
  private static final Set<String> STATUSES = Set.of("pending", "delivered", "dead");
  private static final int MAX_URL_CHARS = 2000;
  private static final int MAX_EVENT_TYPES = 50;

  @Override
  public List<Route> routes() {
    return List.of(
        new Route("GET", "/webhooks", Route.Access.ADMIN, Set.of(), this::list),
        new Route("PUT", "/webhooks/{name}", Route.Access.ADMIN, Set.of(), this::put),
        new Route("GET", "/webhooks/{name}", Route.Access.ADMIN, Set.of(), this::get),
        new Route("DELETE", "/webhooks/{name}", Route.Access.ADMIN, Set.of(), this::delete),
        new Route(
            "GET",
            "/webhooks/{name}/deliveries",
            Route.Access.ADMIN,
            Set.of("status", "limit", "before"),
            this::deliveries),
        new Route(
            "POST",
            "/webhooks/{name}/deliveries/{deliveryId}/replay",
            Route.Access.ADMIN,
            Set.of(),
            this::replay));
  }

  private ApiResponse list(Call call) {
    ObjectNode out = ApiJson.object();
    ArrayNode items = out.putArray("webhooks");
    queue.webhooks().list().forEach(e -> items.add(json(e)));
    return ApiJson.response(200, out);
  }

  private ApiResponse get(Call call) {
    return ApiJson.response(200, json(existing(call)));
  }

  private ApiResponse delete(Call call) {
    if (!queue.webhooks().delete(name(call))) {
      throw noSuch(name(call));
    }
    return new ApiResponse(204, java.util.Map.of(), new byte[0]);
  }

  private ApiResponse put(Call call) {
    String name = name(call);
    ObjectNode body = JsonBodies.object(call.request(), EXAMPLE);
    JsonBodies.onlyFields(
        body,
        new LinkedHashSet<>(List.of("url", "userId", "eventTypes", "secrets", "rotateSecret")),
        "PUT /webhooks/{name}");
    String url = url(body.get("url"));
    String userId = userId(body.get("userId"));
    List<String> eventTypes = eventTypes(body.get("eventTypes"));
    List<String> secrets = secrets(body.get("secrets"));
    JsonNode rotate = body.get("rotateSecret");
    if (rotate != null && !rotate.isBoolean()) {
      throw ApiProblem.invalid(
          "The field \"rotateSecret\" must be true or false, not "
              + JsonBodies.kindOf(rotate)
              + ".");
    }
    boolean rotating = rotate != null && rotate.booleanValue();
    if (rotating && secrets != null) {
      throw ApiProblem.invalid(
          "Send \"secrets\" (the secrets to sign with) or \"rotateSecret\": true (a new generated"
              + " secret beside the current one), not both.");
    }
    WebhookEndpoints.Saved saved =
        queue
            .webhooks()
            .save(name, new WebhookEndpoints.Change(url, userId, eventTypes, secrets, rotating))
            .orElseThrow(
                () ->
                    new ApiProblem(
                        ApiProblem.Type.CONFLICT,
                        "There are "
                            + WebhookEndpoints.MAX_ENDPOINTS
                            + " webhook endpoints already; delete one before adding another."));
    ObjectNode out = json(saved.endpoint());
    // The only place a secret is ever shown: the answer of the save that made it.
    saved.newSecret().ifPresent(s -> out.put("secret", s));
    return ApiJson.response(saved.created() ? 201 : 200, out)
        .withHeader("Location", "/webhooks/" + name);
  }

  private ApiResponse deliveries(Call call) {
    Endpoint e = existing(call);
    String status = call.single("status").orElse(null);
    if (status != null && !STATUSES.contains(status)) {
      throw ApiProblem.invalid(
          "Query parameter \"status\" must be pending, delivered or dead, not \""
              + JsonBodies.printable(status)
              + "\".");
    }
    int limit = call.wholeNumber("limit", HttpApi.DEFAULT_LIST_LIMIT, 1, HttpApi.MAX_LIST_LIMIT);
    Long before = call.cursorId("before", "a delivery id");
    List<Delivery> rows = queue.webhooks().deliveries(e.name(), status, before, limit + 1);
    ObjectNode out = ApiJson.object();
    ArrayNode items = out.putArray("deliveries");
    List<Delivery> page = rows.size() > limit ? rows.subList(0, limit) : rows;
    page.forEach(d -> items.add(json(d)));
    if (rows.size() > limit) {
      out.put(
          "next",
          "/webhooks/"
              + e.name()
              + "/deliveries?limit="
              + limit
              + (status == null ? "" : "&status=" + status)
              + "&before="
              + page.get(page.size() - 1).id());
    } else {
      out.putNull("next");
    }
    return ApiJson.response(200, out);
  }

  private ApiResponse replay(Call call) {
    String name = name(call);
    String raw = call.params().get("deliveryId");
    if (!DELIVERY_ID.matcher(raw).matches()) {
      throw ApiProblem.notFound(
          "There is no delivery \""
              + JsonBodies.printable(raw)
              + "\": delivery ids are whole numbers, as GET /webhooks/{name}/deliveries lists them.");
    }
    long id = Long.parseLong(raw);
    switch (queue.replayWebhookDelivery(name, id)) {
      case NOT_FOUND:
        throw ApiProblem.notFound(
            "The webhook endpoint \""
                + JsonBodies.printable(name)
                + "\" has no delivery "
                + id
                + "; GET /webhooks/"
                + name
                + "/deliveries lists them.");
      case NOT_DEAD:
        throw new ApiProblem(
            ApiProblem.Type.CONFLICT,
            "Delivery "
                + id
                + " is not dead: only a dead delivery is replayed (a pending one is still being"
                + " tried, a delivered one was acknowledged).");
      default:
        ObjectNode out = ApiJson.object();
        out.put("id", id);
        out.put("status", "pending");
        return ApiJson.response(202, out);
    }
  }

  private Endpoint existing(Call call) {
    String name = name(call);
    return queue.webhooks().get(name).orElseThrow(() -> noSuch(name));
  }

  private static ApiProblem noSuch(String name) {
    return ApiProblem.notFound(
        "There is no webhook endpoint \""
            + JsonBodies.printable(name)
            + "\"; GET /webhooks lists them, PUT /webhooks/{name} makes one.");
  }

  private static String name(Call call) {
    String name = call.params().get("name");
    if (!NAME.matcher(name).matches()) {
      throw ApiProblem.notFound(
          "There is no webhook endpoint \""
              + JsonBodies.printable(name)
              + "\": names are 1 to 63 lower-case letters, digits and '-', starting with a letter"
              + " or digit.");
    }
    return name;
  }

  private static String url(JsonNode node) {
    if (node == null || node.isNull()) {
      throw ApiProblem.invalid("The field \"url\" is missing; send e.g. " + EXAMPLE + ".");
    }
    if (!node.isTextual()) {
      throw ApiProblem.invalid(
          "The field \"url\" must be a string, not " + JsonBodies.kindOf(node) + ".");
    }
    String url = node.textValue();
    String problem = urlProblem(url);
    if (problem != null) {
      throw ApiProblem.invalid(
          "The field \"url\" must be an absolute http or https URL "
              + problem
              + ", not \""
              + JsonBodies.printable(url)
              + "\".");
    }
    return url;
  }

  /** Why {@code url} cannot be an endpoint, or null when it can. */
  private static String urlProblem(String url) {
    if (url.length() > MAX_URL_CHARS) {
      return "of at most " + MAX_URL_CHARS + " characters";
    }
    try {
      URI u = new URI(url);
      String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase();
      if (!scheme.equals("http") && !scheme.equals("https")) {
        return "(the scheme must be http or https)";
      }
      if (u.getHost() == null || u.getHost().isEmpty()) {
        return "with a host";
      }
      if (u.getRawUserInfo() != null) {
        return "without user information (credentials belong in the endpoint's own checks of"
            + " the signature)";
      }
      if (u.getRawFragment() != null) {
        return "without a fragment";
      }
      return null;
    } catch (URISyntaxException e) {
      return "(it does not parse as a URL)";
    }
  }

  private static String userId(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isTextual() || !Ids.usable(node.textValue())) {
      throw ApiProblem.invalid(
          "The field \"userId\" must be a user id of 1 to "
              + HttpApi.MAX_KEY_CHARS
              + " characters without control characters, or left out for every user's events.");
    }
    return node.textValue();
  }

  private static List<String> eventTypes(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isArray() || node.isEmpty() || node.size() > MAX_EVENT_TYPES) {
      throw ApiProblem.invalid(
          "The field \"eventTypes\" must be an array of 1 to "
              + MAX_EVENT_TYPES
              + " event types (e.g. [\"succeeded\", \"failed\"]), or left out for every type.");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode t : node) {
      if (!t.isTextual() || !EVENT_TYPE.matcher(t.textValue()).matches()) {
        throw ApiProblem.invalid(
            "Each of \"eventTypes\" must be an event type as GET /jobs/{id}/events shows it"
                + " (lower-case letters and '-', e.g. \"succeeded\"), not "
                + JsonBodies.printable(t.toString())
                + ".");
      }
      if (!out.contains(t.textValue())) {
        out.add(t.textValue());
      }
    }
    return out;
  }

  /** The secrets given, or null. An error names the position of a bad one, never its text. */
  private static List<String> secrets(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isArray() || node.isEmpty() || node.size() > 2) {
      throw ApiProblem.invalid(
          "The field \"secrets\" must be an array of one or two secrets (two while a receiver"
              + " moves from the old to the new), or left out to keep the endpoint's (a new"
              + " endpoint gets a generated one).");
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < node.size(); i++) {
      JsonNode s = node.get(i);
      if (!s.isTextual() || !WebhookSignature.valid(s.textValue())) {
        throw ApiProblem.invalid(
            "secrets["
                + i
                + "] is not a Standard Webhooks secret: \"whsec_\" followed by the base64 of "
                + WebhookSignature.MIN_KEY_BYTES
                + " to "
                + WebhookSignature.MAX_KEY_BYTES
                + " random bytes. (Its value is not repeated here.)");
      }
      out.add(s.textValue());
    }
    return out;
  }

  private static ObjectNode json(Endpoint e) {
    ObjectNode o = ApiJson.object();
    o.put("name", e.name());
    o.put("url", e.url());
    o.put("userId", e.userId());
    if (e.eventTypes() == null) {
      o.putNull("eventTypes");
    } else {
      ArrayNode types = o.putArray("eventTypes");
      e.eventTypes().forEach(types::add);
    }
    ArrayNode prints = o.putArray("secretFingerprints");
    e.secretFingerprints().forEach(prints::add);
    o.put("createdAt", e.createdAt().toString());
    o.put("updatedAt", e.updatedAt().toString());
    return o;
  }

  private static ObjectNode json(Delivery d) {
    ObjectNode o = ApiJson.object();
    o.put("id", d.id());
    o.put("eventId", d.eventId());
    o.put("jobId", d.jobId());
    o.put("eventType", d.eventType());
    o.put("status", d.status());
    o.put("attempts", d.attempts());
    o.put("lastStatus", d.lastStatus());
    o.put("lastError", d.lastError());
    o.put("createdAt", d.createdAt().toString());
    o.put("firstAttemptAt", time(d.firstAttemptAt()));
    o.put("lastAttemptAt", time(d.lastAttemptAt()));
    o.put("nextAttemptAt", time(d.nextAttemptAt()));
    o.put("deliveredAt", time(d.deliveredAt()));
    return o;
  }

  private static String time(Instant t) {
    return t == null ? null : t.toString();
  }
}
