package buildqueue.local;

import buildqueue.api.ApiRequest;
import buildqueue.api.ApiResponse;
import buildqueue.api.Caller;
import buildqueue.api.HttpApi;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code serve --demo}: a mix of jobs from several users that shows what the queue does (a
 * dedicated lane beside the shared one, FIFO, a crash that resumes from its progress, a crash loop
 * that fails with a clear message, a job that fails on purpose, a real build script with its log),
 * and one live line per job until all have finished. It goes through the same API code as any
 * client.
 */
final class Demo {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> FINISHED = Set.of("succeeded", "failed", "cancelled");
  private static final Caller OPERATOR = Caller.admin("demo");

  /** One demo job: whose it is, what it is meant to show, its kind and payload. */
  record DemoJob(String user, String shows, String kind, String payload) {
    DemoJob(String user, String shows, String payload) {
      this(user, shows, "demo", payload);
    }
  }

  static final String DEDICATED_USER = "ada";

  static List<DemoJob> mix(int stepMillis) {
    String ms = "\"stepMillis\": " + stepMillis;
    return List.of(
        new DemoJob("ada", "dedicated worker", "{\"steps\": 12, " + ms + "}"),
        new DemoJob("bob", "shared lane", "{\"steps\": 10, " + ms + "}"),
        new DemoJob(
            "cy",
            "crashes at step 4 once, resumes from 3",
            "{\"steps\": 8, " + ms + ", \"crashAtStep\": 4, \"crashAttempts\": 1}"),
        new DemoJob("ada", "dedicated worker, 2nd job", "{\"steps\": 6, " + ms + "}"),
        new DemoJob(
            "dee",
            "crashes before any progress, every time",
            "{\"steps\": 6, " + ms + ", \"crashAtStep\": 1}"),
        new DemoJob(
            "eve", "fails on purpose at step 5", "{\"steps\": 8, " + ms + ", \"failAtStep\": 5}"),
        new DemoJob("bob", "shared lane, 2nd job", "{\"steps\": 6, " + ms + "}"),
        new DemoJob(
            "fay",
            "a real build: a shell script's log (bq logs ID)",
            DemoKinds.KIND,
            "{\"pages\": 6}"),
        new DemoJob(
            "gus",
            "a script that fails with its own message",
            DemoKinds.KIND,
            "{\"pages\": 5, \"failAtPage\": 3}"));
  }

  private final HttpApi api;
  private final PrintStream out;
  private final boolean live;

  /**
   * @param live redraw the lines in place (a terminal); otherwise print a line when a job changes
   */
  Demo(HttpApi api, PrintStream out, boolean live) {
    this.api = api;
    this.out = out;
    this.live = live;
  }

  /**
   * Gives {@value #DEDICATED_USER} a dedicated worker and submits the mix; returns job id → what it
   * shows.
   */
  Map<Long, String> submit(List<DemoJob> jobs, String runId) {
    call("PUT", "/users/" + DEDICATED_USER, "{\"dedicatedWorker\": true}", OPERATOR);
    Map<Long, String> submitted = new LinkedHashMap<>();
    for (int i = 0; i < jobs.size(); i++) {
      DemoJob j = jobs.get(i);
      String body =
          "{\"kind\": \""
              + j.kind()
              + "\", \"payload\": "
              + j.payload()
              + ", \"idempotencyKey\": \"demo-"
              + runId
              + "-"
              + (i + 1)
              + "\"}";
      JsonNode job = call("POST", "/jobs", body, Caller.user(j.user()));
      submitted.put(job.path("id").asLong(), j.shows());
    }
    return submitted;
  }

  /** Prints the jobs' lines until every one has finished; returns their final states. */
  List<JsonNode> watch(Map<Long, String> jobs, Duration poll) throws InterruptedException {
    List<String> shown = new ArrayList<>();
    while (true) {
      List<JsonNode> states = new ArrayList<>();
      List<String> lines = new ArrayList<>();
      for (Map.Entry<Long, String> j : jobs.entrySet()) {
        JsonNode job = call("GET", "/jobs/" + j.getKey(), null, OPERATOR);
        states.add(job);
        String error = job.path("error").isNull() ? "" : job.path("error").asText();
        lines.add(fit(Render.jobLine(job, error.isEmpty() ? j.getValue() : error)));
      }
      print(shown, lines);
      shown = lines;
      if (states.stream().allMatch(s -> FINISHED.contains(s.path("status").asText()))) {
        return states;
      }
      Thread.sleep(poll.toMillis());
    }
  }

  private void print(List<String> before, List<String> now) {
    if (live) {
      StringBuilder b = new StringBuilder();
      if (!before.isEmpty()) {
        b.append("\033[").append(before.size()).append('A'); // back to the first line
      }
      now.forEach(line -> b.append("\033[2K").append(line).append('\n'));
      out.print(b);
    } else {
      // A log, not a screen: a job's line again whenever it changed.
      for (int i = 0; i < now.size(); i++) {
        if (i >= before.size() || !before.get(i).equals(now.get(i))) {
          out.println(now.get(i));
        }
      }
    }
    out.flush();
  }

  private static String fit(String line) {
    int width = 140;
    try {
      width = Math.max(60, Integer.parseInt(System.getenv().getOrDefault("COLUMNS", "140")) - 1);
    } catch (NumberFormatException ignored) {
      // keep the default
    }
    return line.length() <= width ? line : line.substring(0, width - 1) + "~";
  }

  private JsonNode call(String method, String target, String body, Caller caller) {
    ApiRequest request =
        body == null
            ? ApiRequest.of(method, target, caller)
            : ApiRequest.json(method, target, body, caller);
    ApiResponse response = api.handle(request);
    try {
      JsonNode json = JSON.readTree(response.body());
      if (response.status() >= 300) {
        throw new IllegalStateException(
            "demo request "
                + method
                + " "
                + target
                + " failed: "
                + response.status()
                + " "
                + json.path("detail").asText());
      }
      return json;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
