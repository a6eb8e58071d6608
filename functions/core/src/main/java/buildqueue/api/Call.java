package buildqueue.api;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What a route handler gets: the request, its authorized caller (null on a route anyone may call),
 * the path parameters and the query parameters (only those the route takes, each at most once but
 * {@code status}), with the readings of them that several routes share.
 */
record Call(
    ApiRequest request,
    Caller caller,
    Map<String, String> params,
    Map<String, List<String>> query) {
  private static final Pattern JOB_ID = Pattern.compile("[0-9]{1,18}");
  private static final Pattern WHOLE_NUMBER = Pattern.compile("[0-9]{1,9}");

  /** A parameter's value; an empty one ({@code ?limit=}, as forms send it) counts as absent. */
  Optional<String> single(String name) {
    List<String> values = query.get(name);
    return values == null || values.isEmpty() || values.get(0).isEmpty()
        ? Optional.empty()
        : Optional.of(values.get(0));
  }

  int wholeNumber(String name, int fallback, int min, int max) {
    Optional<String> raw = single(name);
    if (raw.isEmpty()) {
      return fallback;
    }
    if (!WHOLE_NUMBER.matcher(raw.get()).matches()
        || Integer.parseInt(raw.get()) < min
        || Integer.parseInt(raw.get()) > max) {
      throw ApiProblem.invalid(
          "Query parameter \""
              + name
              + "\" must be a whole number from "
              + min
              + " to "
              + max
              + ", not \""
              + JsonBodies.printable(raw.get())
              + "\" (default "
              + fallback
              + ").");
    }
    return Integer.parseInt(raw.get());
  }

  /** A page cursor: the id a previous page's {@code next} link names; null when absent. */
  Long cursorId(String name, String what) {
    return single(name)
        .map(
            raw -> {
              if (!JOB_ID.matcher(raw).matches()) {
                throw ApiProblem.invalid(
                    "Query parameter \""
                        + name
                        + "\" must be "
                        + what
                        + " (a whole number), as in the "
                        + "\"next\" link of the previous page, not \""
                        + JsonBodies.printable(raw)
                        + "\".");
              }
              return Long.parseLong(raw);
            })
        .orElse(null);
  }

  /** The job id in the path; a path that cannot name a job is "not found". */
  long jobId() {
    return pathId("job", "as returned by POST /jobs");
  }

  /** The worker id in the path; a path that cannot name a worker is "not found". */
  long workerId() {
    return pathId("worker", "as GET /lanes lists them");
  }

  private long pathId(String what, String whence) {
    String raw = params.get("id");
    if (!JOB_ID.matcher(raw).matches()) {
      throw ApiProblem.notFound(
          "There is no "
              + what
              + " \""
              + JsonBodies.printable(raw)
              + "\": "
              + what
              + " ids are whole numbers, "
              + whence
              + ".");
    }
    return Long.parseLong(raw);
  }

  /** Whether the caller may see what {@code userId} owns: their own, or anything for an admin. */
  boolean maySee(String userId) {
    return caller.admin() || userId.equals(caller.userId());
  }
}
