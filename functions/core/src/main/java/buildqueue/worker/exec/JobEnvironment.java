package buildqueue.worker.exec;

import buildqueue.kinds.CommandKind;
import buildqueue.worker.JobContext;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A job program's whole environment, built from an allowlist and never inherited: the worker's own
 * environment holds its token, its database credentials and, on Fargate, the variables that lead to
 * its task role's AWS credentials ({@code AWS_CONTAINER_CREDENTIALS_*}). Later entries win: the
 * allowlisted worker variables, then {@code TMPDIR} and {@code HOME} (the attempt's own
 * directories: a job's tools write to HOME, and the worker's would be shared by every job it runs,
 * or, in the worker image, not writable), then the kind's {@code env}, then the {@code
 * BUILDQUEUE_*} variables, which a kind cannot override.
 */
public final class JobEnvironment {
  /** The worker's variables a program gets, when the worker has them. */
  public static final List<String> FROM_WORKER = List.of("PATH", "LANG", "LC_ALL", "TZ", "USER");

  /** The search path when the worker has none. */
  static final String DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

  public static final String JOB_ID = "BUILDQUEUE_JOB_ID";
  public static final String USER_ID = "BUILDQUEUE_USER_ID";
  public static final String JOB_KIND = "BUILDQUEUE_JOB_KIND";
  public static final String ATTEMPT = "BUILDQUEUE_ATTEMPT";
  public static final String PROGRESS = "BUILDQUEUE_PROGRESS";
  public static final String PAYLOAD = "BUILDQUEUE_PAYLOAD";
  public static final String CONTROL = "BUILDQUEUE_CONTROL";
  public static final String TRACEPARENT = "TRACEPARENT";

  /** The attempt's empty artifacts directory: its files are published if the program exits 0. */
  public static final String ARTIFACTS = "BUILDQUEUE_ARTIFACTS";

  /** A follow-up's copy of the artifacts its payload's {@code artifactsOf} names; set only then. */
  public static final String PARENT_ARTIFACTS = "BUILDQUEUE_PARENT_ARTIFACTS";

  private JobEnvironment() {}

  public static Map<String, String> of(
      Map<String, String> worker, CommandKind kind, JobContext context, JobDirectory dir) {
    Map<String, String> env = new LinkedHashMap<>();
    for (String name : FROM_WORKER) {
      String value = worker.get(name);
      if (value != null) {
        env.put(name, value);
      }
    }
    env.putIfAbsent("PATH", DEFAULT_PATH);
    env.put("TMPDIR", dir.tmp().toString());
    env.put("HOME", dir.home().toString());
    env.putAll(kind.env());
    env.put(JOB_ID, Long.toString(context.jobId()));
    env.put(USER_ID, context.userId());
    env.put(JOB_KIND, context.kind());
    env.put(ATTEMPT, Integer.toString(context.attempt()));
    env.put(PROGRESS, Integer.toString(context.progress()));
    env.put(PAYLOAD, dir.payload().toString());
    env.put(CONTROL, dir.control().toString());
    env.put(ARTIFACTS, dir.artifacts().toString());
    if (java.nio.file.Files.isDirectory(dir.parentArtifacts())) {
      env.put(PARENT_ARTIFACTS, dir.parentArtifacts().toString());
    }
    // The submitter's trace with a span of this attempt's own: the program's spans are children.
    context.traceparent().ifPresent(tc -> env.put(TRACEPARENT, tc.newSpan().header()));
    return env;
  }
}
