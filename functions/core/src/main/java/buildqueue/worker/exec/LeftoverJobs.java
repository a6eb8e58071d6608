package buildqueue.worker.exec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * What the jobs of a dead worker left behind in its work directory: job directories and, where a
 * job's program was still running when the worker died, its session. A worker that dies without
 * cleanup (SIGKILL, an out-of-memory kill) cannot end its job's programs, which run in sessions of
 * their own and are reparented, not killed; the platform that saw the worker die does it here, from
 * the {@code session} file each job directory keeps, before it reports the worker gone.
 */
public final class LeftoverJobs {
  private LeftoverJobs() {}

  /**
   * @param directories job directories found
   * @param killed processes that were alive and were sent SIGKILL
   * @param survivors processes still alive after {@code patience} (stuck in the kernel)
   */
  public record Cleared(int directories, int killed, int survivors) {
    public boolean any() {
      return directories > 0;
    }
  }

  /**
   * Kills every process of every job session recorded under {@code workDir} (a dead worker's {@code
   * BUILDQUEUE_WORK_DIR}), waits up to {@code patience} for them to be gone, then deletes the
   * directory. Only for a worker whose process is gone: a live worker's jobs are its own.
   */
  public static Cleared clear(Path workDir, Duration patience) throws InterruptedException {
    if (!Files.isDirectory(workDir)) {
      return new Cleared(0, 0, 0);
    }
    List<Path> jobs;
    try (var found = JobDirectory.under(workDir)) {
      jobs = found.toList();
    } catch (IOException e) {
      jobs = List.of();
    }
    int killed = 0;
    int survivors = 0;
    for (Path job : jobs) {
      Optional<JobSession> session = JobSession.readFrom(job.resolve(JobDirectory.SESSION_FILE));
      if (session.isPresent()) {
        killed += session.get().members().size();
        survivors += session.get().killAll(patience);
      }
    }
    JobDirectory.deleteTree(workDir);
    return new Cleared(jobs.size(), killed, survivors);
  }
}
