package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The webhook endpoints admins register and their delivery logs (docs/architecture.md "Webhooks").
 * Secrets leave this class only as fingerprints, except a secret this class made in the same call
 * ({@link Saved#newSecret}), which its caller shows once.
 */
public final class WebhookEndpoints {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The most endpoints: each settle joins every event with them. */
  public static final int MAX_ENDPOINTS = 100;

  private final Database db;
  private final QueueClock clock;

  public WebhookEndpoints(Database db, QueueClock clock) {
    this.db = db;
    this.clock = clock;
  }

  /**
   * An endpoint as an admin sees it.
   *
   * @param userId whose jobs' events it gets; null: every user's
   * @param eventTypes the event types it gets; null: every type
   * @param secretFingerprints {@link WebhookSignature#fingerprint} of each secret, the newest first
   */
  public record Endpoint(
      String name,
      String url,
      String userId,
      List<String> eventTypes,
      List<String> secretFingerprints,
      Instant createdAt,
      Instant updatedAt) {}

  /** What a save did; {@code newSecret} is the secret it generated, if it did. */
  public record Saved(Endpoint endpoint, boolean created, Optional<String> newSecret) {}

  /**
   * What a save sets.
   *
   * @param secrets the secrets to sign with, replacing the endpoint's; null keeps them (a new
   *     endpoint gets a generated one)
   * @param rotate generate a new secret, keep the newest current one beside it (both sign until the
   *     next rotation or a save with {@code secrets})
   */
  public record Change(
      String url, String userId, List<String> eventTypes, List<String> secrets, boolean rotate) {}

  private static final String SAVE =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      room as (select count(*) < :maxEndpoints as ok from build_webhook_endpoint where name <> :name)
      insert into build_webhook_endpoint as w
        (name, url, user_id, event_types, secrets, created_at, updated_at)
      select :name, :url, :userId, :eventTypes::jsonb,
             coalesce(:secrets::jsonb, jsonb_build_array(:newSecret::text)), t.now, t.now
      from t, room where room.ok
      on conflict (name) do update set
        url = excluded.url,
        user_id = excluded.user_id,
        event_types = excluded.event_types,
        secrets = case when :secrets::jsonb is not null then :secrets::jsonb
                       when :rotate then jsonb_build_array(:newSecret::text, w.secrets -> 0)
                       else w.secrets end,
        updated_at = excluded.updated_at
      returning w.name, w.url, w.user_id, w.event_types::text as event_types,
        w.secrets::text as secrets, w.created_at, w.updated_at, (xmax = 0) as created
      """;

  /**
   * Creates or replaces the endpoint {@code name}: empty when there are {@link #MAX_ENDPOINTS}
   * others already.
   */
  public Optional<Saved> save(String name, Change change) {
    String newSecret = WebhookSignature.newSecret();
    Params params =
        Params.of("now", clock.now(), "name", name, "url", change.url())
            .and("userId", change.userId())
            .and("eventTypes", change.eventTypes() == null ? null : json(change.eventTypes()))
            .and("secrets", change.secrets() == null ? null : json(change.secrets()))
            .and("rotate", change.rotate())
            .and("newSecret", newSecret)
            .and("maxEndpoints", MAX_ENDPOINTS);
    return db.queryOptional(SAVE, params)
        .map(
            r -> {
              List<String> secrets = list(r.string("secrets"));
              return new Saved(
                  endpoint(r, secrets),
                  r.bool("created"),
                  secrets.contains(newSecret) ? Optional.of(newSecret) : Optional.empty());
            });
  }

  private static final String LIST =
      """
      select name, url, user_id, event_types::text as event_types, secrets::text as secrets,
        created_at, updated_at
      from build_webhook_endpoint
      where (:name::text is null or name = :name)
      order by name
      """;

  /** Every endpoint, by name (at most {@link #MAX_ENDPOINTS}). */
  public List<Endpoint> list() {
    return read(null);
  }

  public Optional<Endpoint> get(String name) {
    return read(name).stream().findFirst();
  }

  private List<Endpoint> read(String name) {
    List<Endpoint> out = new ArrayList<>();
    for (Row r : db.query(LIST, Params.of("name", name))) {
      out.add(endpoint(r, list(r.string("secrets"))));
    }
    return out;
  }

  private static final String DELETE =
      "delete from build_webhook_endpoint where name = :name returning id";

  /** Deletes the endpoint and its delivery log; false when there is none of that name. */
  public boolean delete(String name) {
    return !db.query(DELETE, Params.of("name", name)).isEmpty();
  }

  /** One line of an endpoint's delivery log. */
  public record Delivery(
      long id,
      long eventId,
      long jobId,
      String eventType,
      String status,
      int attempts,
      Integer lastStatus,
      String lastError,
      Instant createdAt,
      Instant firstAttemptAt,
      Instant lastAttemptAt,
      Instant nextAttemptAt,
      Instant deliveredAt) {}

  private static final String DELIVERIES =
      """
      select d.id, d.event_id, d.job_id, e.type, d.status, d.attempts, d.last_status, d.last_error,
        d.created_at, d.first_attempt_at, d.last_attempt_at, d.next_attempt_at, d.delivered_at
      from build_webhook_delivery d
      join build_webhook_endpoint w on w.id = d.endpoint_id
      join build_job_event e on e.id = d.event_id
      -- Size: at most 201 rows of ids, times and an error cut to 1,000 characters: under 300 KB.
      where w.name = :name
        and (:status::text is null or d.status = :status)
        and (:before::bigint is null or d.id < :before)
      order by d.id desc
      limit :limit
      """;

  /**
   * The endpoint's deliveries, newest first, of {@code status} (null: any), older than {@code
   * before} (null: from the newest): at most {@code limit}.
   */
  public List<Delivery> deliveries(String name, String status, Long before, int limit) {
    Params params = Params.of("name", name, "status", status, "before", before).and("limit", limit);
    List<Delivery> out = new ArrayList<>();
    for (Row r : db.query(DELIVERIES, params)) {
      out.add(
          new Delivery(
              r.longValue("id"),
              r.longValue("event_id"),
              r.longValue("job_id"),
              r.string("type"),
              r.string("status"),
              r.intValue("attempts"),
              r.get("last_status") == null ? null : r.intValue("last_status"),
              r.string("last_error"),
              r.instant("created_at"),
              r.instant("first_attempt_at"),
              r.instant("last_attempt_at"),
              r.instant("next_attempt_at"),
              r.instant("delivered_at")));
    }
    return out;
  }

  /** What a replay found. */
  public enum Replay {
    /**
     * The dead delivery is pending again, due now, with a new {@link WebhookDeliveries#MAX_AGE}.
     */
    REPLAYED,
    /** The endpoint has no such delivery. */
    NOT_FOUND,
    /** The delivery is not dead (pending or delivered): nothing changed. */
    NOT_DEAD
  }

  private static final String REPLAY =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      target as (
        select d.id, d.status from build_webhook_delivery d
        join build_webhook_endpoint w on w.id = d.endpoint_id
        where w.name = :name and d.id = :id
      ),
      replayed as (
        update build_webhook_delivery d set
          status = 'pending', next_attempt_at = t.now, first_attempt_at = null, claimed_until = null
        from target, t
        where d.id = target.id and d.status = 'dead'
        returning d.id
      )
      select (select count(*) from target) as found, (select count(*) from replayed) as replayed
      """;

  /** Makes a dead delivery pending again, due now: only a dead one of this endpoint. */
  public Replay replay(String name, long deliveryId) {
    Row r = db.query(REPLAY, Params.of("now", clock.now(), "name", name, "id", deliveryId)).get(0);
    if (r.longValue("found") == 0) {
      return Replay.NOT_FOUND;
    }
    return r.longValue("replayed") == 1 ? Replay.REPLAYED : Replay.NOT_DEAD;
  }

  private static Endpoint endpoint(Row r, List<String> secrets) {
    String types = r.string("event_types");
    return new Endpoint(
        r.string("name"),
        r.string("url"),
        r.string("user_id"),
        types == null ? null : list(types),
        secrets.stream().map(WebhookSignature::fingerprint).toList(),
        r.instant("created_at"),
        r.instant("updated_at"));
  }

  private static String json(List<String> values) {
    ArrayNode a = JSON.createArrayNode();
    values.forEach(a::add);
    return a.toString();
  }

  private static List<String> list(String json) {
    try {
      List<String> out = new ArrayList<>();
      JSON.readTree(json).forEach(n -> out.add(n.asText()));
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("not a JSON array of strings", e);
    }
  }
}
