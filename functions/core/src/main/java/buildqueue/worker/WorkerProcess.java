package buildqueue.worker;

/** How the worker ends itself when it must stop at once (its deadline, a demo crash). */
public interface WorkerProcess {

  /**
   * Ends the worker now, with no cleanup: nothing of it may write to the queue afterwards. A real
   * process halts; an in-process worker's thread stops writing and unwinds. Does not return when
   * called from the worker's own thread.
   */
  void kill(String why);

  /**
   * A real process: {@link Runtime#halt}, so no shutdown hook or finally block runs. The programs
   * of its running jobs are sent SIGKILL first ({@link RunningJobs}): they run in sessions of their
   * own and would otherwise outlive it.
   */
  WorkerProcess HALT =
      why -> {
        System.err.println("buildqueue worker: halting: " + why);
        System.err.flush();
        RunningJobs.killAllNow();
        Runtime.getRuntime().halt(137);
      };
}
