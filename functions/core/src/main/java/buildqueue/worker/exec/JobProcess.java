package buildqueue.worker.exec;

import java.io.InputStream;
import java.time.Duration;

/**
 * A job's running program and every process it started (its session and process group). The {@link
 * ProcessRunner} watches and stops a job only through this, so a simulation can stand in for a real
 * process.
 */
public interface JobProcess {

  /** The program's process id (its session and process group id too). */
  long pid();

  /** The program's standard output; ends when no process of the job holds it open any more. */
  InputStream stdout();

  /** The program's standard error; as {@link #stdout()}. */
  InputStream stderr();

  /** Waits up to {@code max} for the program itself to exit; true once it has. */
  boolean awaitExit(Duration max) throws InterruptedException;

  /** How the program ended; only after {@link #awaitExit} returned true. */
  ProgramExit exit();

  /** Sends SIGTERM to every live process of the job; returns how many were sent it. */
  int terminate();

  /** Sends SIGKILL to every live process of the job, without waiting; returns how many. */
  int kill();

  /** How many processes of the job are alive, the program included (a zombie is not alive). */
  int remaining();
}
