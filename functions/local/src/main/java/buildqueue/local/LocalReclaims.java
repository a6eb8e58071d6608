package buildqueue.local;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.platform.Capacity;
import buildqueue.platform.SpotReclaims;
import java.time.Duration;
import java.util.Optional;

/**
 * Simulated Fargate Spot reclaims for the local server ({@code bq reclaim}, {@code POST
 * /workers/{id}/reclaim}): what AWS does to a Spot task, done to a worker process. Only a worker
 * recorded on Spot is reclaimed, as AWS reclaims only Spot tasks; the worker's row says, since a
 * worker adopted from a previous server carries nothing else.
 *
 * @param grace what a reclaimed worker gets between SIGTERM and SIGKILL ({@code serve
 *     --reclaim-grace})
 */
record LocalReclaims(Database db, LocalProcessPlatform platform, Duration grace)
    implements SpotReclaims {

  private static final String WORKER =
      """
      select status, capacity, task_id from build_worker where id = :id
      """;

  @Override
  public Outcome reclaim(long workerId) {
    Optional<Row> found = db.queryOptional(WORKER, Params.of("id", workerId));
    if (found.isEmpty()) {
      return new Outcome.NoSuchWorker(workerId);
    }
    Row w = found.get();
    String status = w.string("status");
    String taskId = w.string("task_id");
    if (status.equals("exited")) {
      return new Outcome.Refused(workerId, "Worker " + workerId + " has exited.");
    }
    if (!w.string("capacity").equals(Capacity.SPOT.label())) {
      return new Outcome.Refused(
          workerId,
          "Worker "
              + workerId
              + " runs on on-demand, and only Spot workers are reclaimed: give its kind"
              + " \"capacity\": \"spot\" in the catalogue, or start the server with"
              + " --default-capacity spot (a job reclaimed 3 times runs on on-demand).");
    }
    if (taskId == null) {
      return new Outcome.Refused(
          workerId, "Worker " + workerId + " is still launching; reclaim it once it runs.");
    }
    if (!platform.reclaim(taskId, grace)) {
      return new Outcome.Refused(
          workerId,
          "Worker "
              + workerId
              + " ("
              + taskId
              + ") is not a process running on this host: its exit may not be recorded yet.");
    }
    return new Outcome.Reclaimed(workerId, taskId, grace);
  }
}
