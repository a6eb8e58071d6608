package buildqueue.kinds;

import buildqueue.worker.JobOutcome;

/** The {@link CommandRunner}s a process can be given. */
public final class CommandRunners {
  /** What a job of a command kind fails with while no worker in this build can run programs. */
  public static final String UNAVAILABLE_MESSAGE =
      "This worker cannot run programs yet (no command runner in this build); the kind is defined in the kind"
          + " catalogue, but only the built-in demo kind runs. Deploy a build with the process runner, then resubmit.";

  /**
   * For a process that checks submissions against command kinds but never runs them (the API). A
   * call means the wiring is wrong, so it fails loudly.
   */
  public static final CommandRunner API_ONLY = (kind, context) -> {
    throw new IllegalStateException("the API validates kind \"" + kind.name() + "\" but never runs its jobs; workers do");
  };

  private CommandRunners() {}

  /**
   * The runner a worker process (local {@code WorkerMain}, {@code FargateWorkerMain}) uses for the
   * command kinds of its catalogue. The one place where the process runner is wired in; until then
   * every job of a command kind fails with {@link #UNAVAILABLE_MESSAGE}.
   */
  public static CommandRunner forThisProcess() {
    return (kind, context) -> JobOutcome.failed(UNAVAILABLE_MESSAGE);
  }
}
