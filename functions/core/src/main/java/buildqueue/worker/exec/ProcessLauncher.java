package buildqueue.worker.exec;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Starts a job's program. The real one ({@link SetsidLauncher}) runs it in a session of its own
 * through {@code setsid}; a simulation supplies a launcher of simulated processes.
 */
@FunctionalInterface
public interface ProcessLauncher {

  /**
   * Starts the program; it runs until it exits or is killed through the returned {@link
   * JobProcess}.
   *
   * @throws IOException the program could not be started (the message says why)
   */
  JobProcess start(Spec spec) throws IOException;

  /**
   * Readies an attempt's directory for the program before {@link #start}: a launcher that runs
   * programs as another user hands it the parts the program writes. Nothing by default.
   */
  default void prepare(JobDirectory dir) throws IOException {}

  /**
   * What to start.
   *
   * @param command the program and its arguments, as the kind gives them
   * @param workDir the directory it runs in
   * @param environment its whole environment: nothing else is inherited
   * @param sessionFile where the program's session is recorded before the program runs, so that a
   *     platform can kill what a dead worker's job left running ({@link JobSession#readFrom})
   */
  record Spec(
      List<String> command, Path workDir, Map<String, String> environment, Path sessionFile) {
    public Spec {
      command = List.copyOf(command);
      environment = Map.copyOf(environment);
    }
  }
}
