package buildqueue.local;

import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.testing.RecordingJobContext;
import buildqueue.worker.exec.ProcessRunner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A stand-in worker process for platform tests: it runs one job, in the work directory the platform
 * gave it, whose program starts a background child; both write their pids to {@code pids-<worker
 * id>} in the data directory. Then it waits to be killed.
 */
public final class JobRunningWorker {
  private JobRunningWorker() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> env = System.getenv();
    Path work = Path.of(env.get(ProcessRunner.WORK_DIR));
    Path pids = work.getParent().resolveSibling("pids-" + env.get("BUILDQUEUE_WORKER_ID"));
    CommandKind kind =
        new CommandKind(
            "shell",
            List.of("sh", "-c", "sleep 1000 & echo $! >> \"$PIDS\"; echo $$ >> \"$PIDS\"; wait"),
            Duration.ofMinutes(5),
            PayloadSchema.ANY_OBJECT,
            Set.of(),
            Map.of("PIDS", pids.toString()),
            Duration.ofSeconds(10));
    ProcessRunner.forThisWorker(env).run(kind, RecordingJobContext.of("shell", "{}"));
  }
}
