package buildqueue.bench;

import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.testing.GateHandler;
import java.util.ArrayList;
import java.util.List;

/**
 * Figure 1: statements sent through the {@code Database} port, and commits PostgreSQL counted, for
 * one job on a fresh worker and for one job chained onto a running worker.
 */
final class StatementsPerJob {
  /** One run's per-job figures. */
  record Run(
      double freshStatements,
      double freshCommits,
      double chainedStatements,
      double chainedCommits) {}

  private static final Json EMPTY = new Json("{}");
  private final BenchPostgres pg;
  private final int freshJobs;
  private final int chainedJobs;

  StatementsPerJob(BenchPostgres pg, int freshJobs, int chainedJobs) {
    this.pg = pg;
    this.freshJobs = freshJobs;
    this.chainedJobs = chainedJobs;
  }

  List<Run> measure(int runs) throws InterruptedException {
    List<Run> out = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      long idle = idleCommits();
      double[] fresh = fresh(idle);
      double[] chained = chained(idle, fresh);
      out.add(new Run(fresh[0], fresh[1], chained[0], chained[1]));
    }
    return out;
  }

  /**
   * Commits counted for a pool that opens and closes and does nothing: subtracted from each run.
   */
  private long idleCommits() {
    try (QueueRig rig = new QueueRig(pg, "bq_idle", QueueConfig.defaults(), 4)) {
      return rig.closeAndCountCommits();
    }
  }

  /**
   * Jobs one after another in one lane, each on its own worker: the worker has exited before the
   * next.
   */
  private double[] fresh(long idle) {
    try (QueueRig rig = new QueueRig(pg, "bq_fresh", QueueConfig.defaults(), 4)) {
      for (int i = 0; i < freshJobs; i++) {
        rig.queue.enqueue("u1", "noop", EMPTY, null);
        rig.awaitAllEnded();
      }
      long statements = rig.db.statements();
      long commits = rig.closeAndCountCommits() - idle;
      return new double[] {(double) statements / freshJobs, (double) commits / freshJobs};
    }
  }

  /**
   * A worker held by a gate job while N jobs queue behind it, then released: it chains all N. The
   * per-job figure is the total less one fresh job's cost, over N.
   */
  private double[] chained(long idle, double[] fresh) throws InterruptedException {
    try (QueueRig rig = new QueueRig(pg, "bq_chain", QueueConfig.defaults(), 4)) {
      long gateJob = rig.queue.enqueue("u1", GateHandler.KIND, EMPTY, null).jobId();
      rig.gate.awaitEntered(gateJob);
      for (int i = 0; i < chainedJobs; i++) {
        rig.queue.enqueue("u1", "noop", EMPTY, null);
      }
      rig.gate.open(gateJob);
      rig.awaitAllEnded();
      if (rig.platform.tasksStarted() != 1) {
        throw new IllegalStateException(
            "expected one worker to chain every job, saw " + rig.platform.tasksStarted());
      }
      long statements = rig.db.statements();
      long commits = rig.closeAndCountCommits() - idle;
      return new double[] {
        (statements - fresh[0]) / chainedJobs, (commits - fresh[1]) / chainedJobs
      };
    }
  }
}
