package buildqueue.api;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobQueries;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobQueries.Waiting;
import buildqueue.core.JobStatus;
import buildqueue.core.JobTransitions;
import buildqueue.core.OrderTransitions;
import buildqueue.core.Priority;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The jobs once submitted: {@code GET /jobs} (a page of the caller's, or for an admin anyone's),
 * {@code GET /jobs/{id}}, {@code GET /jobs/{id}/events} (its history), {@code POST
 * /jobs/{id}/cancel}, {@code PATCH /jobs/{id}} (a queued job's priority) and {@code POST
 * /jobs/{id}/run-next} (admins). Submitting is {@link JobSubmission}; the log is {@link
 * JobLogRoute}.
 */
record JobRoutes(BuildQueue queue, JobQueries queries, JobAnswers answers)
    implements Route.Resource {
  @Override
  public List<Route> routes() {
    return List.of(
        new Route(
            "GET",
            "/jobs",
            Route.Access.USER,
            Set.of("status", "limit", "userId", "before"),
            this::listJobs),
        new Route("GET", "/jobs/{id}", Route.Access.USER, Set.of(), this::getJob),
        new Route("GET", "/jobs/{id}/events", Route.Access.USER, Set.of("after"), this::events),
        new Route("POST", "/jobs/{id}/cancel", Route.Access.USER, Set.of(), this::cancel),
        new Route("PATCH", "/jobs/{id}", Route.Access.USER, Set.of(), this::patch),
        new Route("POST", "/jobs/{id}/run-next", Route.Access.ADMIN, Set.of(), this::runNext));
  }

  private static final String PATCH_EXAMPLE = "{\"priority\": \"high\"}";

  /** A queued job's priority among its owner's queued jobs: the owner's or an admin's change. */
  private ApiResponse patch(Call call) {
    long id = call.jobId();
    ObjectNode body = JsonBodies.object(call.request(), PATCH_EXAMPLE);
    JsonBodies.onlyFields(body, Set.of("priority"), "PATCH /jobs/{id}");
    Priority priority = JobSubmission.priority(body.get("priority"), PATCH_EXAMPLE);
    if (priority == null) {
      throw ApiProblem.invalid("Send the new \"priority\", e.g. " + PATCH_EXAMPLE + ".");
    }
    return reordered(
        call,
        queue.setPriority(id, call.caller().admin() ? null : call.caller().userId(), priority));
  }

  /**
   * An admin's "run next": the queued job goes to the head of its lane (before retries and the
   * turns between users), and the lane is dispatched at once.
   */
  private ApiResponse runNext(Call call) {
    JobView job = answers.visibleJob(call);
    return reordered(call, queue.runNext(job.id(), job.lane()));
  }

  private ApiResponse reordered(Call call, OrderTransitions.Reordered result) {
    if (result instanceof OrderTransitions.Reordered.NotFound n) {
      throw JobAnswers.notFound(n.jobId());
    }
    if (result instanceof OrderTransitions.Reordered.NotQueued n) {
      throw new ApiProblem(
          ApiProblem.Type.CONFLICT,
          "Job "
              + n.jobId()
              + " is "
              + n.status().sql()
              + ", not queued: only a queued job's order can change. "
              + (n.status().finished()
                  ? "Submit a new job to run it again."
                  : "It has started; cancel it with POST /jobs/{id}/cancel if it should not run."));
    }
    return ApiJson.response(200, answers.json(answers.visibleJob(call), call.caller()));
  }

  private ApiResponse listJobs(Call call) {
    String userId = call.caller().userId();
    Optional<String> asked = call.single("userId");
    if (asked.isPresent()) {
      if (!call.caller().admin() && !asked.get().equals(userId)) {
        throw new ApiProblem(
            ApiProblem.Type.FORBIDDEN,
            "Only admins may list another user's jobs; leave out userId to list yours.");
      }
      userId = asked.get();
    } else if (call.caller().admin()) {
      userId = null;
    }
    Set<JobStatus> statuses = statuses(call.query().getOrDefault("status", List.of()));
    int limit = call.wholeNumber("limit", HttpApi.DEFAULT_LIST_LIMIT, 1, HttpApi.MAX_LIST_LIMIT);
    Long before = call.cursorId("before", "a job id");
    JobQueries.JobPage page = queries.jobs(userId, statuses, limit, before);
    Map<Long, Waiting> waiting = queries.waiting(page.jobs());
    ObjectNode out = ApiJson.object();
    ArrayNode list = out.putArray("jobs");
    page.jobs()
        .forEach(
            j ->
                list.add(
                    ApiJson.job(
                        j,
                        Optional.ofNullable(waiting.get(j.id()))
                            .map(w -> JobAnswers.redact(w, call.caller())),
                        queries.ledger())));
    out.put(
        "next",
        page.nextBefore().map(next -> nextJobsPage(statuses, asked, limit, next)).orElse(null));
    return ApiJson.response(200, out);
  }

  /** The same list, from the job after the last one on this page. */
  private static String nextJobsPage(
      Set<JobStatus> statuses, Optional<String> userId, int limit, long before) {
    StringBuilder next = new StringBuilder("/jobs?");
    if (!statuses.isEmpty()) {
      next.append("status=")
          .append(statuses.stream().map(JobStatus::sql).sorted().collect(Collectors.joining(",")))
          .append('&');
    }
    userId.ifPresent(u -> next.append("userId=").append(QueryString.encode(u)).append('&'));
    return next.append("limit=").append(limit).append("&before=").append(before).toString();
  }

  private ApiResponse getJob(Call call) {
    return ApiJson.response(200, answers.json(answers.visibleJob(call), call.caller()));
  }

  private ApiResponse events(Call call) {
    JobView job = answers.visibleJob(call);
    ObjectNode out = ApiJson.object();
    out.put("jobId", job.id());
    ArrayNode list = out.putArray("events");
    Long after = call.cursorId("after", "an event id");
    JobQueries.EventPage page = queries.events(job.id(), after);
    page.events().forEach(e -> list.add(ApiJson.event(e)));
    out.put(
        "next",
        page.nextAfter().map(next -> "/jobs/" + job.id() + "/events?after=" + next).orElse(null));
    return ApiJson.response(200, out);
  }

  private ApiResponse cancel(Call call) {
    long id = call.jobId();
    BuildQueue.CancelAnswer answer =
        queue.cancelAnswering(id, call.caller().admin() ? null : call.caller().userId());
    JobTransitions.Cancelled result = answer.cancelled();
    if (result instanceof JobTransitions.Cancelled.NotFound) {
      throw JobAnswers.notFound(id);
    }
    // Read back by the request's last statement, which also settles the events it published.
    JobView job = answer.job().orElseThrow(() -> JobAnswers.notFound(id));
    if (result instanceof JobTransitions.Cancelled.Unchanged u && u.status().finished()) {
      throw new ApiProblem(
          ApiProblem.Type.CONFLICT,
          "Job "
              + id
              + " has already "
              + (u.status() == JobStatus.CANCELLED ? "been cancelled" : u.status().sql())
              + (job.finishedAt() == null ? "" : " (at " + ApiJson.time(job.finishedAt()) + ")")
              + "; there is nothing to cancel. Submit a new job to run it again.");
    }
    return ApiJson.response(200, answers.json(job, call.caller()));
  }

  private static Set<JobStatus> statuses(List<String> values) {
    Set<JobStatus> statuses = EnumSet.noneOf(JobStatus.class);
    for (String value : values) {
      for (String name : value.split(",", -1)) {
        String trimmed = name.trim();
        if (trimmed.isEmpty()) {
          continue;
        }
        JobStatus status =
            Arrays.stream(JobStatus.values())
                .filter(s -> s.sql().equals(trimmed))
                .findFirst()
                .orElseThrow(
                    () ->
                        ApiProblem.invalid(
                            "Unknown status \""
                                + JsonBodies.printable(trimmed)
                                + "\"; use one or more (comma-separated) of: "
                                + Arrays.stream(JobStatus.values())
                                    .map(JobStatus::sql)
                                    .collect(Collectors.joining(", "))
                                + "."));
        statuses.add(status);
      }
    }
    return statuses;
  }
}
