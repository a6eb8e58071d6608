package buildqueue.bench;

import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.platform.ForwardingWorkerPlatform;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import buildqueue.testing.GateHandler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Figure 5: from a worker's stop evidence reaching the queue to the launch request for the next job
 * of its lane. One lane, jobs queued behind a held worker, chain window 0 so every job needs a new
 * worker: each exit is followed by exactly one dispatch and launch.
 */
final class SlotTurnaround {
  private static final Json EMPTY = new Json("{}");
  private final BenchPostgres pg;

  SlotTurnaround(BenchPostgres pg) {
    this.pg = pg;
  }

  /** Turnarounds of one run, in milliseconds. */
  List<Double> run(int jobs) throws InterruptedException {
    List<Long> evidence = new ArrayList<>();
    List<Long> launches = new ArrayList<>();
    QueueConfig config = QueueConfig.defaults().withChainWindow(Duration.ZERO);
    try (QueueRig rig = new QueueRig(pg, "bq_turn", config, 8, p -> new Timed(p, launches))) {
      rig.platform.onStopped(
          (taskId, workerId, token, reason) -> {
            synchronized (launches) {
              evidence.add(System.nanoTime());
            }
            rig.queue.taskStopped(taskId, workerId, token, reason);
          });
      long gateJob = rig.queue.enqueue("u1", GateHandler.KIND, EMPTY, null).jobId();
      rig.gate.awaitEntered(gateJob);
      for (int i = 0; i < jobs; i++) {
        rig.queue.enqueue("u1", "noop", EMPTY, null);
      }
      rig.gate.open(gateJob);
      rig.awaitAllEnded();
    }
    List<Double> out = new ArrayList<>();
    // launches[0] was the gate job's; launch k+1 follows evidence k.
    for (int k = 0; k + 1 < launches.size() && k < evidence.size(); k++) {
      out.add((launches.get(k + 1) - evidence.get(k)) / 1e6);
    }
    if (out.size() != jobs) {
      throw new IllegalStateException("expected " + jobs + " turnarounds, measured " + out.size());
    }
    return out;
  }

  /** Stamps each launch request before passing it on. */
  private static final class Timed extends ForwardingWorkerPlatform {
    private final List<Long> launches;

    Timed(WorkerPlatform delegate, List<Long> launches) {
      super(delegate);
      this.launches = launches;
    }

    @Override
    public LaunchOutcome launch(WorkerLaunch launch) {
      synchronized (launches) {
        launches.add(System.nanoTime());
      }
      return delegate.launch(launch);
    }
  }
}
