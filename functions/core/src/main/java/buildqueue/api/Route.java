package buildqueue.api;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One route: a method and a path template ({@code /jobs/{id}}), who may call it, the query
 * parameters it takes, and its handler. {@link HttpApi} matches, authenticates and checks the query
 * before the handler runs, so a handler sees only an authorized {@link Call}.
 *
 * @param queryParams the query parameters the route takes; null takes any (the static page)
 */
record Route(
    String method, String template, Access access, Set<String> queryParams, Handler handler) {
  /** Who may call a route. */
  enum Access {
    /** No token needed. */
    ANYONE,
    /** Any caller with a usable token. */
    USER,
    /** A caller with the admin scope. */
    ADMIN
  }

  /** Answers one matched, authorized call; throws {@link ApiProblem} to refuse it. */
  @FunctionalInterface
  interface Handler {
    ApiResponse handle(Call call);
  }

  /**
   * A resource's routes, in the order they are matched; {@link HttpApi} lists each resource once.
   */
  interface Resource {
    List<Route> routes();
  }

  /** "METHOD /template", as openapi.json names an operation. */
  String operation() {
    return method + " " + template;
  }

  /** The path parameters when {@code segments} fit this route's template, else null. */
  Map<String, String> match(List<String> segments) {
    List<String> parts =
        template.equals("/") ? List.of() : List.of(template.substring(1).split("/"));
    if (parts.size() != segments.size()) {
      return null;
    }
    Map<String, String> params = new LinkedHashMap<>();
    for (int i = 0; i < parts.size(); i++) {
      String part = parts.get(i);
      if (part.startsWith("{") && part.endsWith("}")) {
        if (segments.get(i).isEmpty()) {
          return null;
        }
        params.put(part.substring(1, part.length() - 1), segments.get(i));
      } else if (!part.equals(segments.get(i))) {
        return null;
      }
    }
    return params;
  }
}
