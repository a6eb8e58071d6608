package buildqueue.worker;

import buildqueue.BuildQueueException;
import buildqueue.kinds.CommandKind;
import buildqueue.worker.exec.ProcessRunner;
import java.util.Map;

/** The {@link CommandRunner} a worker process is given. */
public final class CommandRunners {

  private CommandRunners() {}

  /**
   * The runner a worker process (local {@code WorkerMain}, {@code FargateWorkerMain}) uses for the
   * command kinds of its catalogue: {@link ProcessRunner}, from the worker's environment. It is
   * built at the first job that needs it, so a worker whose jobs are all {@code demo} starts where
   * programs cannot run; a worker that cannot run programs fails each such job saying why.
   */
  public static CommandRunner forThisProcess(Map<String, String> env) {
    return new CommandRunner() {
      private CommandRunner runner;
      private String unavailable;

      @Override
      public synchronized JobOutcome run(CommandKind kind, JobContext context)
          throws InterruptedException {
        if (runner == null && unavailable == null) {
          try {
            runner = ProcessRunner.forThisWorker(env);
          } catch (BuildQueueException e) {
            unavailable = e.getMessage();
          }
        }
        if (runner == null) {
          return JobOutcome.failed(
              "This worker cannot run programs: "
                  + unavailable
                  + ". Fix the worker image, then resubmit.");
        }
        return runner.run(kind, context);
      }
    };
  }
}
