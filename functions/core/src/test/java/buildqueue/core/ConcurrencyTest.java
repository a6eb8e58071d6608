package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.db.Row;
import buildqueue.testing.Await;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import buildqueue.testing.TestSeeds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Many threads enqueue, dispatch, deliver (duplicate and stale) stop events and tick at once, with
 * real in-process workers running jobs; a checker reads the database all the while.
 */
@ExtendWith(PostgresExtension.class)
class ConcurrencyTest {
  private static final int THREADS = 8;

  /**
   * 10 rounds (240 jobs) by default, 25 under {@code -Dbuildqueue.soak=true} ({@link TestSeeds}).
   */
  private static final int ROUNDS = TestSeeds.size("concurrency", "concurrency.rounds", 10, 25);

  private static final int OPS_PER_THREAD_PER_ROUND = 6;

  @Test
  void concurrent_callers_never_put_two_live_workers_in_a_slot_or_a_job_on_two_workers(
      TestDatabase tdb) throws Exception {
    try (QueueHarness h = QueueHarness.open(tdb, QueueHarness.testConfig().withSharedSlots(2))) {
      h.queue.setDedicated("dedicated-0", true);
      h.queue.setDedicated("dedicated-1", true);
      // Workers take a moment to exit after their last statement, as processes do: long enough for
      // a worker launched into a slot freed too early to start while the old one still runs.
      h.platform.exitTime(Duration.ofMillis(20));
      ConcurrentLinkedQueue<String> found = new ConcurrentLinkedQueue<>();
      AtomicBoolean done = new AtomicBoolean();
      AtomicInteger checks = new AtomicInteger();
      Thread checker =
          new Thread(
              () -> {
                while (!done.get()) {
                  check(tdb, found);
                  checks.incrementAndGet();
                }
              });
      checker.start();

      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      AtomicInteger ops = new AtomicInteger();
      List<Long> jobs = java.util.Collections.synchronizedList(new ArrayList<>());
      for (int round = 0; round < ROUNDS; round++) {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
          Random random = new Random(round * 31L + t);
          futures.add(
              pool.submit(
                  () -> {
                    start.await();
                    for (int i = 0; i < OPS_PER_THREAD_PER_ROUND; i++) {
                      operate(h, random, jobs);
                      ops.incrementAndGet();
                    }
                    return null;
                  }));
        }
        start.countDown();
        for (Future<?> f : futures) {
          f.get(60, TimeUnit.SECONDS);
        }
      }
      pool.shutdown();
      // Before the drain as well: a slot freed under live workers may keep its jobs from finishing.
      assertThat(h.platform.slotOverlaps()).as("two live workers in one slot").isEmpty();

      // Drain: ticks recover anything whose evidence raced, until every job has finished.
      Await.until(
          "every job to finish",
          Duration.ofSeconds(60),
          () -> {
            h.clock.advance(h.config.livenessInterval());
            h.queue.tick();
            return tdb.jdbc().query("select id from build_job where finished_at is null").isEmpty();
          });
      done.set(true);
      checker.join();
      check(tdb, found);

      System.out.printf(
          "concurrency: %d threads x %d rounds, %d operations, %d jobs, %d database checks%n",
          THREADS, ROUNDS, ops.get(), jobs.size(), checks.get());
      assertThat(found).isEmpty();
      assertThat(h.platform.slotOverlaps()).as("two live workers in one slot").isEmpty();
      assertThat(h.maxConcurrentRunsOfOneJob()).isEqualTo(1);
      assertThat(tdb.jdbc().query("select status, count(*) as n from build_job group by status"))
          .extracting(r -> r.string("status"))
          .containsOnly("succeeded");
      assertThat(jobs)
          .hasSize(
              (int)
                  tdb.jdbc()
                      .query("select count(*) as n from build_job")
                      .get(0)
                      .longValue("n")
                      .longValue());
    }
  }

  @Test
  void a_slot_is_taken_again_only_once_its_worker_is_gone(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      h.queue.setDedicated("alice", true);
      h.platform.holdExits();
      long first = h.submit("alice", "noop", "{}");
      h.awaitStatus(first, "succeeded");
      long second = h.submit("alice", "noop", "{}");
      assertThat(h.platform.tasksStarted())
          .as("workers started while the first is still exiting")
          .isEqualTo(1);
      h.platform.releaseHeldExits();
      h.awaitStatus(second, "succeeded");
      h.awaitQuiet();
      assertThat(h.platform.slotOverlaps()).as("two live workers in one slot").isEmpty();
      assertThat(h.platform.tasksStarted()).isEqualTo(2);
    }
  }

  @Test
  void a_job_enqueued_while_the_lanes_worker_exits_is_dispatched_without_waiting_for_the_tick(
      TestDatabase tdb) throws Exception {
    QueueHarness h = QueueHarness.manual(tdb);
    int rounds = 60;
    for (int round = 0; round < rounds; round++) {
      long previous = h.queue.enqueue("u", "noop", new Json("{}"), null).jobId();
      var w = h.manual.lastLaunch();
      if (h.status(previous).equals("dispatched")) {
        h.workers.start(w.workerId(), w.token());
      }
      h.workers.end(w.workerId(), w.token(), previous, buildqueue.core.JobStatus.SUCCEEDED, null);
      CountDownLatch go = new CountDownLatch(1);
      var enqueue =
          java.util.concurrent.CompletableFuture.supplyAsync(
              () -> {
                await(go);
                return h.queue.enqueue("v", "noop", new Json("{}"), null).jobId();
              });
      var exit =
          java.util.concurrent.CompletableFuture.runAsync(
              () -> {
                await(go);
                h.queue.taskStopped(null, w.workerId(), w.token(), "exited");
              });
      go.countDown();
      long next = enqueue.get(30, TimeUnit.SECONDS);
      exit.get(30, TimeUnit.SECONDS);
      assertThat(h.status(next)).as("round " + round).isEqualTo("dispatched");
      // Finish it so the next round starts from an idle lane.
      var nw = h.manual.lastLaunch();
      h.workers.start(nw.workerId(), nw.token());
      h.workers.end(nw.workerId(), nw.token(), next, buildqueue.core.JobStatus.SUCCEEDED, null);
      h.queue.taskStopped(null, nw.workerId(), nw.token(), "exited");
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void operate(QueueHarness h, Random random, List<Long> jobs) {
    int op = random.nextInt(10);
    if (op < 5) {
      String user =
          random.nextInt(4) == 0 ? "dedicated-" + random.nextInt(2) : "user-" + random.nextInt(20);
      jobs.add(h.queue.enqueue(user, "noop", new Json("{}"), null).jobId());
    } else if (op < 7) {
      h.queue.dispatchLane(random.nextBoolean() ? "shared" : "user:dedicated-" + random.nextInt(2));
    } else if (op < 9) {
      // A stop event for some past worker: usually a duplicate or stale one by now.
      List<Row> exited =
          h.testDb
              .jdbc()
              .query(
                  "select id, task_id from build_worker where status = 'exited' order by random() limit 1");
      if (!exited.isEmpty()) {
        h.queue.taskStopped(
            exited.get(0).string("task_id"), exited.get(0).longValue("id"), null, "duplicate");
      }
    } else {
      h.queue.tick();
    }
  }

  /**
   * What the database must never show. Two live workers in one slot it cannot show (the unique
   * index on live slots refuses the second row): the platform watches for that ({@code
   * slotOverlaps}).
   */
  private static void check(TestDatabase tdb, ConcurrentLinkedQueue<String> found) {
    for (Row r :
        tdb.jdbc()
            .query(
                """
        select j.id from build_job j join build_worker w on w.id = j.worker_id
        where j.status in ('dispatched', 'running') and w.status = 'exited'""")) {
      found.add("job " + r.longValue("id") + " on an exited worker");
    }
    for (Row r :
        tdb.jdbc()
            .query(
                """
        select w.id, count(*) as n from build_job j join build_worker w on w.id = j.worker_id
        where j.status in ('dispatched', 'running') group by w.id having count(*) > 1""")) {
      found.add("worker " + r.longValue("id") + " holds two unfinished jobs");
    }
  }
}
