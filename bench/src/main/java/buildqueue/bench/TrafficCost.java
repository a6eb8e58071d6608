package buildqueue.bench;

import buildqueue.core.BuildQueue;
import buildqueue.core.Ledger;
import buildqueue.core.QueueClock;
import buildqueue.core.QueueConfig;
import buildqueue.db.JdbcDatabase;
import buildqueue.db.Json;
import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobHandlers;
import buildqueue.worker.JobOutcome;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Figure 6: what a policy costs on realistic traffic. An arrival trace (model time) is replayed
 * time-scaled on {@link FargateModel} workers running the real worker loop against the real queue;
 * every job sleeps its duration. Reported: launches per job, billed worker-seconds per job-second,
 * and the wait from arrival to the job's start.
 */
final class TrafficCost {
  static final double SCALE = 200; // one model hour in 18 s
  static final int SHARED_SLOTS = 2;

  /** One arrival: when (model seconds from the start), who, and how long the job runs. */
  record Arrival(double at, String user, double seconds) {}

  /** A named trace and the users with a dedicated lane in it. */
  record Trace(String name, String description, List<Arrival> arrivals, List<String> dedicated) {}

  /** A policy: chain window and linger, in model time. */
  record Policy(String name, Duration chainWindow, Duration linger) {}

  /**
   * What one replay cost. {@code lightWaitP99} and {@code heavyWaitP50} split the waits by user:
   * {@link #HEAVY} against everyone else. {@code workers}: every task's timeline, which {@link
   * MoneyModel} prices.
   */
  record Result(
      double launchesPerJob,
      double billedPerJobSecond,
      double waitP50,
      double waitP99,
      double lightWaitP99,
      double heavyWaitP50,
      int jobs,
      List<MoneyModel.Worker> workers) {

    /** Dollars per job of this replay's workers, all on on-demand. */
    double onDemandPerJob() {
      return MoneyModel.onDemand(workers, LEDGER).dollars(LEDGER).doubleValue() / jobs;
    }

    /** Dollars per job of this replay's workers on Spot, reclaimed at {@code perHour}. */
    double spotPerJob(double perHour, double progressEvery, long seed) {
      return spot(perHour, progressEvery, seed).dollars(LEDGER).doubleValue() / jobs;
    }

    MoneyModel.Bill spot(double perHour, double progressEvery, long seed) {
      return MoneyModel.spotMean(workers, LEDGER, perHour, progressEvery, seed);
    }
  }

  /** Fargate's billing and published prices for the template's default worker (1 vCPU, 2 GiB). */
  static final Ledger LEDGER = Ledger.fargate();

  /** The user who builds far more than the others in the "heavy + light" traces. */
  static final String HEAVY = "heavy";

  /** The policy the shared lane's order is compared under: the reference's chain window. */
  static Policy orderPolicy() {
    return policies().get(1);
  }

  static List<Policy> policies() {
    return List.of(
        new Policy("one task per job (AWS Batch; chain window 0)", Duration.ZERO, Duration.ZERO),
        new Policy("reference: chain window 5 min", Duration.ofMinutes(5), Duration.ZERO),
        new Policy(
            "chain window 5 min + linger 30 s", Duration.ofMinutes(5), Duration.ofSeconds(30)),
        new Policy(
            "chain window 5 min + linger 60 s", Duration.ofMinutes(5), Duration.ofSeconds(60)));
  }

  /** Builds of 1–3 minutes, arriving over {@code hours} model hours. */
  static List<Trace> traces(double hours, long seed) {
    double horizon = hours * 3600;
    List<Trace> out = new ArrayList<>();

    Random r = new Random(seed);
    List<Arrival> steady = new ArrayList<>();
    for (double t = exp(r, 120); t < horizon; t += exp(r, 120)) {
      steady.add(new Arrival(t, "s" + r.nextInt(40), build(r)));
    }
    out.add(
        new Trace(
            "steady",
            "Poisson, one build per 2 min on average, 40 users in the shared lane",
            steady,
            List.of()));

    r = new Random(seed + 1);
    List<Arrival> bursty = new ArrayList<>();
    for (double burst = 300; burst < horizon; burst += 20 * 60) {
      for (int i = 0; i < 10; i++) {
        bursty.add(new Arrival(burst + r.nextDouble() * 60, "b" + r.nextInt(40), build(r)));
      }
    }
    bursty.sort((a, b) -> Double.compare(a.at(), b.at()));
    out.add(
        new Trace(
            "bursty",
            "10 builds within a minute every 20 min, 40 users in the shared lane",
            bursty,
            List.of()));

    r = new Random(seed + 2);
    List<Arrival> heavy = new ArrayList<>();
    for (double t = exp(r, 180); t < horizon; t += exp(r, 180)) {
      heavy.add(new Arrival(t, "heavy", build(r)));
    }
    for (double t = exp(r, 300); t < horizon; t += exp(r, 300)) {
      heavy.add(new Arrival(t, "l" + r.nextInt(30), build(r)));
    }
    heavy.sort((a, b) -> Double.compare(a.at(), b.at()));
    out.add(
        new Trace(
            "heavy + light",
            "one user with a dedicated lane building every 3 min on average, 30 light users sharing one build per 5 min",
            heavy,
            List.of(HEAVY)));
    return out;
  }

  /**
   * The trace on which the shared lane's order matters: the heavy user shares the lane and rebuilds
   * everything at once (12 builds within a minute every 20 min), while 30 light users share one
   * build per 5 min on average.
   */
  static Trace heavySharing(double hours, long seed) {
    double horizon = hours * 3600;
    Random r = new Random(seed + 3);
    List<Arrival> arrivals = new ArrayList<>();
    for (double burst = 120; burst < horizon; burst += 20 * 60) {
      for (int i = 0; i < 12; i++) {
        arrivals.add(new Arrival(burst + r.nextDouble() * 60, HEAVY, build(r)));
      }
    }
    for (double t = exp(r, 300); t < horizon; t += exp(r, 300)) {
      arrivals.add(new Arrival(t, "l" + r.nextInt(30), build(r)));
    }
    arrivals.sort((a, b) -> Double.compare(a.at(), b.at()));
    return new Trace(
        "heavy + light, sharing",
        "the heavy user in the shared lane, 12 builds within a minute every 20 min;"
            + " 30 light users sharing one build per 5 min",
        arrivals,
        List.of());
  }

  private static double exp(Random r, double mean) {
    return -Math.log(1 - r.nextDouble()) * mean;
  }

  private static double build(Random r) {
    return 60 + r.nextDouble() * 120;
  }

  private final BenchPostgres pg;

  TrafficCost(BenchPostgres pg) {
    this.pg = pg;
  }

  Result replay(Trace trace, Policy policy, long seed) throws InterruptedException {
    return replay(trace, policy, QueueConfig.SharedOrder.FAIR, seed);
  }

  Result replay(Trace trace, Policy policy, QueueConfig.SharedOrder order, long seed)
      throws InterruptedException {
    Map<Long, Long> startedAt = new ConcurrentHashMap<>();
    JobHandler sleep =
        new JobHandler() {
          @Override
          public String kind() {
            return "sleep";
          }

          @Override
          public JobOutcome run(JobContext context) throws InterruptedException {
            startedAt.putIfAbsent(context.jobId(), System.nanoTime());
            Thread.sleep(context.payload().path("ms").asLong());
            return JobOutcome.succeeded();
          }
        };
    QueueConfig config =
        QueueConfig.defaults()
            .withSharedSlots(SHARED_SLOTS)
            .withChainWindow(scaled(policy.chainWindow()))
            .withLinger(scaled(policy.linger()))
            .withLease(
                scaled(Duration.ofMinutes(60)),
                scaled(Duration.ofMinutes(5)),
                scaled(Duration.ofSeconds(60)))
            .withLivenessInterval(scaled(Duration.ofSeconds(5)))
            .withLaunchGrace(scaled(Duration.ofSeconds(60)))
            .withSharedOrder(order);
    String database = pg.createQueueDatabase("bq_cost");
    FargateModel model = null;
    try (HikariDataSource ds = pg.pool(database, 16)) {
      JdbcDatabase db = new JdbcDatabase(ds);
      model = new FargateModel(db, config, JobHandlers.of(sleep), SCALE, seed);
      BuildQueue queue = new BuildQueue(db, model, config, QueueClock.DATABASE);
      model.onStopped(queue::taskStopped);
      for (String user : trace.dedicated()) {
        queue.setDedicated(user, true);
      }
      Thread ticker = ticker(queue);
      Map<Long, Long> arrivedAt = new ConcurrentHashMap<>();
      Map<Long, String> userOf = new ConcurrentHashMap<>();
      double jobSeconds = 0;
      long t0 = System.nanoTime();
      for (Arrival a : trace.arrivals()) {
        long due = t0 + (long) (a.at() / SCALE * 1e9);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        long ms = Math.round(a.seconds() / SCALE * 1000);
        long now = System.nanoTime();
        long id = queue.enqueue(a.user(), "sleep", new Json("{\"ms\": " + ms + "}"), null).jobId();
        arrivedAt.put(id, now);
        userOf.put(id, a.user());
        jobSeconds += a.seconds();
      }
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      while (!(startedAt.size() == arrivedAt.size()
          && model.idle()
          && db.query("select 1 from build_job where finished_at is null limit 1").isEmpty())) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "trace " + trace.name() + " under " + policy.name() + " did not drain in 5 minutes");
        }
        Thread.sleep(20);
      }
      ticker.interrupt();
      ticker.join();
      List<Double> waits = new ArrayList<>();
      List<Double> light = new ArrayList<>();
      List<Double> heavyWaits = new ArrayList<>();
      for (Map.Entry<Long, Long> e : arrivedAt.entrySet()) {
        double wait = (startedAt.get(e.getKey()) - e.getValue()) / 1e9 * SCALE;
        waits.add(wait);
        (HEAVY.equals(userOf.get(e.getKey())) ? heavyWaits : light).add(wait);
      }
      Stats w = new Stats(waits);
      List<MoneyModel.Worker> workers = model.workers();
      double billed = MoneyModel.onDemand(workers, LEDGER).onDemandSeconds();
      return new Result(
          (double) model.launches() / arrivedAt.size(),
          billed / jobSeconds,
          w.percentile(50),
          w.percentile(99),
          light.isEmpty() ? Double.NaN : new Stats(light).percentile(99),
          heavyWaits.isEmpty() ? Double.NaN : new Stats(heavyWaits).percentile(50),
          arrivedAt.size(),
          workers);
    } finally {
      if (model != null) {
        model.shutdown();
      }
      pg.drop(database);
    }
  }

  /** The scheduled tick, once a model minute. */
  private static Thread ticker(BuildQueue queue) {
    Thread t =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                try {
                  Thread.sleep(Math.round(60 / SCALE * 1000));
                  queue.tick();
                } catch (InterruptedException e) {
                  return;
                } catch (RuntimeException e) {
                  System.err.println("   tick failed: " + e);
                }
              }
            },
            "model-tick");
    t.setDaemon(true);
    t.start();
    return t;
  }

  static Duration scaled(Duration model) {
    return Duration.ofNanos((long) (model.toNanos() / SCALE));
  }
}
