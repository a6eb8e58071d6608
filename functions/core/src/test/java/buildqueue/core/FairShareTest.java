package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.WorkerTransitions.Ended;
import buildqueue.db.Json;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The shared lane takes turns by user (docs/architecture.md §4.7): the next job is the oldest
 * queued job of the user served least recently among those with queued jobs, whether a new worker
 * is dispatched for it or a live worker chains it; {@code fifo} keeps the reference's order. The
 * test plays every worker by hand ({@link buildqueue.testing.ManualPlatform}), so each step happens
 * when it says.
 */
@ExtendWith(PostgresExtension.class)
class FairShareTest {

  /** How many launches the test has played so far. */
  private int played;

  /** Jobs by name (a1, b1 …), queued without dispatching, so the whole queue is there first. */
  private final Map<String, Long> jobs = new LinkedHashMap<>();

  private void queue(QueueHarness h, String user, int count) {
    JobTransitions transitions = new JobTransitions(h.db, h.config, h.clock);
    int already = (int) jobs.keySet().stream().filter(k -> k.startsWith(user)).count();
    for (int i = 1; i <= count; i++) {
      jobs.put(
          user + (already + i), transitions.enqueue(user, "noop", new Json("{}"), null).jobId());
    }
  }

  /** One job of {@code user} with {@code priority}, named as {@link #queue} names them. */
  private void queue(QueueHarness h, String user, Priority priority) {
    JobTransitions transitions = new JobTransitions(h.db, h.config, h.clock);
    int already = (int) jobs.keySet().stream().filter(k -> k.startsWith(user)).count();
    jobs.put(
        user + (already + 1),
        transitions.enqueue(user, "noop", new Json("{}"), null, null, priority, null).jobId());
  }

  private List<String> names(List<Long> ids) {
    Map<Long, String> byId = new LinkedHashMap<>();
    jobs.forEach((name, id) -> byId.put(id, name));
    return ids.stream().map(byId::get).toList();
  }

  private static QueueHarness harness(
      TestDatabase tdb, int slots, Duration chainWindow, QueueConfig.SharedOrder order) {
    return QueueHarness.manual(
        tdb,
        QueueHarness.testConfig()
            .withSharedSlots(slots)
            .withChainWindow(chainWindow)
            .withSharedOrder(order));
  }

  /**
   * A harness whose workers chain jobs (a five-minute window) for {@link Run#CHAINING}, never for
   * DISPATCH.
   */
  private static QueueHarness harness(
      TestDatabase tdb, Run run, int slots, QueueConfig.SharedOrder order) {
    return harness(tdb, slots, run == Run.CHAINING ? Duration.ofMinutes(5) : Duration.ZERO, order);
  }

  /**
   * Runs the lane to empty with one job per worker: each worker, oldest launch first, starts, ends
   * its job and exits, and its exit dispatches the next. Returns the jobs in the order their
   * workers were dispatched.
   */
  private List<Long> runByDispatch(QueueHarness h) {
    h.queue.dispatchLane(Lanes.SHARED);
    List<Long> order = new ArrayList<>();
    for (int next = played; next < h.manual.launches().size(); next++, played++) {
      WorkerLaunch w = h.manual.launches().get(next);
      long job = h.workers.start(w.workerId(), w.token()).orElseThrow().job().orElseThrow().id();
      order.add(job);
      assertThat(h.workers.end(w.workerId(), w.token(), job, JobStatus.SUCCEEDED, null))
          .isInstanceOf(Ended.Drained.class);
      assertThat(
              h.queue.taskStopped(
                  ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "exited"))
          .isPresent();
    }
    return order;
  }

  /**
   * Runs the lane to empty on the workers its first dispatch starts, each chaining jobs while there
   * are any, in turn. Returns the jobs in the order they were taken.
   */
  private static List<Long> runByChaining(QueueHarness h) {
    h.queue.dispatchLane(Lanes.SHARED);
    List<WorkerLaunch> workers = List.copyOf(h.manual.launches());
    List<Long> order = new ArrayList<>();
    Map<WorkerLaunch, Long> current = new LinkedHashMap<>();
    for (WorkerLaunch w : workers) {
      long job = h.workers.start(w.workerId(), w.token()).orElseThrow().job().orElseThrow().id();
      order.add(job);
      current.put(w, job);
    }
    while (!current.isEmpty()) {
      for (WorkerLaunch w : List.copyOf(current.keySet())) {
        Ended ended =
            h.workers.end(w.workerId(), w.token(), current.get(w), JobStatus.SUCCEEDED, null);
        if (ended instanceof Ended.Chained chained) {
          order.add(chained.next().id());
          current.put(w, chained.next().id());
        } else {
          assertThat(ended).isInstanceOf(Ended.Drained.class);
          current.remove(w);
        }
      }
    }
    assertThat(h.manual.launches()).hasSize(workers.size()); // every later job was chained
    return order;
  }

  private static final List<String> TURNS =
      List.of("a1", "b1", "c1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10");

  /** Whether each next job goes to a newly dispatched worker or is chained by a live one. */
  enum Run {
    DISPATCH,
    CHAINING
  }

  /** The lane run to empty by {@code run}, on a harness made for that run. */
  private List<Long> run(QueueHarness h, Run run) {
    return run == Run.DISPATCH ? runByDispatch(h) : runByChaining(h);
  }

  /** a queues 10 jobs, then b and c one each. */
  private void queueTenOneAndOne(QueueHarness h) {
    queue(h, "a", 10);
    queue(h, "b", 1);
    queue(h, "c", 1);
  }

  /** Chaining and dispatch take the same turns, on one worker and on three. */
  @ParameterizedTest(name = "{0} on {1} shared slot(s)")
  @CsvSource({"DISPATCH, 1", "DISPATCH, 3", "CHAINING, 1", "CHAINING, 3"})
  void three_users_with_10_1_and_1_queued_jobs_take_turns_in_the_shared_lane(
      Run run, int slots, TestDatabase tdb) {
    QueueHarness h = harness(tdb, run, slots, QueueConfig.SharedOrder.FAIR);
    queueTenOneAndOne(h);

    assertThat(names(run(h, run))).containsExactlyElementsOf(TURNS);
  }

  /**
   * Priority orders a user's own jobs and nothing else: a has the same turns as in {@link #TURNS}
   * (a, b, c, then a alone), but takes its high job first and its low one last; b and c are not
   * passed by a's high job, whether a worker is dispatched for each job or chains them.
   */
  @ParameterizedTest(name = "{0} on {1} shared slot(s)")
  @CsvSource({"DISPATCH, 1", "DISPATCH, 3", "CHAINING, 1", "CHAINING, 3"})
  void priority_orders_a_users_own_jobs_and_leaves_the_turns_between_users_as_they_were(
      Run run, int slots, TestDatabase tdb) {
    QueueHarness h = harness(tdb, run, slots, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", Priority.LOW);
    queue(h, "a", 8);
    queue(h, "a", Priority.HIGH);
    queue(h, "b", 1);
    queue(h, "c", 1);

    List<String> order = names(run(h, run));

    assertThat(order.stream().map(n -> n.substring(0, 1)).toList())
        .as("whose turn")
        .containsExactlyElementsOf(TURNS.stream().map(n -> n.substring(0, 1)).toList());
    assertThat(order)
        .containsExactly("a10", "b1", "c1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a1");
  }

  @Test
  void a_priority_changed_while_queued_reorders_the_users_jobs_and_not_a_started_one(
      TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 4);
    OrderTransitions order = new OrderTransitions(h.db, h.clock);

    assertThat(order.setPriorityIfQueued(jobs.get("a4"), "a", Priority.HIGH))
        .isEqualTo(new OrderTransitions.Reordered.Done(jobs.get("a4")));
    assertThat(order.setPriorityIfQueued(jobs.get("a1"), "a", Priority.LOW))
        .isEqualTo(new OrderTransitions.Reordered.Done(jobs.get("a1")));
    assertThat(order.setPriorityIfQueued(jobs.get("a2"), "b", Priority.HIGH))
        .as("another user's job")
        .isEqualTo(new OrderTransitions.Reordered.NotFound(jobs.get("a2")));

    assertThat(names(runByDispatch(h))).containsExactly("a4", "a2", "a3", "a1");
    assertThat(order.setPriorityIfQueued(jobs.get("a2"), null, Priority.HIGH))
        .isEqualTo(new OrderTransitions.Reordered.NotQueued(jobs.get("a2"), JobStatus.SUCCEEDED));
  }

  /**
   * Run next: the job is the head of the lane, before every user's turn; taking it serves nobody's
   * turn, so the turns go on as if it had never been queued.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(Run.class)
  void a_job_run_next_goes_first_and_the_turns_go_on_as_before(Run run, TestDatabase tdb) {
    QueueHarness h = harness(tdb, run, 1, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 3);
    queue(h, "b", 3);
    assertThat(
            new OrderTransitions(h.db, h.clock)
                .setPriorityIfQueued(jobs.get("b3"), null, Priority.NEXT))
        .isInstanceOf(OrderTransitions.Reordered.Done.class);

    assertThat(names(run(h, run))).containsExactly("b3", "a1", "b1", "a2", "b2", "a3");
  }

  /**
   * A lane without turns (a dedicated lane holds one user's jobs) takes them by priority, then age,
   * whether dispatched or chained.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(Run.class)
  void a_lane_without_turns_takes_its_jobs_by_priority_then_age(Run run, TestDatabase tdb) {
    QueueHarness h = harness(tdb, run, 1, QueueConfig.SharedOrder.FIFO);
    queue(h, "a", 2);
    queue(h, "a", Priority.HIGH);
    queue(h, "a", Priority.LOW);
    queue(h, "a", 1);

    assertThat(names(run(h, run))).containsExactly("a3", "a1", "a2", "a5", "a4");
  }

  @Test
  void turns_follow_who_was_served_last_not_the_order_jobs_came_in(TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 3);
    queue(h, "b", 5);
    queue(h, "a", 3);

    // a4 came after all of b's jobs, yet a and b alternate for as long as both wait.
    assertThat(names(runByDispatch(h)))
        .containsExactly("a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4", "a5", "b5", "a6");
  }

  @Test
  void a_user_who_comes_back_after_being_served_waits_for_the_users_still_waiting(
      TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 1);
    queue(h, "b", 2);
    h.queue.dispatchLane(Lanes.SHARED);
    WorkerLaunch first = h.manual.lastLaunch();
    assertThat(
            h.workers.start(first.workerId(), first.token()).orElseThrow().job().orElseThrow().id())
        .isEqualTo(jobs.get("a1"));
    played++;
    queue(h, "a", 1); // a submits again while its first job runs: b has not had a turn yet

    assertThat(
            h.workers.end(
                first.workerId(), first.token(), jobs.get("a1"), JobStatus.SUCCEEDED, null))
        .isInstanceOf(Ended.Drained.class);
    h.queue.taskStopped(
        ManualPlatform.taskIdOf(first.workerId()), first.workerId(), first.token(), "exited");

    assertThat(names(runByDispatch(h))).containsExactly("b1", "a2", "b2");
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Run.class)
  void fifo_keeps_the_order_jobs_came_in(Run run, TestDatabase tdb) {
    QueueHarness h = harness(tdb, run, 1, QueueConfig.SharedOrder.FIFO);
    queueTenOneAndOne(h);

    assertThat(names(run(h, run))).containsExactlyElementsOf(jobs.keySet());
  }

  @Test
  void dedicated_lanes_stay_fifo(TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    assertThat(h.config.takesTurns(Lanes.dedicated("a"))).isFalse();
    assertThat(h.config.takesTurns(Lanes.SHARED)).isTrue();
    assertThat(h.config.withSharedOrder(QueueConfig.SharedOrder.FIFO).takesTurns(Lanes.SHARED))
        .isFalse();
  }

  @Test
  void an_interrupted_job_is_retried_before_its_users_later_jobs(TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 3);
    queue(h, "b", 1);
    h.queue.dispatchLane(Lanes.SHARED);
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token());
    played++;
    // The worker dies under a1: a1 is queued again, same id, and the exit's dispatch takes it
    // before a2 (and, as a retry at the head of the lane, before b1 too: a retry is not a new
    // turn).
    h.queue.taskStopped(ManualPlatform.taskIdOf(w.workerId()), w.workerId(), w.token(), "killed");
    assertThat(h.job(jobs.get("a1")).longValue("worker_id"))
        .isEqualTo(h.manual.lastLaunch().workerId());

    List<Long> order = new ArrayList<>(List.of(jobs.get("a1")));
    order.addAll(runByDispatch(h));
    assertThat(names(order)).containsExactly("a1", "a1", "b1", "a2", "a3");
  }

  @Test
  void a_job_interrupted_on_a_chaining_worker_is_taken_again_first(TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ofMinutes(5), QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 2);
    queue(h, "b", 1);
    h.queue.dispatchLane(Lanes.SHARED);
    WorkerLaunch w = h.manual.lastLaunch();
    h.workers.start(w.workerId(), w.token());
    // a1's program exits with a retry code: the worker records the interruption and takes the next
    // job.
    assertThat(
            h.workers.interrupt(
                w.workerId(), w.token(), jobs.get("a1"), "exit code 75", null, null))
        .contains(JobStatus.QUEUED);

    Ended next = h.workers.takeNext(w.workerId(), w.token());
    assertThat(next).isInstanceOf(Ended.Chained.class);
    assertThat(((Ended.Chained) next).next().id()).isEqualTo(jobs.get("a1"));
    Ended after = h.workers.end(w.workerId(), w.token(), jobs.get("a1"), JobStatus.SUCCEEDED, null);
    assertThat(((Ended.Chained) after).next().id()).isEqualTo(jobs.get("b1"));
  }

  @Test
  void a_user_whose_jobs_ran_out_is_passed_once_and_then_no_more(TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 1);
    queue(h, "b", 3);
    h.queue.cancel(jobs.get("a1"), "a");

    h.queue.dispatchLane(Lanes.SHARED);
    // The dispatch passed a, whose turn came first, found nothing of it left, and marked it idle.
    assertThat(h.job(jobs.get("b1")).string("status")).isEqualTo("dispatched");
    assertThat(tdb.jdbc().query("select user_id, waiting from build_lane_turn order by user_id"))
        .extracting(r -> r.string("user_id") + "=" + r.bool("waiting"))
        .containsExactly("a=false", "b=true");
    assertThat(names(runByDispatch(h))).containsExactly("b1", "b2", "b3");
  }

  @Test
  void a_queued_jobs_place_counts_the_turns_before_it(TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queueTenOneAndOne(h);
    h.queue.dispatchLane(Lanes.SHARED); // a1 is on its way: b and c have their turns before a2
    JobQueries queries = new JobQueries(h.db, h.config, h.clock);

    JobQueries.JobView c1 = queries.job(jobs.get("c1")).orElseThrow();
    JobQueries.JobView a3 = queries.job(jobs.get("a3")).orElseThrow();

    // b1, then c1; then a2, a3
    assertThat(c1.position()).isEqualTo(2);
    assertThat(c1.turns()).contains(new JobQueries.Turns(false, 0, 1, 2));
    assertThat(a3.position()).isEqualTo(4);
    assertThat(a3.turns()).contains(new JobQueries.Turns(false, 1, 2, 2));
    assertThat(queries.jobs("c", java.util.Set.of(), 10, null).jobs().get(0).position())
        .isEqualTo(2);
    assertThat(
            new JobQueries(h.db, h.config.withSharedOrder(QueueConfig.SharedOrder.FIFO), h.clock)
                .job(jobs.get("c1"))
                .orElseThrow()
                .position())
        .isEqualTo(11);
  }

  @Test
  void the_lanes_view_lists_the_shared_lanes_queued_jobs_in_the_order_of_the_turns(
      TestDatabase tdb) {
    QueueHarness h = harness(tdb, 1, Duration.ZERO, QueueConfig.SharedOrder.FAIR);
    queue(h, "a", 4);
    queue(h, "b", 2);
    queue(h, "c", 1);
    h.queue.dispatchLane(Lanes.SHARED); // a1
    JobQueries queries = new JobQueries(h.db, h.config, h.clock);

    List<JobQueries.QueuedJob> head =
        queries.lanes(null, 20).lanes().stream()
            .filter(l -> l.lane().equals(Lanes.SHARED))
            .findFirst()
            .orElseThrow()
            .head();

    assertThat(names(head.stream().map(JobQueries.QueuedJob::id).toList()))
        .containsExactly("b1", "c1", "a2", "b2", "a3", "a4");
    for (JobQueries.QueuedJob q : head) {
      assertThat(q.position())
          .as("job " + q.id())
          .isEqualTo(queries.job(q.id()).orElseThrow().position());
    }
    assertThat(
            names(
                queries.lanes(null, 2).lanes().get(0).head().stream()
                    .map(JobQueries.QueuedJob::id)
                    .toList()))
        .containsExactly("b1", "c1");
    JobQueries fifo =
        new JobQueries(h.db, h.config.withSharedOrder(QueueConfig.SharedOrder.FIFO), h.clock);
    assertThat(
            names(
                fifo.lanes(null, 20).lanes().get(0).head().stream()
                    .map(JobQueries.QueuedJob::id)
                    .toList()))
        .containsExactly("a2", "a3", "a4", "b1", "b2", "c1");
  }
}
