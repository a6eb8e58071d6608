package buildqueue.api;

import buildqueue.core.JobQueries;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.time.temporal.TemporalAdjusters;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What users' jobs were billed (docs/architecture.md §4.8): {@code GET /users/{userId}/usage} (the
 * user, or an admin; anyone else is told there is no such usage, as for jobs) and {@code GET
 * /usage} (admins, by user). A share counts in the range its worker stopped in.
 */
record UsageRoutes(JobQueries queries) implements Route.Resource {
  private static final String RANGE_EXAMPLE = "?from=2026-11-01&to=2026-12-01";

  @Override
  public List<Route> routes() {
    return List.of(
        new Route(
            "GET", "/users/{userId}/usage", Route.Access.USER, Set.of("from", "to"), this::user),
        new Route("GET", "/usage", Route.Access.ADMIN, Set.of("from", "to"), this::byUser));
  }

  /** A half-open range of time, [from, to). */
  record Range(Instant from, Instant to) {}

  private ApiResponse user(Call call) {
    String userId = call.params().get("userId");
    if (!Ids.usable(userId) || !call.maySee(userId)) {
      throw ApiProblem.notFound(
          "There is no usage of user \""
              + JsonBodies.printable(userId == null ? "" : userId)
              + "\" for you: a user sees only their own (GET /users/{yourId}/usage).");
    }
    Range range = range(call);
    JobQueries.Usage usage = queries.usage(userId, range.from(), range.to());
    ObjectNode out = usageJson(usage);
    out.put("from", ApiJson.time(range.from()));
    out.put("to", ApiJson.time(range.to()));
    return ApiJson.response(200, out);
  }

  private ApiResponse byUser(Call call) {
    Range range = range(call);
    ObjectNode out = ApiJson.object();
    out.put("from", ApiJson.time(range.from()));
    out.put("to", ApiJson.time(range.to()));
    ArrayNode users = out.putArray("users");
    queries.usageByUser(range.from(), range.to()).forEach(u -> users.add(usageJson(u)));
    return ApiJson.response(200, out);
  }

  private static ObjectNode usageJson(JobQueries.Usage u) {
    ObjectNode o = ApiJson.object();
    o.put("userId", u.userId());
    o.put("jobs", u.jobs());
    if (u.cost() == null) {
      o.putNull("cost");
    } else {
      o.set("cost", ApiJson.cost(u.cost()));
    }
    return o;
  }

  /**
   * {@code from} and {@code to}: a date (UTC midnight) or an instant; by default this month (UTC).
   */
  static Range range(Call call) {
    LocalDate today = LocalDate.now(ZoneOffset.UTC);
    Instant from =
        instant(call.single("from"), "from")
            .orElse(today.withDayOfMonth(1).atStartOfDay().toInstant(ZoneOffset.UTC));
    Instant to =
        instant(call.single("to"), "to")
            .orElse(
                today
                    .with(TemporalAdjusters.firstDayOfNextMonth())
                    .atStartOfDay()
                    .toInstant(ZoneOffset.UTC));
    if (!from.isBefore(to)) {
      throw ApiProblem.invalid(
          "Query parameter \"from\" ("
              + from
              + ") must be before \"to\" ("
              + to
              + "), e.g. "
              + RANGE_EXAMPLE
              + ".");
    }
    return new Range(from, to);
  }

  private static Optional<Instant> instant(Optional<String> raw, String name) {
    if (raw.isEmpty()) {
      return Optional.empty();
    }
    String text = raw.get();
    try {
      if (text.length() == 10) {
        return Optional.of(LocalDate.parse(text).atStartOfDay().toInstant(ZoneOffset.UTC));
      }
      Instant i = Instant.parse(text);
      if (i.isBefore(Instant.parse("1970-01-01T00:00:00Z"))
          || i.isAfter(Instant.parse("9999-12-31T00:00:00Z"))) {
        throw new DateTimeParseException("out of range", text, 0);
      }
      return Optional.of(i);
    } catch (DateTimeParseException e) {
      throw ApiProblem.invalid(
          "Query parameter \""
              + name
              + "\" must be a date (2026-11-01, UTC) or an instant (2026-11-01T00:00:00Z), not \""
              + JsonBodies.printable(text)
              + "\"; e.g. "
              + RANGE_EXAMPLE
              + ".");
    }
  }
}
