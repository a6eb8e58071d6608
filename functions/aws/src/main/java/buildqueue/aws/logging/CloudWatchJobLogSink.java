package buildqueue.aws.logging;

import buildqueue.aws.lambda.Lazy;
import buildqueue.worker.JobLog;
import buildqueue.worker.JobLogSink;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.PrintStream;
import java.io.StringWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Where a Fargate worker sends its jobs' output: each line as one JSON line on stdout, which the
 * {@code awslogs} driver ships to CloudWatch Logs as one event: {@code time, component: "job",
 * workerId, jobId, stream (stdout|stderr|worker), message}. Logs Insights picks out one job with
 * {@code filter jobId = 42}. A job's record names the log group and stream ({@link
 * TaskLogLocation}), or nothing when the task metadata cannot say.
 */
public final class CloudWatchJobLogSink implements JobLogSink {
  private static final JsonFactory JSON = new JsonFactory();

  private final PrintStream out;
  private final String workerId;
  private final Supplier<Optional<TaskLogLocation>> location;

  public CloudWatchJobLogSink(
      PrintStream out, String workerId, Supplier<Optional<TaskLogLocation>> location) {
    this.out = out;
    this.workerId = workerId;
    this.location = Lazy.of(location);
  }

  /** The sink of this task: lines to {@code out}, the location from the task metadata endpoint. */
  public static CloudWatchJobLogSink forThisTask(
      Function<String, String> env, PrintStream out, long workerId) {
    String uri = env.apply(TaskLogLocation.METADATA_URI);
    return new CloudWatchJobLogSink(
        out, Long.toString(workerId), () -> TaskLogLocation.lookUp(uri));
  }

  @Override
  public void line(long jobId, JobLog.Stream stream, String text) {
    StringWriter w = new StringWriter(text.length() + 128);
    try (JsonGenerator g = JSON.createGenerator(w)) {
      g.writeStartObject();
      g.writeStringField("time", Instant.now().toString());
      g.writeStringField("component", "job");
      g.writeStringField("workerId", workerId);
      g.writeNumberField("jobId", jobId);
      g.writeStringField("stream", stream.name().toLowerCase(Locale.ROOT));
      g.writeStringField("message", text);
      g.writeEndObject();
    } catch (IOException e) {
      return; // a StringWriter does not fail; a job's log is never a reason to fail it
    }
    // One print of a whole line: PrintStream is synchronized, so lines of two streams never mix.
    out.print(w.append('\n'));
    out.flush();
  }

  @Override
  public String location(long jobId) {
    return location.get().map(l -> l.describe(jobId)).orElse(null);
  }
}
