package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.db.Row;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class JobHistoryTest {

  @Test
  void the_history_of_a_job_interrupted_twice_then_finished_tells_its_story(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = h.queue.enqueue("alice", "noop", new Json("{}"), null).jobId();

    WorkerLaunch w1 = h.manual.lastLaunch();
    h.workers.start(w1.workerId(), w1.token());
    h.workers.progress(w1.workerId(), w1.token(), job, 3);
    h.queue.taskStopped("task-" + w1.workerId(), null, null, "OutOfMemoryError");

    WorkerLaunch w2 = h.manual.lastLaunch();
    h.workers.start(w2.workerId(), w2.token());
    h.queue.taskStopped("task-" + w2.workerId(), null, null, "Essential container in task exited");

    WorkerLaunch w3 = h.manual.lastLaunch();
    h.workers.start(w3.workerId(), w3.token());
    h.workers.end(w3.workerId(), w3.token(), job, JobStatus.SUCCEEDED, null);

    assertThat(h.events(job))
        .extracting(r -> r.string("type") + ": " + r.string("message"))
        .containsExactly(
            "enqueued: enqueued in lane shared",
            "dispatched: dispatched to worker 1 in slot shared#1 (attempt 1)",
            "started: started on worker 1",
            "interrupted: interrupted: progress 0→3, recoveries 0, stop reason OutOfMemoryError",
            "dispatched: dispatched to worker 2 in slot shared#1 (attempt 2)",
            // the exit bills its worker after the lane's new dispatch (docs/architecture.md §4.8)
            "cost: billed 60.000 s of worker 1 (on-demand, 1.000 vCPU, 2048 MiB)",
            "started: started on worker 2",
            "interrupted: interrupted: progress 3→3, recoveries 1, stop reason Essential container in task exited",
            "dispatched: dispatched to worker 3 in slot shared#1 (attempt 3)",
            "cost: billed 60.000 s of worker 2 (on-demand, 1.000 vCPU, 2048 MiB)",
            "started: started on worker 3",
            "succeeded: succeeded");
  }

  @Test
  void a_failed_job_says_why_in_its_history(TestDatabase tdb) {
    QueueHarness h = QueueHarness.manual(tdb);
    long job = h.queue.enqueue("alice", "noop", new Json("{}"), null).jobId();
    for (int i = 0; i < 4; i++) {
      WorkerLaunch w = h.manual.lastLaunch();
      WorkerLaunch started = h.workers.start(w.workerId(), w.token()).map(s -> w).orElseThrow();
      h.queue.taskStopped(null, started.workerId(), null, "Essential container in task exited");
    }
    List<Row> events = h.events(job);
    // The last worker's exit failed the job, then billed that worker: the cost event comes last.
    assertThat(events.get(events.size() - 1).string("type")).isEqualTo("cost");
    assertThat(events.get(events.size() - 2).string("message"))
        .isEqualTo(
            "failed: Build worker repeatedly exited without progress. Check worker logs and retry. "
                + "interrupted: progress 0→0, recoveries 4, stop reason Essential container in task exited");
  }
}
