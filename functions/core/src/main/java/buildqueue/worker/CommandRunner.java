package buildqueue.worker;

import buildqueue.kinds.CommandKind;

/**
 * Runs one job of a {@link CommandKind} as a program on this worker, from start to its outcome: it
 * watches the program, reports through the {@link JobContext} (progress, log, follow-ups, the
 * cancel check), and leaves no process of the job behind when it returns.
 */
@FunctionalInterface
public interface CommandRunner {
  JobOutcome run(CommandKind kind, JobContext context) throws InterruptedException;
}
