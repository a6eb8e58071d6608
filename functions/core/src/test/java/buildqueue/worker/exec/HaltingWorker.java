package buildqueue.worker.exec;

import buildqueue.core.MonotonicClock;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.testing.Procs;
import buildqueue.testing.RecordingJobContext;
import buildqueue.worker.JobLog;
import buildqueue.worker.WorkerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A stand-in worker process for {@link HaltTest}: it runs one job whose program starts a background
 * child, and once both have written their pids it halts as the hard deadline would, through {@link
 * WorkerProcess#HALT}. Arguments: the base directory for job directories, the file the job writes
 * its pids to.
 */
public final class HaltingWorker {
  private HaltingWorker() {}

  public static void main(String[] args) throws Exception {
    Path base = Path.of(args[0]);
    Path pids = Path.of(args[1]);
    ProcessRunner runner =
        new ProcessRunner(
            base,
            System.getenv(),
            SetsidLauncher.find(System.getenv()),
            MonotonicClock.SYSTEM,
            ProcessRunner.Limits.defaults());
    CommandKind kind =
        new CommandKind(
            "shell",
            List.of("sh", "-c", "sleep 1000 & echo $! >> \"$PIDS\"; echo $$ >> \"$PIDS\"; wait"),
            Duration.ofMinutes(5),
            PayloadSchema.ANY_OBJECT,
            Set.of(),
            Map.of("PIDS", pids.toString()),
            Duration.ofSeconds(10));
    RecordingJobContext context = RecordingJobContext.of("shell", "{}");
    Thread job =
        new Thread(
            () -> {
              try {
                runner.run(kind, context);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "job");
    job.setDaemon(true);
    job.start();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while ((Procs.pidsIn(pids).size() < 2 || !context.logged(JobLog.Stream.WORKER, "started:"))
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    WorkerProcess.HALT.kill("the test halts this worker as its hard deadline would");
  }
}
