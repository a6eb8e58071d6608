package buildqueue.aws.worker;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.lambda.AwsServices;
import buildqueue.aws.logging.CloudWatchJobLogSink;
import buildqueue.aws.logging.JsonLogging;
import buildqueue.aws.metrics.Metrics;
import buildqueue.core.QueueClock;
import buildqueue.db.Database;
import buildqueue.worker.CommandRunner;
import buildqueue.worker.CommandRunners;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.WorkerLoop;
import buildqueue.worker.WorkerProcess;
import buildqueue.worker.WorkerStop;
import buildqueue.worker.exec.Subreaper;
import java.io.PrintStream;
import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.function.Function;

/**
 * The Fargate task's entry point: one worker, one life. Reads its identity (set per task by the
 * launch's container overrides), the database settings and the kind catalogue from the environment,
 * runs the {@link WorkerLoop} with {@code demo} and the catalogue's kinds (their output to stdout
 * as JSON lines, {@link CloudWatchJobLogSink}), and exits 0 when the loop is done, whatever it
 * found (a refused start or being fenced off are outcomes, not faults); 1 on a fault, 2 on bad
 * settings or a catalogue that cannot be used. The slot is freed by the ECS STOPPED event of this
 * exit, never by the worker itself.
 *
 * <p>SIGTERM (StopTask, a Spot reclaim, a scale-in) stops it gracefully ({@link WorkerStop}): its
 * job's program gets SIGTERM and the kind's grace, cut to the container's stop timeout ({@value
 * AwsSettings#STOP_TIMEOUT_SECONDS}) less a reserve; the job goes back to the head of its lane with
 * its progress and log tail; the worker exits (143) before ECS's SIGKILL.
 */
public final class FargateWorkerMain {
  static final int OK = 0;
  static final int FAULT = 1;
  static final int BAD_SETTINGS = 2;

  private static final System.Logger LOG = System.getLogger(FargateWorkerMain.class.getName());

  private FargateWorkerMain() {}

  public static void main(String[] args) {
    String workerId = System.getenv(AwsSettings.WORKER_ID);
    JsonLogging.install(
        Map.of("component", "worker", "workerId", workerId == null ? "?" : workerId));
    // The task is the outer boundary (ECS ends all of it); within it, no job's process outlives its
    // attempt.
    Subreaper.enable();
    int code =
        run(
            System::getenv,
            WorkerProcess.HALT,
            CommandRunners.forThisProcess(System.getenv()),
            System.out);
    System.exit(code);
  }

  /**
   * The worker's life; returns the exit code. {@code process} is how the deadline kills it; {@code
   * runner} runs the catalogue's kinds; {@code stdout} takes the metrics and the jobs' output,
   * which the awslogs driver ships.
   */
  static int run(
      Function<String, String> env,
      WorkerProcess process,
      CommandRunner runner,
      PrintStream stdout) {
    long startNanos = System.nanoTime();
    AwsSettings settings;
    JobHandlers handlers;
    try {
      settings = AwsSettings.load(Component.WORKER, env);
      handlers = JobHandlers.forCatalogue(settings.kindCatalogue(), runner);
    } catch (RuntimeException e) {
      LOG.log(Level.ERROR, "cannot start: " + e.getMessage());
      return BAD_SETTINGS;
    }
    AwsSettings.WorkerIdentity me = settings.worker();
    Metrics metrics =
        new Metrics(settings.metricsNamespace(), Component.WORKER.label())
            .property("workerId", me.workerId());
    WorkerStop stop = new WorkerStop(settings.stopTimeout());
    // Closed last: once it is, a SIGTERM'd JVM ends, so the metrics are flushed before.
    try (WorkerStop.Hook sigterm = stop.onSigterm()) {
      try {
        Database db = AwsServices.database(settings);
        WorkerLoop loop =
            new WorkerLoop(
                    db,
                    settings.queue(),
                    QueueClock.DATABASE,
                    handlers,
                    process,
                    WorkerLoop.Listener.NONE)
                .withLogSink(CloudWatchJobLogSink.forThisTask(env, stdout, me.workerId()))
                .withStop(stop);
        // The artifacts bucket, when the stack has one: the task role may only put under jobs/.
        loop = AwsServices.artifactStore(settings).map(loop::withArtifacts).orElse(loop);
        WorkerLoop.Exit exit = loop.run(me.workerId(), me.token());
        LOG.log(Level.INFO, "worker {0} done: {1}", me.workerId(), exit);
        metrics.property("exit", exit.name());
        return OK;
      } catch (RuntimeException | Error e) {
        LOG.log(
            Level.ERROR,
            "worker " + me.workerId() + " failed; its job is recovered when the stop event arrives",
            e);
        metrics.property("exit", "FAULT");
        return FAULT;
      } finally {
        metrics.observe(
            Metrics.WORKER_RUN_SECONDS,
            (System.nanoTime() - startNanos) / 1e9,
            Metrics.Unit.SECONDS);
        metrics.flush(stdout);
      }
    }
  }
}
