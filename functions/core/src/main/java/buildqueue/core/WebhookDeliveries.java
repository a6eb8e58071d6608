package buildqueue.core;

import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Delivers job events to webhook endpoints (docs/architecture.md "Webhooks"): at least once, in
 * order per job and endpoint, signed per Standard Webhooks, with exponential backoff for at most
 * {@link #MAX_AGE} from the first attempt, then dead until an admin replays it.
 *
 * <p>A delivery is owed when the outbox publishes its event ({@link #OWED_CTE}, part of the
 * settle). A pass claims due deliveries ({@link #claimDue}: pending, due, not claimed, and no
 * earlier delivery of the same job to the same endpoint still pending, so a later event waits for
 * the earlier one's acknowledgement), sends each, and records every outcome in one statement
 * ({@link #record}). A deliverer that dies between claim and record leaves its claims to run out
 * ({@link #CLAIM}); they are sent again, which at least once allows (receivers dedupe on {@code
 * webhook-id}).
 *
 * <p>Secrets are read by the claim and used to sign; they are never logged, and the log's errors
 * are what the endpoint or the network answered.
 */
public final class WebhookDeliveries {
  private static final System.Logger LOG = System.getLogger(WebhookDeliveries.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /** How long a delivery is retried, from its first attempt, before it is dead. */
  public static final Duration MAX_AGE = Duration.ofHours(24);

  /** The first retry's delay; each later one doubles, up to {@link #MAX_BACKOFF}. */
  public static final Duration FIRST_BACKOFF = Duration.ofSeconds(5);

  public static final Duration MAX_BACKOFF = Duration.ofHours(1);

  /**
   * How long a claim keeps other deliverers off a delivery: longer than a batch's requests (sent
   * {@link #PARALLEL} at once, each within {@link WebhookHttp#TIMEOUT}) can take.
   */
  public static final Duration CLAIM = Duration.ofSeconds(60);

  /** Deliveries one claim takes. */
  public static final int BATCH = 32;

  /** Requests in flight at once within a batch. */
  public static final int PARALLEL = 8;

  /**
   * The settle's fan-out: each event the settle marked published is owed to every endpoint that
   * wants it (the event's user's or everyone's, of its type or of every type). Follows {@code
   * settled} ({@code id, job_id, type, published_at}) and {@code t}.
   */
  static final String OWED_CTE =
      """
      webhook_owed as (
        insert into build_webhook_delivery (endpoint_id, event_id, job_id, created_at, next_attempt_at)
        select w.id, s.id, s.job_id, t.now, t.now
        from settled s
        join build_job j on j.id = s.job_id
        join build_webhook_endpoint w
          on (w.user_id is null or w.user_id = j.user_id)
         and (w.event_types is null or w.event_types @> jsonb_build_array(s.type))
        cross join t
        where s.published_at is not null
        on conflict (endpoint_id, event_id) do nothing
        returning id
      )""";

  private final Database db;
  private final QueueClock clock;
  private final WebhookTransport transport;
  private final Clock wallClock;

  /**
   * @param wallClock the clock of {@code webhook-timestamp}: a receiver compares it with its own,
   *     so it is the real time even where the queue's clock is a test's
   */
  public WebhookDeliveries(
      Database db, QueueClock clock, WebhookTransport transport, Clock wallClock) {
    this.db = db;
    this.clock = clock;
    this.transport = transport;
    this.wallClock = wallClock;
  }

  public WebhookDeliveries(Database db, QueueClock clock, WebhookTransport transport) {
    this(db, clock, transport, Clock.systemUTC());
  }

  /** One claimed delivery, with what its request is made of. */
  public record Due(
      long id,
      String endpoint,
      URI url,
      List<String> secrets,
      long eventId,
      long jobId,
      String userId,
      String kind,
      String type,
      String message,
      Instant at,
      String traceparent) {
    @Override
    public String toString() {
      return "delivery " + id + " of event " + eventId + " to " + endpoint;
    }
  }

  private static final String CLAIM_DUE =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      due as (
        select d.id from build_webhook_delivery d, t
        where d.status = 'pending' and d.next_attempt_at <= t.now
          and (d.claimed_until is null or d.claimed_until <= t.now)
          and not exists (select 1 from build_webhook_delivery p
                          where p.endpoint_id = d.endpoint_id and p.job_id = d.job_id
                            and p.status = 'pending' and p.event_id < d.event_id)
        order by d.next_attempt_at, d.id
        limit :limit
        for update of d skip locked
      ),
      claimed as (
        update build_webhook_delivery d set claimed_until = t.now + :claimMs * interval '1 millisecond'
        from due, t
        where d.id = due.id
        returning d.id, d.endpoint_id, d.event_id
      )
      -- Size: at most BATCH rows of a URL, two secrets, ids and a message (an error text cut to
      -- RowLimits.MAX_ERROR_BYTES), at most 8 KB each.
      select c.id, w.name, w.url, w.secrets::text as secrets, e.id as event_id, e.job_id, j.user_id,
        j.kind, e.type, e.detail ->> 'message' as message, e.at, j.traceparent
      from claimed c
      join build_webhook_endpoint w on w.id = c.endpoint_id
      join build_job_event e on e.id = c.event_id
      join build_job j on j.id = e.job_id
      order by c.id
      """;

  /**
   * Claims up to {@code limit} due deliveries for {@link #CLAIM}: pending, due, unclaimed, and each
   * the earliest pending one of its job for its endpoint. Concurrent deliverers claim disjoint
   * sets.
   */
  public List<Due> claimDue(int limit) {
    Params params = Params.of("now", clock.now(), "claimMs", CLAIM.toMillis(), "limit", limit);
    List<Due> out = new ArrayList<>();
    for (Row r : db.query(CLAIM_DUE, params)) {
      out.add(
          new Due(
              r.longValue("id"),
              r.string("name"),
              URI.create(r.string("url")),
              secrets(r.string("secrets")),
              r.longValue("event_id"),
              r.longValue("job_id"),
              r.string("user_id"),
              r.string("kind"),
              r.string("type"),
              r.string("message"),
              r.instant("at"),
              r.string("traceparent")));
    }
    return out;
  }

  private static List<String> secrets(String json) {
    try {
      List<String> out = new ArrayList<>();
      JSON.readTree(json).forEach(s -> out.add(s.asText()));
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("an endpoint's secrets are not a JSON array", e);
    }
  }

  /** What came of one delivery's attempt. */
  public record Outcome(long id, WebhookTransport.Answer answer) {}

  private static final String RECORD =
      """
      with t as (select coalesce(:now::timestamptz, now()) as now),
      o as (
        select * from json_to_recordset(:outcomes::json)
          as o(id bigint, ok boolean, status integer, error text)
      ),
      next as (
        select d.id, o.ok, o.status, o.error,
               coalesce(d.first_attempt_at, t.now) as first_at,
               t.now + least(:firstMs * power(2, least(d.attempts, 30)), :maxBackoffMs)
                       * interval '1 millisecond' as retry_at
        from build_webhook_delivery d join o on o.id = d.id, t
      )
      update build_webhook_delivery d set
        attempts = d.attempts + 1,
        first_attempt_at = n.first_at,
        last_attempt_at = t.now,
        last_status = nullif(n.status, 0),
        last_error = case when n.ok then null else left(n.error, 1000) end,
        status = case when n.ok then 'delivered'
                      when n.retry_at > n.first_at + :maxAgeMs * interval '1 millisecond' then 'dead'
                      else 'pending' end,
        delivered_at = case when n.ok then t.now end,
        next_attempt_at = case when n.ok then null
                               when n.retry_at > n.first_at + :maxAgeMs * interval '1 millisecond' then null
                               else n.retry_at end,
        claimed_until = null
      from next n, t
      where d.id = n.id and d.status = 'pending'
      returning d.id, d.status
      """;

  /**
   * Records attempts in one statement: an acknowledged delivery is {@code delivered}; another is
   * tried again after {@link #FIRST_BACKOFF} doubled per attempt before it (at most {@link
   * #MAX_BACKOFF}), or is {@code dead} when that retry would come after {@link #MAX_AGE} from its
   * first attempt. Guarded by {@code pending}: a delivery a replay or another deliverer settled is
   * left alone. Returns each recorded delivery's new status.
   */
  public Map<Long, String> record(List<Outcome> outcomes) {
    if (outcomes.isEmpty()) {
      return Map.of();
    }
    ArrayNode rows = JSON.createArrayNode();
    for (Outcome o : outcomes) {
      ObjectNode row = rows.addObject();
      row.put("id", o.id());
      row.put("ok", o.answer().ok());
      row.put("status", o.answer().status());
      row.put("error", o.answer().ok() ? null : o.answer().error());
    }
    Params params =
        Params.of("now", clock.now(), "outcomes", rows.toString())
            .and("firstMs", FIRST_BACKOFF.toMillis())
            .and("maxBackoffMs", MAX_BACKOFF.toMillis())
            .and("maxAgeMs", MAX_AGE.toMillis());
    Map<Long, String> out = new LinkedHashMap<>();
    for (Row r : db.query(RECORD, params)) {
      out.put(r.longValue("id"), r.string("status"));
    }
    return out;
  }

  /** What one pass did. */
  public record Pass(int attempts, int delivered, int dead) {}

  /**
   * Delivers what is due, a batch at a time ({@link #BATCH}, {@link #PARALLEL} requests at once),
   * until a claim finds nothing due or {@code budget} is spent. Each batch's outcomes are recorded
   * before the next claim, so a job's next event is claimed only after its earlier one was
   * acknowledged.
   */
  public Pass deliverDue(Duration budget) {
    long deadline = System.nanoTime() + budget.toNanos();
    int attempts = 0;
    int delivered = 0;
    int dead = 0;
    ExecutorService pool = Executors.newFixedThreadPool(PARALLEL, WebhookDeliveries::thread);
    try {
      while (System.nanoTime() < deadline) {
        List<Due> batch = claimDue(BATCH);
        if (batch.isEmpty()) {
          break;
        }
        List<Future<Outcome>> sent = new ArrayList<>();
        for (Due d : batch) {
          sent.add(pool.submit(() -> new Outcome(d.id(), send(d))));
        }
        List<Outcome> outcomes = new ArrayList<>();
        for (Future<Outcome> f : sent) {
          outcomes.add(join(f));
        }
        Map<Long, String> recorded = record(outcomes);
        attempts += outcomes.size();
        delivered += (int) recorded.values().stream().filter("delivered"::equals).count();
        dead += (int) recorded.values().stream().filter("dead"::equals).count();
        // Claim again even after a short batch: an acknowledgement makes its job's next event due.
      }
    } finally {
      pool.shutdownNow();
    }
    if (dead > 0) {
      LOG.log(Level.WARNING, "{0} webhook deliveries are dead; an admin may replay them", dead);
    }
    return new Pass(attempts, delivered, dead);
  }

  private static Outcome join(Future<Outcome> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while delivering webhooks", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("a webhook delivery failed unexpectedly", e.getCause());
    }
  }

  private static Thread thread(Runnable r) {
    Thread t = new Thread(r, "buildqueue-webhook");
    t.setDaemon(true);
    return t;
  }

  /** Signs and sends one delivery; never throws for what the endpoint did. */
  WebhookTransport.Answer send(Due d) {
    byte[] body = body(d);
    String id = String.valueOf(d.eventId());
    long timestamp = wallClock.instant().getEpochSecond();
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", "application/json");
    headers.put("User-Agent", "buildqueue-webhooks");
    headers.put("webhook-id", id);
    headers.put("webhook-timestamp", String.valueOf(timestamp));
    headers.put("webhook-signature", WebhookSignature.header(d.secrets(), id, timestamp, body));
    TraceContext.parse(d.traceparent())
        .ifPresent(tc -> headers.put(TraceContext.HEADER, tc.newSpan().header()));
    try {
      return transport.post(d.url(), headers, body);
    } catch (RuntimeException e) {
      // The transport's own bug: logged without the request (its headers hold signatures).
      LOG.log(Level.WARNING, "{0} failed in the transport: {1}", d, e.getClass().getName());
      return WebhookTransport.Answer.failed(0, "the delivery failed in the sender");
    }
  }

  /**
   * The request body: Standard Webhooks' shape ({@code type}, {@code timestamp}, {@code data}),
   * with the job event as {@code data} (the fields of the EventBridge detail).
   */
  static byte[] body(Due d) {
    ObjectNode root = JSON.createObjectNode();
    root.put("type", "job." + d.type());
    root.put("timestamp", d.at().toString());
    ObjectNode data = root.putObject("data");
    data.put("eventId", d.eventId());
    data.put("jobId", d.jobId());
    data.put("userId", d.userId());
    data.put("kind", d.kind());
    data.put("type", d.type());
    data.put("message", d.message() == null ? "" : d.message());
    data.put("at", d.at().toString());
    if (d.traceparent() != null) {
      data.put("traceparent", d.traceparent());
    }
    return root.toString().getBytes(StandardCharsets.UTF_8);
  }
}
