package buildqueue.api;

import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobStatus;
import buildqueue.core.WorkerTransitions.AssignedJob;
import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestSeeds;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code waitingFor.estimatedStart} against a trace whose durations the test knows: a shared lane
 * of two slots, one user submitting short ({@code noop}, 60–150 s) and long ({@code quiet}, 200–400
 * s) jobs at random gaps and in bursts, workers that take 20–40 s to start, chain jobs for the
 * chain window and then exit. The test plays every worker on the simulated clock ({@link
 * QueueHarness#manual}); each job is asked for its estimate as it is submitted, through the API,
 * and its actual start is read when the trace has run.
 */
@ExtendWith(PostgresExtension.class)
class EstimatedStartTraceTest {
  private static final Caller ALICE = ApiFixture.ALICE;
  private static final int JOBS = 160;

  /** The first jobs only build the lane's history: their estimates have few samples. */
  private static final int WARM_UP = 30;

  /** A worker the test plays: when it starts, and the job it runs with when that job ends. */
  private static final class Worker {
    final WorkerLaunch launch;
    final Instant startsAt;
    boolean started;
    Long job;
    Instant jobEndsAt;

    Worker(WorkerLaunch launch, Instant startsAt) {
      this.launch = launch;
      this.startsAt = startsAt;
    }
  }

  record Estimate(long job, Instant from, Instant to) {}

  @Test
  void the_estimated_range_holds_the_actual_start_of_at_least_four_jobs_in_five(TestDatabase tdb) {
    long seed = TestSeeds.seed("EstimatedStartTraceTest", TestSeeds.SEED, 27L);
    SplittableRandom random = new SplittableRandom(seed);
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig().withSharedSlots(2), true)) {
      QueueHarness h = f.h;
      TreeMap<Instant, Integer> submissions = new TreeMap<>();
      Instant t = h.clock.now();
      for (int i = 0; i < JOBS; ) {
        t = t.plusSeconds(1 + random.nextInt(300));
        int burst = random.nextInt(6) == 0 ? 2 + random.nextInt(5) : 1;
        burst = Math.min(burst, JOBS - i);
        submissions.put(t, burst);
        i += burst;
      }
      Map<Long, Long> durationMs = new HashMap<>();
      Map<Long, Worker> workers = new HashMap<>();
      List<Estimate> estimates = new ArrayList<>();
      int launchesSeen = 0;
      int submitted = 0;
      while (!submissions.isEmpty() || !workers.isEmpty()) {
        Instant now = h.clock.now();
        while (!submissions.isEmpty() && !submissions.firstKey().isAfter(now)) {
          int burst = submissions.pollFirstEntry().getValue();
          for (int b = 0; b < burst; b++) {
            boolean long_ = random.nextBoolean();
            long id = f.submit(ALICE, long_ ? "quiet" : "noop", "{}");
            durationMs.put(
                id, 1000L * (long_ ? 200 + random.nextInt(201) : 60 + random.nextInt(91)));
            submitted++;
            JsonNode waiting = json(f.get("/jobs/" + id, ALICE)).get("waitingFor");
            if (submitted > WARM_UP && waiting != null && !waiting.isNull()) {
              JsonNode e = waiting.get("estimatedStart");
              assertThat(e.isNull()).as("job %d has an estimate", id).isFalse();
              assertThat(json(f.get("/jobs/" + id, ALICE)).get("waitingFor").get("estimatedStart"))
                  .as("the same lane state, the same estimate")
                  .isEqualTo(e);
              estimates.add(
                  new Estimate(
                      id,
                      Instant.parse(e.get("from").asText()),
                      Instant.parse(e.get("to").asText())));
            }
          }
        }
        List<WorkerLaunch> launches = h.manual.launches();
        for (; launchesSeen < launches.size(); launchesSeen++) {
          WorkerLaunch l = launches.get(launchesSeen);
          workers.put(l.workerId(), new Worker(l, now.plusSeconds(20 + random.nextInt(21))));
        }
        for (Worker w : new ArrayList<>(workers.values())) {
          if (!w.started && !w.startsAt.isAfter(now)) {
            w.started = true;
            Optional<AssignedJob> job =
                h.workers.start(w.launch.workerId(), w.launch.token()).orElseThrow().job();
            if (job.isPresent()) {
              run(w, job.get().id(), now, durationMs);
            } else {
              h.workers.drain(w.launch.workerId(), w.launch.token());
              exit(h, w, workers);
            }
          } else if (w.job != null && !w.jobEndsAt.isAfter(now)) {
            Ended ended =
                h.workers.end(
                    w.launch.workerId(), w.launch.token(), w.job, JobStatus.SUCCEEDED, null);
            if (ended instanceof Ended.Chained c) {
              run(w, c.next().id(), now, durationMs);
            } else {
              assertThat(ended).isInstanceOf(Ended.Drained.class);
              exit(h, w, workers);
            }
          }
        }
        if (h.manual.launches().size() > launchesSeen) {
          continue; // an exit launched a worker at this instant
        }
        Instant next = submissions.isEmpty() ? null : submissions.firstKey();
        for (Worker w : workers.values()) {
          Instant at = w.started ? w.jobEndsAt : w.startsAt;
          if (at != null && (next == null || at.isBefore(next))) {
            next = at;
          }
        }
        if (next == null) {
          break;
        }
        h.clock.set(next.isAfter(now) ? next : now);
      }

      int hits = 0;
      List<Long> widths = new ArrayList<>();
      for (Estimate e : estimates) {
        Instant started = h.job(e.job()).instant("started_at");
        assertThat(started).as("job %d ran", e.job()).isNotNull();
        if (!started.isBefore(e.from()) && !started.isAfter(e.to())) {
          hits++;
        }
        widths.add(Duration.between(e.from(), e.to()).toSeconds());
      }
      widths.sort(null);
      double hitRate = (double) hits / estimates.size();
      System.out.printf(
          "ETA trace (seed %d): %d jobs, %d estimated while queued, %d hits (%.1f %%);"
              + " range width median %d s, p90 %d s%n",
          seed,
          JOBS,
          estimates.size(),
          hits,
          100 * hitRate,
          widths.get(widths.size() / 2),
          widths.get((int) (widths.size() * 0.9)));
      assertThat(estimates.size()).as("jobs estimated while queued").isGreaterThan(60);
      assertThat(hitRate).as("share of actual starts inside the range").isGreaterThanOrEqualTo(0.8);
    }
  }

  private static void run(Worker w, long job, Instant now, Map<Long, Long> durationMs) {
    w.job = job;
    w.jobEndsAt = now.plusMillis(durationMs.get(job));
  }

  private static void exit(QueueHarness h, Worker w, Map<Long, Worker> workers) {
    workers.remove(w.launch.workerId());
    h.queue.taskStopped(
        ManualPlatform.taskIdOf(w.launch.workerId()),
        w.launch.workerId(),
        w.launch.token(),
        "Essential container in task exited");
  }
}
