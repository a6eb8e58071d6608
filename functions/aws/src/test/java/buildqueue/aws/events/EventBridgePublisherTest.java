package buildqueue.aws.events;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.lambda.TickFunction;
import buildqueue.aws.lambda.TickFunctionTest;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.TestContext;
import buildqueue.core.OutboxTransitions;
import buildqueue.core.OutboxTransitions.PendingEvent;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@ExtendWith(PostgresExtension.class)
class EventBridgePublisherTest {

  private static long eventRows(QueueWorld w) {
    return tdbCount(w, "select count(*) as n from build_job_event");
  }

  private static long tdbCount(QueueWorld w, String sql) {
    return w.tdb.jdbc().query(sql).get(0).longValue("n");
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void pending_events_go_out_at_most_ten_a_call_and_are_marked_published(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TICK)) {
      for (int i = 0; i < 24; i++) {
        w.submitUnpublished("user-" + i);
      }
      long rows = eventRows(w);

      EventBridgePublisher.Published p = w.services.publisher().publishPending();

      assertThat(p.published()).isEqualTo((int) rows);
      assertThat(w.eventBridge.callSizes()).allSatisfy(n -> assertThat(n).isBetween(1, 10));
      assertThat(w.eventBridge.callSizes().stream().mapToInt(Integer::intValue).sum())
          .isEqualTo((int) rows);
      assertThat(w.unpublishedEvents()).isZero();
      assertThat(w.eventBridge.received())
          .allSatisfy(
              e -> {
                assertThat(e.source()).isEqualTo("buildqueue");
                assertThat(e.detailType()).isEqualTo("Build Job State Change");
                assertThat(e.detail().fieldNames())
                    .toIterable()
                    .containsExactly("eventId", "jobId", "userId", "kind", "type", "message", "at");
              });
      // Oldest first, each once.
      List<Long> ids =
          w.eventBridge.received().stream().map(e -> e.detail().get("eventId").asLong()).toList();
      assertThat(ids).isSorted().doesNotHaveDuplicates();
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void entries_eventbridge_refuses_stay_unpublished_and_go_out_on_a_later_run(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TICK)) {
      w.submitUnpublished("alice");
      long bobsJob = w.submitUnpublished("bob");
      w.submitUnpublished("carol");
      w.eventBridge.refuse(detail -> detail.get("jobId").asLong() == bobsJob);

      EventBridgePublisher.Published first = w.services.publisher().publishPending();

      assertThat(first.refused()).isEqualTo(1);
      assertThat(first.published()).isEqualTo((int) eventRows(w) - 1);
      assertThat(w.unpublishedEvents()).isEqualTo(1);

      // A run straight away leaves it alone (a refused entry backs off), a later one sends it.
      w.eventBridge.refuse(detail -> false);
      assertThat(w.services.publisher().publishPending().anything()).isFalse();
      w.clock.advance(OutboxTransitions.RETRY_AFTER);
      EventBridgePublisher.Published later = w.services.publisher().publishPending();

      assertThat(later.published()).isEqualTo(1);
      assertThat(w.unpublishedEvents()).isZero();
      assertThat(w.eventBridge.accepted())
          .extracting(e -> e.detail().get("eventId").asLong())
          .doesNotHaveDuplicates()
          .hasSize((int) eventRows(w));
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_failed_call_marks_nothing_and_a_later_run_sends_it_all(String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TICK)) {
      for (int i = 0; i < 12; i++) {
        w.submitUnpublished("user-" + i);
      }
      w.eventBridge.failNextCalls(1);

      EventBridgePublisher.Published failed = w.services.publisher().publishPending();

      assertThat(failed.published()).isZero();
      assertThat(w.unpublishedEvents()).isEqualTo(eventRows(w));

      w.clock.advance(OutboxTransitions.CLAIM);
      EventBridgePublisher.Published later = w.services.publisher().publishPending();

      assertThat(later.published()).isEqualTo((int) eventRows(w));
      assertThat(w.unpublishedEvents()).isZero();
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void concurrent_publishers_never_claim_the_same_rows(String adapter, TestDatabase tdb)
      throws Exception {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TICK)) {
      for (int i = 0; i < 60; i++) {
        w.submitUnpublished("user-" + i);
      }
      OutboxTransitions outbox = new OutboxTransitions(QueueWorld.adapter(adapter, tdb), w.clock);
      int publishers = 4;
      CyclicBarrier start = new CyclicBarrier(publishers);
      ExecutorService pool = Executors.newFixedThreadPool(publishers);
      List<Future<List<Long>>> claims = new ArrayList<>();
      for (int i = 0; i < publishers; i++) {
        claims.add(
            pool.submit(
                () -> {
                  start.await();
                  List<Long> mine = new ArrayList<>();
                  List<PendingEvent> batch;
                  while (!(batch = outbox.claimPending(7)).isEmpty()) {
                    batch.forEach(e -> mine.add(e.id()));
                  }
                  return mine;
                }));
      }
      Set<Long> all = new HashSet<>();
      int total = 0;
      for (Future<List<Long>> f : claims) {
        List<Long> mine = f.get();
        total += mine.size();
        all.addAll(mine);
      }
      pool.shutdown();

      assertThat(total).isEqualTo(all.size()).isEqualTo((int) eventRows(w));
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_lambda_killed_after_a_transition_but_before_put_events_loses_no_event(
      String adapter, TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.TICK)) {
      // One invocation died between claiming its rows and PutEvents.
      long diedAfterClaim = w.submitUnpublished("bob");
      List<PendingEvent> orphaned =
          new OutboxTransitions(QueueWorld.adapter(adapter, tdb), w.clock).claimPending(50);
      assertThat(orphaned).extracting(PendingEvent::jobId).containsOnly(diedAfterClaim);
      // Another died right after its transition committed: nothing was claimed or sent.
      long diedBeforeClaim = w.submitUnpublished("alice");
      TickFunction tick = new TickFunction(() -> w.services);
      Map<String, Object> schedule = TickFunctionTest.event("schedule-tick.json");

      tick.handleRequest(schedule, TestContext.withTimeLeft(Duration.ofSeconds(60)));

      List<Long> orphanedIds = orphaned.stream().map(PendingEvent::id).toList();
      assertThat(w.eventBridge.accepted())
          .extracting(e -> e.detail().get("jobId").asLong())
          .contains(diedBeforeClaim);
      // The tick's dispatch of bob's job writes a row of its own, which goes out; the claimed
      // rows do not.
      assertThat(w.eventBridge.accepted())
          .extracting(e -> e.detail().get("eventId").asLong())
          .doesNotContainAnyElementsOf(orphanedIds);
      // The claimed rows wait for their claim to run out; the first tick after that sends them.
      w.clock.advance(OutboxTransitions.CLAIM);
      tick.handleRequest(schedule, TestContext.withTimeLeft(Duration.ofSeconds(60)));

      assertThat(w.unpublishedEvents()).isZero();
      assertThat(w.eventBridge.accepted())
          .extracting(e -> e.detail().get("eventId").asLong())
          .containsAll(orphanedIds);
      assertThat(w.eventBridge.accepted())
          .extracting(e -> e.detail().get("eventId").asLong())
          .doesNotHaveDuplicates();
    }
  }
}
