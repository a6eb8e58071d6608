package buildqueue.bench;

import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.testing.InProcessPlatform.LaunchPlan;

/**
 * Our side of figure 3: U users, each with a dedicated lane (one worker at a time per user: the
 * per-user seriality the peers get from queueName / singletonKey), J no-op jobs each, in-process
 * workers that chain their lane's jobs. Jobs are enqueued first with the workers held before their
 * start, as the peers' jobs are added before their workers run; the time from releasing the workers
 * to the last worker's exit is what counts.
 */
final class OurThroughput {
  private static final Json EMPTY = new Json("{}");

  /**
   * One run: jobs, enqueue and processing time, commits PostgreSQL counted, CPU while processing.
   */
  record Result(int jobs, double enqueueMs, double processMs, long commits, CpuBusy.Share cpu) {
    double jobsPerSecond() {
      return jobs / (processMs / 1000.0);
    }
  }

  private final BenchPostgres pg;
  private final int poolSize;

  OurThroughput(BenchPostgres pg, int poolSize) {
    this.pg = pg;
    this.poolSize = poolSize;
  }

  Result run(int users, int perUser) {
    // Every user's jobs are submitted before they run: the per-user quota must hold them all.
    QueueConfig config =
        QueueConfig.defaults()
            .withMaxQueuedJobs(Math.max(perUser, QueueConfig.DEFAULT_MAX_QUEUED_JOBS));
    try (QueueRig rig = new QueueRig(pg, "bq_ours", config, poolSize)) {
      for (int u = 0; u < users; u++) {
        rig.queue.setDedicated("u" + u, true);
      }
      for (int u = 0; u < users; u++) {
        rig.platform.plan(LaunchPlan.normal().startLate());
      }
      long e0 = System.nanoTime();
      for (int j = 0; j < perUser; j++) {
        for (int u = 0; u < users; u++) {
          rig.queue.enqueue("u" + u, "noop", EMPTY, null);
        }
      }
      long e1 = System.nanoTime();
      CpuBusy.Snapshot cpu = CpuBusy.now();
      rig.platform.releaseHeldStarts();
      rig.awaitAllEnded();
      long e2 = System.nanoTime();
      CpuBusy.Share busy = CpuBusy.since(cpu);
      if (rig.platform.tasksStarted() != users) {
        throw new IllegalStateException(
            "expected one chaining worker per user, saw " + rig.platform.tasksStarted());
      }
      long commits = rig.closeAndCountCommits();
      return new Result(users * perUser, (e1 - e0) / 1e6, (e2 - e1) / 1e6, commits, busy);
    }
  }
}
