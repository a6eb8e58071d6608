package buildqueue.bench;

import buildqueue.core.BuildQueue;
import buildqueue.core.JobStatus;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.core.WorkerTransitions;
import buildqueue.db.JdbcDatabase;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.platform.LaunchOutcome;
import buildqueue.platform.TaskState;
import buildqueue.platform.WorkerLaunch;
import buildqueue.platform.WorkerPlatform;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Figure 4: dispatch, chaining, tick and enqueue latency with N queued jobs over 10,000 users (100
 * of them with a dedicated lane, the rest in {@code shared}, which takes turns by user: the
 * default). Workers are only held slots here: the platform starts nothing and reports every task
 * running, so a tick checks every live worker; the chaining worker is started and ended by hand.
 */
final class Scale {
  static final int USERS = 10_000;
  static final int DEDICATED = 100;
  private static final Json EMPTY = new Json("{}");

  private static final String USERS_SQL =
      """
      insert into build_user (user_id, dedicated_worker)
      select 'u' || i, i < :dedicated from generate_series(0, :users - 1) i
      """;

  private static final String JOBS_SQL =
      """
      insert into build_job (user_id, kind, payload, lane, created_at)
      select 'u' || u, 'noop', '{}', case when u < :dedicated then 'user:u' || u else 'shared' end, now()
      from (
        -- The first jobs give every dedicated user two, so at both sizes every lane still has a
        -- queued job after its slot is filled: the tick walks the same lanes, only the jobs differ.
        select i, case when i <= 2 * :dedicated then i % :dedicated else i % :users end as u
        from generate_series(1, :jobs) i
      ) j
      """;

  /**
   * Each shared-lane user's place in the turns, as V004 gives the jobs it finds queued: the bulk
   * insert bypasses the enqueue statement that would otherwise keep it.
   */
  private static final String TURNS_SQL =
      """
      insert into build_lane_turn (lane, user_id, turn)
      select lane, user_id, min(id) - 4611686018427387904 from build_job
      where status = 'queued' and lane = 'shared'
      group by lane, user_id
      """;

  private static final String FREE_SHARED_SLOT =
      """
      update build_worker set status = 'exited', exited_at = now(), exit_reason = 'bench: slot freed'
      where lane = 'shared' and status <> 'exited'
      """;

  /** Latencies of one size, in milliseconds, per batch. */
  record Result(
      List<Double> dispatchMs,
      List<Double> chainMs,
      List<Double> tickMs,
      List<Double> enqueueMs,
      double bulkInsertSeconds,
      List<ScalePlans.Plan> plans) {}

  private final BenchPostgres pg;

  Scale(BenchPostgres pg) {
    this.pg = pg;
  }

  Result run(int jobs, int batches, int perBatch) {
    String database = pg.createQueueDatabase("bq_scale");
    try (HikariDataSource ds = pg.pool(database, 4)) {
      JdbcDatabase db = new JdbcDatabase(ds);
      long t0 = System.nanoTime();
      db.update(USERS_SQL, Params.of("users", USERS, "dedicated", DEDICATED));
      db.update(JOBS_SQL, Params.of("users", USERS, "dedicated", DEDICATED, "jobs", jobs));
      db.update(TURNS_SQL);
      // What autovacuum does to a table after a bulk of inserts: statistics, and the visibility map
      // that lets index-only scans skip the heap.
      db.update("vacuum analyze");
      double bulk = (System.nanoTime() - t0) / 1e9;

      QueueConfig config = QueueConfig.defaults().withLivenessInterval(Duration.ZERO);
      HeldSlots slots = new HeldSlots();
      BuildQueue queue = new BuildQueue(db, slots, config, QueueClock.DATABASE);
      queue.tick(); // fills every lane's slot: the state a busy queue is in

      List<Double> dispatch = new ArrayList<>();
      List<Double> tick = new ArrayList<>();
      List<Double> enqueue = new ArrayList<>();
      for (int b = 0; b < batches; b++) {
        List<Double> d = new ArrayList<>();
        List<Double> t = new ArrayList<>();
        List<Double> e = new ArrayList<>();
        for (int i = 0; i < perBatch; i++) {
          db.update(FREE_SHARED_SLOT);
          long s0 = System.nanoTime();
          int dispatched = queue.dispatchLane("shared").size();
          d.add((System.nanoTime() - s0) / 1e6);
          if (dispatched != 1) {
            throw new IllegalStateException(
                "dispatch of the shared lane found nothing to do with " + jobs + " jobs");
          }
          long s1 = System.nanoTime();
          queue.tick();
          t.add((System.nanoTime() - s1) / 1e6);
          long s2 = System.nanoTime();
          queue.enqueue("u" + (DEDICATED + i), "noop", EMPTY, null);
          e.add((System.nanoTime() - s2) / 1e6);
        }
        dispatch.add(new Stats(d).median());
        tick.add(new Stats(t).median());
        enqueue.add(new Stats(e).median());
      }
      db.update(FREE_SHARED_SLOT);
      List<ScalePlans.Plan> plans = new ArrayList<>(ScalePlans.explain(db));

      // Fair chaining: one live worker of the shared lane ends job after job, each end taking the
      // next job by the turns in the same statement.
      db.update(FREE_SHARED_SLOT);
      queue.dispatchLane("shared");
      WorkerLaunch worker = slots.last();
      WorkerTransitions workers = new WorkerTransitions(db, config, QueueClock.DATABASE);
      long job =
          workers.start(worker.workerId(), worker.token()).orElseThrow().job().orElseThrow().id();
      List<Double> chain = new ArrayList<>();
      for (int b = 0; b < batches; b++) {
        List<Double> c = new ArrayList<>();
        for (int i = 0; i < perBatch; i++) {
          long s0 = System.nanoTime();
          WorkerTransitions.Ended ended =
              workers.end(worker.workerId(), worker.token(), job, JobStatus.SUCCEEDED, null);
          c.add((System.nanoTime() - s0) / 1e6);
          if (!(ended instanceof WorkerTransitions.Ended.Chained next)) {
            throw new IllegalStateException(
                "the shared lane's worker chained nothing with " + jobs + " jobs: " + ended);
          }
          job = next.next().id();
        }
        chain.add(new Stats(c).median());
      }
      plans.add(ScalePlans.explainChaining(db, config, worker.workerId(), worker.token(), job));
      db.update(FREE_SHARED_SLOT);
      return new Result(dispatch, chain, tick, enqueue, bulk, plans);
    } finally {
      pg.drop(database);
    }
  }

  /** Slots held by tasks that never run; every task reports running. */
  private static final class HeldSlots implements WorkerPlatform {
    private final Map<String, Boolean> tasks = new HashMap<>();
    private WorkerLaunch last;

    @Override
    public synchronized LaunchOutcome launch(WorkerLaunch launch) {
      String id = "held-" + launch.workerId();
      tasks.put(id, true);
      last = launch;
      return new LaunchOutcome.Started(id);
    }

    synchronized WorkerLaunch last() {
      return last;
    }

    @Override
    public synchronized Map<String, TaskState> check(Collection<String> taskIds) {
      Map<String, TaskState> states = new HashMap<>();
      for (String id : taskIds) {
        states.put(id, new TaskState.Running());
      }
      return states;
    }

    @Override
    public boolean canCheck(String taskId) {
      return true;
    }

    @Override
    public void stop(String taskId, String reason) {}
  }
}
