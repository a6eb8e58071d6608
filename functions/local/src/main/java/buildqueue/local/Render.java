package buildqueue.local;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;

/** Text a person reads: one line per job, a job's details and history, the lanes. Plain ASCII. */
final class Render {
  static final int BAR_WIDTH = 20;
  private static final DateTimeFormatter CLOCK =
      DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneId.systemDefault());

  private Render() {}

  /** The number of steps a job has, when its payload says (the demo kind's {@code steps}). */
  static Integer steps(JsonNode job) {
    JsonNode steps = job.path("payload").path("steps");
    if (steps.canConvertToInt() && steps.isIntegralNumber()) {
      return steps.asInt();
    }
    return "demo".equals(job.path("kind").asText()) ? 5 : null; // the demo kind's default
  }

  static String bar(int progress, Integer steps, boolean done) {
    if (done) {
      // A job that succeeded went all the way, whether or not it said how many steps there were.
      return "[" + "#".repeat(BAR_WIDTH) + "]";
    }
    if (steps == null || steps <= 0) {
      return "[" + " ".repeat(BAR_WIDTH) + "]";
    }
    int filled =
        Math.min(
            BAR_WIDTH, (int) Math.round((double) BAR_WIDTH * Math.min(progress, steps) / steps));
    return "[" + "#".repeat(filled) + ".".repeat(BAR_WIDTH - filled) + "]";
  }

  /** {@code #12 ada user:ada [##########..........] 50% running 4/8 note} */
  static String jobLine(JsonNode job) {
    return jobLine(job, note(job));
  }

  static String jobLine(JsonNode job, String note) {
    int progress = job.path("progress").asInt();
    Integer steps = steps(job);
    boolean done = succeeded(job);
    String pct =
        done
            ? "100%"
            : steps == null || steps == 0
                ? "   "
                : String.format("%3d%%", Math.min(100, 100 * progress / steps));
    String count = steps == null ? "step " + progress : progress + "/" + steps;
    return String.format(
            "#%-4d %-8s %-12s %s %s  %-10s %-6s %s",
            job.path("id").asLong(),
            clip(job.path("userId").asText(), 8),
            clip(job.path("lane").asText(), 12),
            bar(progress, steps, done),
            pct,
            job.path("status").asText(),
            count,
            note)
        .stripTrailing();
  }

  /** Why a job waits, how it ended badly, or how often it was interrupted. */
  static String note(JsonNode job) {
    String status = job.path("status").asText();
    if (!job.path("supersededBy").isNull() && !job.path("supersededBy").isMissingNode()) {
      return "superseded by job " + job.path("supersededBy").asLong();
    }
    if (!job.path("error").isNull() && !job.path("error").asText().isEmpty()) {
      return job.path("error").asText();
    }
    if ("queued".equals(status)) {
      String why = job.path("waitingFor").path("summary").asText("");
      String position =
          job.path("position").isNull() ? "" : "position " + job.path("position").asInt();
      return (position + (why.isEmpty() ? "" : "; " + why)).strip();
    }
    int attempts = job.path("attempts").asInt();
    return attempts > 1 ? "attempt " + attempts : "";
  }

  private static boolean succeeded(JsonNode job) {
    return "succeeded".equals(job.path("status").asText());
  }

  /**
   * {@code waitingFor.estimatedStart} as a person reads it, from {@code now}: "starts in about 4–7
   * min" (minutes rounded outwards), in hours past 90 minutes; empty when there is no estimate.
   */
  static String startsIn(JsonNode estimate, Instant now) {
    if (!estimate.path("from").isTextual() || !estimate.path("to").isTextual()) {
      return "";
    }
    long from =
        Math.max(
            0, Duration.between(now, Instant.parse(estimate.get("from").asText())).toSeconds());
    long to =
        Math.max(
            from, Duration.between(now, Instant.parse(estimate.get("to").asText())).toSeconds());
    if (to < 60) {
      return "starts within a minute";
    }
    long unit = to > 90 * 60 ? 3600 : 60;
    long a = from / unit;
    long b = (to + unit - 1) / unit;
    return "starts in about " + (a == b ? "" + a : a + "\u2013" + b) + (unit == 60 ? " min" : " h");
  }

  static String jobDetail(JsonNode job, JsonNode events) {
    StringBuilder out = new StringBuilder();
    out.append("job ")
        .append(job.path("id").asLong())
        .append(" (")
        .append(job.path("kind").asText())
        .append(") of ")
        .append(job.path("userId").asText())
        .append(": ")
        .append(job.path("status").asText())
        .append(" in lane ")
        .append(job.path("lane").asText())
        .append('\n');
    int progress = job.path("progress").asInt();
    Integer steps = steps(job);
    out.append("  progress    ")
        .append(bar(progress, steps, succeeded(job)))
        .append(' ')
        .append(steps == null ? "step " + progress : progress + "/" + steps)
        .append('\n');
    if (!job.path("position").isNull()) {
      out.append("  position    ").append(job.path("position").asInt()).append(" in its lane\n");
    }
    if (job.has("priority")) {
      out.append("  priority    ").append(job.path("priority").asText()).append('\n');
    }
    String waiting = job.path("waitingFor").path("summary").asText("");
    if (!waiting.isEmpty()) {
      out.append("  waiting     ").append(waiting).append('\n');
    }
    String startsIn = startsIn(job.path("waitingFor").path("estimatedStart"), Instant.now());
    if (!startsIn.isEmpty()) {
      out.append("  estimate    ").append(startsIn).append('\n');
    }
    out.append("  attempts    ")
        .append(job.path("attempts").asInt())
        .append(", interruptions without progress ")
        .append(job.path("recoveries").asInt())
        .append('\n');
    if (!job.path("workerId").isNull()) {
      out.append("  worker      ").append(job.path("workerId").asLong()).append('\n');
    }
    if (!job.path("error").isNull()) {
      out.append("  error       ").append(job.path("error").asText()).append('\n');
    }
    if (job.path("supersedeKey").isTextual()) {
      out.append("  supersedes  earlier jobs with key ")
          .append(job.path("supersedeKey").asText())
          .append(
              job.path("supersededBy").isNull()
                  ? ""
                  : "; superseded by job " + job.path("supersededBy").asLong())
          .append('\n');
    }
    out.append("  payload     ").append(job.path("payload")).append('\n');
    JsonNode log = job.path("log");
    if (log.isObject()) {
      out.append("  log         ")
          .append(log.path("totalBytes").asLong())
          .append(" bytes: buildqueue logs ")
          .append(job.path("id").asLong())
          .append(
              log.path("location").isTextual()
                  ? "; all of it in " + log.path("location").asText()
                  : "")
          .append('\n');
    }
    if (events != null && events.isArray() && !events.isEmpty()) {
      out.append("  history\n");
      for (JsonNode e : events) {
        out.append("    ")
            .append(time(e.path("at").asText()))
            .append("  ")
            .append(String.format("%-16s", e.path("type").asText()))
            .append(' ')
            .append(e.path("message").asText())
            .append('\n');
      }
    }
    return out.toString();
  }

  static String lanes(JsonNode lanes) {
    StringBuilder out = new StringBuilder();
    if (!lanes.isArray() || lanes.isEmpty()) {
      return "no lanes in use yet\n";
    }
    for (JsonNode lane : lanes) {
      out.append("lane ")
          .append(lane.path("lane").asText())
          .append(": ")
          .append(lane.path("capacity").asInt())
          .append(lane.path("capacity").asInt() == 1 ? " slot, " : " slots, ")
          .append(lane.path("queued").asInt())
          .append(" queued")
          .append(
              lane.path("paused").asBoolean()
                  ? ", PAUSED by "
                      + lane.path("pausedBy").asText()
                      + " at "
                      + time(lane.path("pausedAt").asText())
                      + ": nothing starts until it is resumed"
                  : "")
          .append('\n');
      for (JsonNode slot : lane.path("slots")) {
        JsonNode w = slot.path("worker");
        out.append("  ").append(String.format("%-16s", slot.path("slot").asText()));
        if (w.isNull() || w.isMissingNode()) {
          out.append("free\n");
          continue;
        }
        out.append("worker ")
            .append(w.path("id").asLong())
            .append(' ')
            .append(w.path("status").asText());
        if (!w.path("taskId").isNull()) {
          out.append(" (").append(w.path("taskId").asText()).append(')');
        }
        out.append(", lease ").append(w.path("leaseLeftSeconds").asLong()).append(" s left");
        JsonNode job = w.path("job");
        if (!job.isNull() && !job.isMissingNode()) {
          Integer steps = job.path("steps").isInt() ? job.path("steps").asInt() : null;
          out.append(", job ")
              .append(job.path("id").asLong())
              .append(" of ")
              .append(job.path("userId").asText())
              .append(' ')
              .append(bar(job.path("progress").asInt(), steps, false));
        }
        out.append('\n');
      }
      for (JsonNode q : lane.path("queuedJobs")) {
        out.append("  ")
            .append(String.format("%-16s", "queued " + q.path("position").asInt() + "."))
            .append("job ")
            .append(q.path("id").asLong())
            .append(" (")
            .append(q.path("kind").asText())
            .append(") of ")
            .append(q.path("userId").asText())
            .append(
                "normal".equals(q.path("priority").asText("normal"))
                    ? ""
                    : ", priority " + q.path("priority").asText())
            .append('\n');
      }
    }
    return out.toString();
  }

  private static String time(String iso) {
    try {
      return CLOCK.format(Instant.parse(iso));
    } catch (RuntimeException e) {
      return iso;
    }
  }

  private static String clip(String s, int width) {
    return s.length() <= width ? s : s.substring(0, width - 1) + "~";
  }
}
