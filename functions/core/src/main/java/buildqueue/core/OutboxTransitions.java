package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The job history as an outbox: every {@code build_job_event} row is published at least once, and
 * none is lost when a publisher dies. A publisher claims a batch of unpublished rows (no other
 * publisher gets them while the claim lasts), sends them, then settles: rows the receiver accepted
 * become published, refused ones are claimed again after {@code retryAfter}. A publisher that dies
 * between claim and settle leaves its rows to whoever claims after the claim runs out.
 */
public final class OutboxTransitions {
  /** How long a claim keeps other publishers off a row; longer than one send can take. */
  public static final Duration CLAIM = Duration.ofSeconds(60);

  /** How long a row the receiver refused waits before it is claimed again. */
  public static final Duration RETRY_AFTER = Duration.ofSeconds(10);

  private final Database db;
  private final QueueClock clock;

  public OutboxTransitions(Database db, QueueClock clock) {
    this.db = db;
    this.clock = clock;
  }

  /**
   * One unpublished history row with the job facts a subscriber needs; {@code traceparent} is the
   * job's (null: none).
   */
  public record PendingEvent(
      long id,
      long jobId,
      String userId,
      String kind,
      String type,
      String message,
      Instant at,
      String traceparent) {}

  private static final String CLAIM_PENDING =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      claimed as (
        update build_job_event e set publish_claimed_until = t.now + :claimMs * interval '1 millisecond'
        from t
        -- A batch by array, as in TickTransitions.housekeep
        where e.id = any(array(
          select c.id from build_job_event c, t
          where c.published_at is null
            and (c.publish_claimed_until is null or c.publish_claimed_until <= t.now)
          order by c.id
          limit :limit
          for update skip locked))
        returning e.id, e.job_id, e.type, e.detail, e.at
      )
      -- Size: at most MAX_CLAIM rows of a user id, a kind and a message (an error text cut to
      -- RowLimits.MAX_ERROR_BYTES in at most 300 bytes of fixed text), at most 6 KB each.
      select c.id, c.job_id, j.user_id, j.kind, c.type, c.detail ->> 'message' as message, c.at,
        j.traceparent
      from claimed c join build_job j on j.id = c.job_id
      order by c.id
      """;

  /**
   * The most rows one claim may take: 100 of at most 6 KB keep its answer under the Data API's 1
   * MiB.
   */
  public static final int MAX_CLAIM = 100;

  /**
   * Claims up to {@code limit} (at most {@link #MAX_CLAIM}) unpublished rows, oldest first, for
   * {@link #CLAIM}. Concurrent publishers claim disjoint sets: rows locked by one are skipped by
   * the other, and a claimed row no longer matches.
   */
  public List<PendingEvent> claimPending(int limit) {
    if (limit < 1 || limit > MAX_CLAIM) {
      throw new IllegalArgumentException("a claim takes 1 to " + MAX_CLAIM + " rows, not " + limit);
    }
    Params params = Params.of("now", clock.now(), "claimMs", CLAIM.toMillis(), "limit", limit);
    return db.query(CLAIM_PENDING, params).stream()
        .map(
            r ->
                new PendingEvent(
                    r.longValue("id"),
                    r.longValue("job_id"),
                    r.string("user_id"),
                    r.string("kind"),
                    r.string("type"),
                    r.string("message"),
                    r.instant("at"),
                    r.string("traceparent")))
        .toList();
  }

  // Assembled from pieces: AssembledStatementsTest pins the whole text in src/test/resources.
  private static final String SETTLE =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      %s
      select count(*) as settled from settled
      """
          .formatted(settleCtes());

  /**
   * Records what the receiver did with claimed rows: {@code published} ones are done, {@code
   * refused} ones wait {@link #RETRY_AFTER} and are then claimed again. The id lists travel as
   * comma-separated text because the RDS Data API takes no array parameters. Returns the rows
   * changed.
   */
  public int settle(Collection<Long> published, Collection<Long> refused) {
    if (published.isEmpty() && refused.isEmpty()) {
      return 0;
    }
    Params params =
        Params.of("now", clock.now(), "published", csv(published), "refused", csv(refused))
            .and("retryMs", RETRY_AFTER.toMillis());
    return Math.toIntExact(db.query(SETTLE, params).get(0).longValue("settled"));
  }

  /**
   * What a receiver did with events it was given: {@code accepted} ones are published, {@code
   * refused} ones are claimed again after {@link #RETRY_AFTER}.
   */
  public record Sent(List<Long> accepted, List<Long> refused) {
    public Sent {
      accepted = List.copyOf(accepted);
      refused = List.copyOf(refused);
    }
  }

  /**
   * Where a request sends the events its own statements claimed (EventBridge in AWS). Must not
   * throw for a refusal: a failed call answers every event refused.
   */
  @FunctionalInterface
  public interface Sender {
    Sent send(List<PendingEvent> events);
  }

  /**
   * The most rows a request's own statement claims ({@code build_outbox_claim}, V009): a request
   * publishes what its transition wrote and a little backlog; a longer backlog is the tick's.
   */
  public static final int FOLDED_CLAIM = 50;

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  /**
   * The events {@code build_outbox_claim} (V009) answered: a JSON array, or null when it claimed
   * nothing.
   */
  static List<PendingEvent> claimedOf(String json) {
    if (json == null) {
      return List.of();
    }
    try {
      List<PendingEvent> out = new java.util.ArrayList<>();
      for (com.fasterxml.jackson.databind.JsonNode e : JSON.readTree(json)) {
        long micros = e.get("atMicros").asLong();
        out.add(
            new PendingEvent(
                e.get("id").asLong(),
                e.get("jobId").asLong(),
                e.get("userId").asText(),
                e.get("kind").asText(),
                e.get("type").asText(),
                e.get("message").isNull() ? null : e.get("message").asText(),
                Instant.ofEpochSecond(
                    Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000),
                e.hasNonNull("traceparent") ? e.get("traceparent").asText() : null));
      }
      return out;
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("build_outbox_claim answered what is not JSON", e);
    }
  }

  /**
   * The settle as a part of another statement: CTEs {@code settle_outcome} and {@code settled},
   * with the parameters of {@link #settlementParams}; nothing happens when both lists are empty.
   * Follows a {@code t} CTE with the statement's {@code now}.
   */
  static final String SETTLE_CTES = settleCtes();

  /**
   * {@link #SETTLE_CTES}'s text. An event becomes published once ({@code published_at is null} in
   * the guard), and in that same update it is owed to every webhook endpoint that wants it ({@code
   * webhook_owed}, docs/architecture.md "Webhooks"): made exactly once per event and endpoint, and
   * with no endpoint registered an empty join, no statement of its own.
   */
  private static String settleCtes() {
    return """
      settle_outcome as (
        select unnest(string_to_array(:published::text, ',')::bigint[]) as id, true as published
        union all
        select unnest(string_to_array(:refused::text, ',')::bigint[]), false
      ),
      settled as (
        update build_job_event e set
          published_at = case when o.published then t.now end,
          publish_claimed_until = case when o.published then null
                                       else t.now + :retryMs * interval '1 millisecond' end
        from settle_outcome o, t
        where e.id = o.id and e.published_at is null
        returning e.id, e.job_id, e.type, e.published_at
      ),
      %s"""
        .formatted(WebhookDeliveries.OWED_CTE);
  }

  /** The parameters of {@link #SETTLE_CTES}. */
  static buildqueue.db.Params settlementParams(
      buildqueue.db.Params params, Collection<Long> published, Collection<Long> refused) {
    return params
        .and("published", csv(published))
        .and("refused", csv(refused))
        .and("retryMs", RETRY_AFTER.toMillis());
  }

  private static String csv(Collection<Long> ids) {
    return ids.stream().map(String::valueOf).collect(Collectors.joining(","));
  }
}
