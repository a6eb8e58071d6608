package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Idle at zero (V014): the tick disarms its schedule when it finds no work, the first enqueue after
 * idle arms it once, and whatever the interleaving of enqueues and disarming ticks, the schedule is
 * on whenever the queue holds work.
 */
@ExtendWith(PostgresExtension.class)
class TickArmingTest {

  /**
   * The schedule as a switch, counting the calls that turned it. Each call takes effect after a
   * random delay of up to 3 ms, as an EventBridge call takes its time on the network: a call made
   * first may land second, which is the race the order of the tick's steps must survive.
   */
  static class Switch implements TickSchedule {
    volatile boolean on = true;
    final AtomicInteger arms = new AtomicInteger();
    final AtomicInteger disarms = new AtomicInteger();

    @Override
    public void arm() {
      latency();
      arms.incrementAndGet();
      on = true;
    }

    @Override
    public void disarm() {
      latency();
      disarms.incrementAndGet();
      on = false;
    }

    private static void latency() {
      java.util.concurrent.locks.LockSupport.parkNanos(
          java.util.concurrent.ThreadLocalRandom.current().nextLong(3_000_000));
    }
  }

  private static BuildQueue queue(QueueHarness h, TickSchedule schedule) {
    return new BuildQueue(
        h.db, h.manual, h.config, h.clock, BuildQueue.ExitListener.NONE, null, schedule);
  }

  private static boolean armedInDatabase(QueueHarness h) {
    return h.testDb
        .jdbc()
        .query("select armed from build_tick_arm", buildqueue.db.Params.none())
        .get(0)
        .bool("armed");
  }

  /** Nothing queued, no worker, every event published: what an idle queue looks like. */
  private static void publishAll(QueueHarness h) {
    h.testDb
        .jdbc()
        .update(
            "update build_job_event set published_at = now() where published_at is null",
            buildqueue.db.Params.none());
  }

  @Test
  void an_idle_tick_disarms_and_only_the_first_enqueue_after_it_arms(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      Switch schedule = new Switch();
      BuildQueue queue = queue(h, schedule);

      h.db.reset();
      queue.tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);

      assertThat(schedule.on).isFalse();
      assertThat(armedInDatabase(h)).isFalse();
      assertThat(h.db.statements()).as("the survey and the disarm").isEqualTo(2);

      // Lanes of their own, full after the first job: each enqueue is one statement.
      h.manual.nextOutcomes();
      for (int i = 0; i < 3; i++) {
        queue.enqueue("u" + i, "noop", new Json("{}"), "k" + i);
      }

      assertThat(schedule.arms.get())
          .as("only the enqueue that found it disarmed arms")
          .isEqualTo(1);
      assertThat(schedule.on).isTrue();
      assertThat(armedInDatabase(h)).isTrue();

      queue.tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);
      assertThat(schedule.disarms.get()).as("a tick that finds work leaves it on").isEqualTo(1);
      assertThat(schedule.on).isTrue();
    }
  }

  @Test
  void a_fallback_tick_that_finds_work_arms_what_a_lost_arm_left_off(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      TickSchedule lost =
          new TickSchedule() {
            @Override
            public void arm() {
              throw new IllegalStateException("EnableRule timed out");
            }

            @Override
            public void disarm() {}
          };
      BuildQueue queue = queue(h, lost);
      queue.tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);
      long id = queue.enqueue("u1", "noop", new Json("{}"), "k1").jobId();
      assertThat(h.status(id)).as("the lost arm fails nothing").isNotNull();

      Switch schedule = new Switch();
      schedule.on = false;
      queue(h, schedule)
          .tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.FALLBACK);

      assertThat(schedule.on).isTrue();
      assertThat(schedule.arms.get()).isEqualTo(1);
    }
  }

  @Test
  void the_disarm_refuses_while_a_writer_is_in_flight_and_leaves_the_schedule_on(TestDatabase tdb)
      throws Exception {
    try (QueueHarness h = QueueHarness.manual(tdb);
        Connection writer = tdb.dataSource().getConnection()) {
      Switch schedule = new Switch();
      BuildQueue queue = queue(h, schedule);
      writer.setAutoCommit(false);
      try (Statement s = writer.createStatement()) {
        // A writer that has not committed: its job is invisible, but it holds the table.
        s.execute("update build_job set lane = lane where false");
      }

      queue.tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);

      assertThat(schedule.disarms.get()).as("turned off first").isEqualTo(1);
      assertThat(schedule.on).as("and on again: the clear was refused").isTrue();
      assertThat(armedInDatabase(h)).isTrue();
      writer.rollback();
    }
  }

  /**
   * The interleaving the order of the tick's steps is for: an enqueue commits, and arms, while the
   * tick's call that turns the schedule off is still on its way. The tick clears the flag only
   * after that call returned, so its clear sees the job and it turns the schedule on again. A tick
   * that cleared the flag first would have let the enqueue arm before its late disable landed, and
   * the schedule would stay off with a job queued.
   */
  @Test
  void an_enqueue_that_arms_while_the_disable_is_in_flight_leaves_the_schedule_on(
      TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      BuildQueue[] enqueuer = new BuildQueue[1];
      Switch schedule =
          new Switch() {
            @Override
            public void disarm() {
              if (disarms.get() == 0) {
                enqueuer[0].enqueue("u1", "noop", new Json("{}"), "k1");
              }
              super.disarm();
            }
          };
      BuildQueue queue = queue(h, schedule);
      enqueuer[0] = queue;

      queue.tick(TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);

      assertThat(schedule.on).isTrue();
      assertThat(armedInDatabase(h)).isTrue();
    }
  }

  /**
   * Enqueues and disarming ticks at once, many times over: at the end of each round, if the queue
   * holds work, the schedule is on. A disarm whose check missed an enqueue in flight (without the
   * table lock), or a tick that cleared the flag before turning the schedule off, leaves it off.
   */
  @Test
  void whatever_the_interleaving_the_schedule_is_on_while_work_exists(TestDatabase tdb)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try (QueueHarness h = QueueHarness.manual(tdb)) {
      int offWithWork = 0;
      int disarmed = 0;
      for (int round = 0; round < 40; round++) {
        h.testDb.jdbc().update("delete from build_job_event", buildqueue.db.Params.none());
        h.testDb.jdbc().update("delete from build_job", buildqueue.db.Params.none());
        // The enqueues start when a tick is turning the schedule off: they race with its clear
        // and with the other ticks, which is the window that matters.
        CountDownLatch turningOff = new CountDownLatch(1);
        Switch schedule =
            new Switch() {
              @Override
              public void disarm() {
                turningOff.countDown();
                super.disarm();
              }
            };
        BuildQueue queue = queue(h, schedule);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        int r = round;
        for (int t = 0; t < 4; t++) {
          int thread = t;
          done.add(
              pool.submit(
                  () -> {
                    start.await();
                    queue.tick(
                        TickBudget.of(queue.maxTickBudget()), false, TickSchedule.Cause.SCHEDULE);
                    return null;
                  }));
          done.add(
              pool.submit(
                  () -> {
                    start.await();
                    turningOff.await(5, java.util.concurrent.TimeUnit.SECONDS);
                    if ((r + thread) % 3 != 0) {
                      queue.enqueue("u" + thread, "noop", new Json("{}"), "k" + r);
                    }
                    return null;
                  }));
        }
        start.countDown();
        for (Future<?> f : done) {
          f.get();
        }
        long queued =
            h.testDb
                .jdbc()
                .query(
                    "select count(*) as n from build_job where status = 'queued'",
                    buildqueue.db.Params.none())
                .get(0)
                .longValue("n");
        if (queued > 0 && !schedule.on) {
          offWithWork++;
        }
        disarmed += schedule.disarms.get() > 0 && schedule.arms.get() > 0 ? 1 : 0;
      }
      assertThat(offWithWork).as("rounds that ended with work and the schedule off").isZero();
      assertThat(disarmed)
          .as("rounds in which a tick turned the schedule off and an enqueue or a tick on again")
          .isPositive();
    } finally {
      pool.shutdownNow();
    }
  }
}
