package buildqueue.local;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * Removes the files of jobs and workers the queue no longer has: the queue's housekeeping deletes
 * finished jobs and exited workers after the retention ({@code QueueConfig#retention}), and this
 * deletes what the local runtime kept of them on disk, {@code jobs/job-<id>.log} and {@code
 * workers/worker-<id>.log}. A worker's job directories are gone already: they are deleted when each
 * attempt ends, and a dead worker's when its exit is seen. A file is deleted only when its row is
 * gone, so nothing of a job that can still be read through the API is removed.
 */
final class DiskSweep {
  private static final System.Logger LOG = System.getLogger(DiskSweep.class.getName());
  private static final Pattern JOB_LOG = Pattern.compile("job-([0-9]{1,18})\\.log");
  private static final Pattern WORKER_LOG = Pattern.compile("worker-([0-9]{1,18})\\.log");

  /** Ids asked about in one statement. */
  private static final int BATCH = 1000;

  private static final String GONE_JOBS =
      "select unnest(?::bigint[]) as id except select id from build_job";
  private static final String GONE_WORKERS =
      "select unnest(?::bigint[]) as id except select id from build_worker";

  private final DataSource db;
  private final LocalProcessPlatform.Directories dirs;

  DiskSweep(DataSource db, LocalProcessPlatform.Directories dirs) {
    this.db = db;
    this.dirs = dirs;
  }

  /** What a sweep deleted. */
  record Swept(int jobLogs, int workerLogs) {}

  /**
   * Deletes the job logs of deleted jobs and the logs of deleted workers that are not running here
   * ({@code live}: a worker's row is deleted only once it has exited, but a file is never taken
   * from under a process that may still write it).
   */
  Swept sweep(Set<Long> live) {
    int jobs = sweep(dirs.jobLogs(), JOB_LOG, GONE_JOBS, Set.of());
    int workers = sweep(dirs.workerLogs(), WORKER_LOG, GONE_WORKERS, live);
    if (jobs + workers > 0) {
      LOG.log(
          Level.INFO,
          "removed the logs of {0} job(s) and {1} worker(s) past the retention",
          jobs,
          workers);
    }
    return new Swept(jobs, workers);
  }

  private int sweep(Path dir, Pattern name, String gone, Set<Long> keep) {
    Map<Long, Path> files = new HashMap<>();
    try (Stream<Path> entries = Files.list(dir)) {
      entries.forEach(
          p -> {
            Matcher m = name.matcher(p.getFileName().toString());
            if (m.matches() && !keep.contains(Long.valueOf(m.group(1)))) {
              files.put(Long.valueOf(m.group(1)), p);
            }
          });
    } catch (IOException e) {
      return 0; // no such directory yet
    }
    List<Long> ids = new ArrayList<>(files.keySet());
    int deleted = 0;
    for (int from = 0; from < ids.size(); from += BATCH) {
      for (long id : goneOf(gone, ids.subList(from, Math.min(ids.size(), from + BATCH)))) {
        try {
          if (Files.deleteIfExists(files.get(id))) {
            deleted++;
          }
        } catch (IOException e) {
          LOG.log(Level.WARNING, "could not remove {0}: {1}", files.get(id), e.getMessage());
        }
      }
    }
    return deleted;
  }

  private List<Long> goneOf(String sql, List<Long> ids) {
    List<Long> gone = new ArrayList<>();
    try (Connection c = db.getConnection();
        PreparedStatement s = c.prepareStatement(sql)) {
      Array array = c.createArrayOf("bigint", ids.toArray());
      s.setArray(1, array);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          gone.add(r.getLong(1));
        }
      }
    } catch (SQLException e) {
      // The next sweep asks again; until then the files stay.
      LOG.log(Level.WARNING, "could not read which jobs and workers are gone: {0}", e.getMessage());
    }
    return gone;
  }
}
