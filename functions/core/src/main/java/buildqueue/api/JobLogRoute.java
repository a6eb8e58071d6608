package buildqueue.api;

import buildqueue.core.JobQueries;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code GET /jobs/{id}/log}: the output the queue keeps of a job, as text, for its owner and
 * admins.
 */
record JobLogRoute(JobQueries queries) implements Route.Resource {
  @Override
  public List<Route> routes() {
    return List.of(
        new Route("GET", "/jobs/{id}/log", Route.Access.USER, Set.of("since"), this::log));
  }

  /**
   * The job's output as the queue keeps it, as text: its last part. With {@code since} (a byte
   * count from an earlier answer's {@value HttpApi#LOG_TOTAL_BYTES}), only what came after it, so a
   * client can follow a running job; a {@code since} beyond the total means the job started a new
   * attempt, whose output starts over.
   */
  private ApiResponse log(Call call) {
    long id = call.jobId();
    JobQueries.JobLogView log =
        queries
            .log(id)
            .filter(l -> call.maySee(l.userId()))
            .orElseThrow(() -> JobAnswers.notFound(id));
    long since = byteOffset(call, "since");
    byte[] tail = log.tail().getBytes(StandardCharsets.UTF_8);
    long tailStart = log.totalBytes() - tail.length;
    int from;
    long skipped = 0;
    if (since > log.totalBytes() || since <= tailStart) {
      from = 0;
      skipped = since > log.totalBytes() ? tailStart : tailStart - since;
    } else {
      from = (int) (since - tailStart);
      while (from < tail.length && (tail[from] & 0xC0) == 0x80) {
        from++; // never start inside a character
      }
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", "text/plain; charset=utf-8");
    headers.put("Cache-Control", "no-store");
    headers.put("X-Content-Type-Options", "nosniff");
    headers.put(HttpApi.LOG_TOTAL_BYTES, Long.toString(log.totalBytes()));
    headers.put(HttpApi.JOB_STATUS, log.status().sql());
    if (skipped > 0) {
      headers.put(HttpApi.LOG_SKIPPED_BYTES, Long.toString(skipped));
    }
    return new ApiResponse(200, headers, Arrays.copyOfRange(tail, from, tail.length));
  }

  private static long byteOffset(Call call, String name) {
    Optional<String> raw = call.single(name);
    if (raw.isEmpty()) {
      return 0;
    }
    if (!raw.get().matches("[0-9]{1,18}")) {
      throw ApiProblem.invalid(
          "Query parameter \""
              + name
              + "\" must be a whole number of bytes, as the header "
              + HttpApi.LOG_TOTAL_BYTES
              + " of an earlier answer gave it, not \""
              + JsonBodies.printable(raw.get())
              + "\".");
    }
    return Long.parseLong(raw.get());
  }
}
