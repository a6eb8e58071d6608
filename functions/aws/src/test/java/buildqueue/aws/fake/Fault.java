package buildqueue.aws.fake;

import buildqueue.aws.fake.DataApiFake.Operation;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A failure the {@link DataApiFake} answers with instead of (or after) doing the call, for fault
 * tests. Build one, narrow it, and hand it to {@link DataApiFake#inject}:
 *
 * <pre>{@code
 * fake.inject(Fault.resuming().times(3));                            // the next 3 calls
 * fake.inject(Fault.resuming().during(Duration.ofSeconds(20)));      // every call for 20 s
 * fake.inject(Fault.error(504, "DatabaseUnavailableException", "writer unavailable")
 *     .on(Operation.EXECUTE).whereSql(sql -> sql.contains("insert into build_worker"))
 *     .afterApplying());                                              // the write happens, its answer is lost
 * fake.inject(Fault.delay(Duration.ofSeconds(2)).on(Operation.COMMIT)); // slow, then normal
 * }</pre>
 *
 * Without {@link #times} or {@link #during} a fault fires once. Faults are tried in the order they
 * were injected; the first that matches a call fires. Every call is counted, faulted or not.
 */
public final class Fault {
  static final String RESUMING_MESSAGE =
      "The database is resuming after being auto-paused. Please wait a few seconds and try again.";

  final int status;
  final String errorType;
  final String message;
  final Duration delay;
  private Set<Operation> operations = EnumSet.allOf(Operation.class);
  private Predicate<String> sql = s -> true;
  private final AtomicInteger remaining = new AtomicInteger(1);
  private boolean unlimited;
  private Duration window;
  private volatile Instant until;
  boolean afterApplying;

  private Fault(int status, String errorType, String message, Duration delay) {
    this.status = status;
    this.errorType = errorType;
    this.message = message;
    this.delay = delay;
  }

  /** {@code DatabaseResumingException} (HTTP 400): the call did not run. */
  public static Fault resuming() {
    return new Fault(400, "DatabaseResumingException", RESUMING_MESSAGE, null);
  }

  /**
   * Any Data API error, e.g. 503 {@code ServiceUnavailableError}, 504 {@code
   * DatabaseUnavailableException}.
   */
  public static Fault error(int status, String errorType, String message) {
    return new Fault(status, errorType, message, null);
  }

  /** Answers normally, but only after {@code d}: for client timeouts. */
  public static Fault delay(Duration d) {
    return new Fault(200, null, null, d);
  }

  public Fault times(int n) {
    remaining.set(n);
    return this;
  }

  /** Fires on every matching call from {@link DataApiFake#inject} until {@code d} has passed. */
  public Fault during(Duration d) {
    window = d;
    unlimited = true;
    return this;
  }

  public Fault on(Operation... ops) {
    operations = EnumSet.of(ops[0], ops);
    return this;
  }

  /** Only Execute calls whose SQL matches. */
  public Fault whereSql(Predicate<String> p) {
    operations = EnumSet.of(Operation.EXECUTE);
    sql = p;
    return this;
  }

  /** Runs the call (and commits it if it autocommits) but answers with the error: a lost answer. */
  public Fault afterApplying() {
    afterApplying = true;
    return this;
  }

  void armed(Instant now) {
    if (window != null) {
      until = now.plus(window);
    }
  }

  boolean expired(Instant now) {
    return until != null ? now.isAfter(until) : !unlimited && remaining.get() <= 0;
  }

  /** Whether this fault fires on the call; consumes one use when it does. */
  boolean fire(Operation op, String statement, Instant now) {
    if (!operations.contains(op)
        || (op == Operation.EXECUTE && !sql.test(statement == null ? "" : statement))) {
      return false;
    }
    if (until != null && now.isAfter(until)) {
      return false;
    }
    return unlimited || remaining.getAndUpdate(r -> Math.max(0, r - 1)) > 0;
  }
}
