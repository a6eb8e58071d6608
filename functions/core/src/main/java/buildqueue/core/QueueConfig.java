package buildqueue.core;

import buildqueue.BuildQueueException;
import java.time.Duration;

/**
 * The queue's settings, immutable. Every field has a documented default ({@link #defaults()});
 * build one with {@link #builder()}, naming only the fields that differ, or change one with a
 * wither.
 *
 * @param sharedSlots slots in the {@code shared} lane (default 1, as in the reference
 *     implementation, docs/architecture.md §1; at most {@link #MAX_SHARED_SLOTS}); dedicated lanes
 *     always have one
 * @param workerLifetime how long a worker may live; its lease is this plus {@code leaseSlack}
 *     (default 60 min)
 * @param leaseSlack how far the lease reaches past the lifetime (default 5 min): the margin in
 *     which an ambiguous launch keeps its slot after the worker would have had to stop
 * @param deadlineMargin the worker kills itself this long before its lease expires (default 60 s)
 * @param chainWindow a worker takes further jobs of its lane while less than this has passed since
 *     it started (default 5 min); 0 runs one job per worker
 * @param livenessInterval a worker's task is checked at most this often (default 5 s)
 * @param launchGrace a launch with no recorded outcome is retried by the tick after this (default
 *     60 s, longer than the platform client's own timeout)
 * @param maxLaunchFailures a job whose launch failed for capacity this many times fails (default 5)
 * @param launchBackoff wait before relaunching after a capacity failure, doubled each time (default
 *     10 s)
 * @param retention exited workers and finished jobs are deleted after this (default 7 days)
 * @param linger a worker whose lane has run empty waits this long for new work before it drains
 *     (default 0: off), polling its lane every {@link #lingerPoll()}, and only while the chain
 *     window and its lease allow. On Fargate a worker is billed for at least a minute and a new one
 *     takes 30–60 s to start, so lingering can cost less than launching the next job's worker.
 * @param sharedOrder how the {@code shared} lane picks its next job (default {@link
 *     SharedOrder#FAIR}: round robin by user); dedicated lanes are always FIFO
 * @param maxQueuedJobs how many queued jobs a user may have at once, unless an admin set the user's
 *     own limit (default 1,000); a submission beyond it is refused and writes nothing
 * @param ledger how workers are billed and priced, and the default budget (default {@link
 *     Ledger#fargate()})
 */
public record QueueConfig(
    int sharedSlots,
    Duration workerLifetime,
    Duration leaseSlack,
    Duration deadlineMargin,
    Duration chainWindow,
    Duration livenessInterval,
    Duration launchGrace,
    int maxLaunchFailures,
    Duration launchBackoff,
    Duration retention,
    Duration linger,
    SharedOrder sharedOrder,
    int maxQueuedJobs,
    Ledger ledger) {

  /** How the {@code shared} lane orders its jobs. */
  public enum SharedOrder {
    /**
     * Round robin by user: the next job is the oldest queued job of the user served least recently
     * among those with queued jobs; a job that ran and came back (an interruption, a launch
     * failure) goes first, as in FIFO.
     */
    FAIR,
    /** Oldest queued job first, whoever submitted it: the reference's order. */
    FIFO;

    /** The setting's name in flags and environment variables: {@code fair} or {@code fifo}. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The order a setting names; null if it names none. */
    public static SharedOrder ofLabel(String label) {
      for (SharedOrder o : values()) {
        if (o.label().equals(label)) {
          return o;
        }
      }
      return null;
    }
  }

  /** The defaults: each field as {@link Builder} starts it. */
  public static QueueConfig defaults() {
    return new Builder().build();
  }

  /** A builder from the defaults: name only what differs. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder from these settings. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** A user's queued jobs at most, unless an admin set their own limit. */
  public static final int DEFAULT_MAX_QUEUED_JOBS = 1000;

  /** Whether {@code lane} takes turns by user: the shared lane, unless set to FIFO. */
  public boolean takesTurns(String lane) {
    return sharedOrder == SharedOrder.FAIR && Lanes.SHARED.equals(lane);
  }

  /**
   * The most slots the shared lane may have. A lane's workers are read in one statement (for a
   * job's place in line and for the lanes page), whose answer must stay under the RDS Data API's 1
   * MiB: 100 workers of at most 3.5 KB each (see {@code SlotReads}) is a third of it.
   */
  public static final int MAX_SHARED_SLOTS = 100;

  public QueueConfig {
    if (sharedSlots < 1 || sharedSlots > MAX_SHARED_SLOTS) {
      throw new BuildQueueException(
          "sharedSlots must be from 1 to "
              + MAX_SHARED_SLOTS
              + " (a lane's workers are read in one RDS Data API"
              + " call, which returns at most 1 MiB), was "
              + sharedSlots);
    }
    positive("workerLifetime", workerLifetime);
    positive("leaseSlack", leaseSlack);
    positive("deadlineMargin", deadlineMargin);
    notNegative("chainWindow", chainWindow);
    notNegative("livenessInterval", livenessInterval);
    notNegative("launchGrace", launchGrace);
    notNegative("launchBackoff", launchBackoff);
    positive("retention", retention);
    notNegative("linger", linger);
    if (sharedOrder == null) {
      throw new BuildQueueException("sharedOrder must be fair or fifo, was null");
    }
    if (ledger == null) {
      throw new BuildQueueException("ledger must be set, was null");
    }
    if (maxQueuedJobs < 1) {
      throw new BuildQueueException("maxQueuedJobs must be at least 1, was " + maxQueuedJobs);
    }
    if (maxLaunchFailures < 1) {
      throw new BuildQueueException(
          "maxLaunchFailures must be at least 1, was " + maxLaunchFailures);
    }
    if (deadlineMargin.compareTo(workerLifetime.plus(leaseSlack)) >= 0) {
      throw new BuildQueueException(
          "deadlineMargin ("
              + deadlineMargin
              + ") must be shorter than the lease ("
              + workerLifetime.plus(leaseSlack)
              + ")");
    }
  }

  /** How long after launch a worker's slot is held without evidence: lifetime + slack. */
  public Duration lease() {
    return workerLifetime.plus(leaseSlack);
  }

  public QueueConfig withSharedSlots(int n) {
    return toBuilder().sharedSlots(n).build();
  }

  public QueueConfig withChainWindow(Duration d) {
    return toBuilder().chainWindow(d).build();
  }

  public QueueConfig withLease(Duration lifetime, Duration slack, Duration margin) {
    return toBuilder().workerLifetime(lifetime).leaseSlack(slack).deadlineMargin(margin).build();
  }

  public QueueConfig withLaunchGrace(Duration d) {
    return toBuilder().launchGrace(d).build();
  }

  public QueueConfig withLivenessInterval(Duration d) {
    return toBuilder().livenessInterval(d).build();
  }

  public QueueConfig withLinger(Duration d) {
    return toBuilder().linger(d).build();
  }

  public QueueConfig withSharedOrder(SharedOrder order) {
    return toBuilder().sharedOrder(order).build();
  }

  public QueueConfig withRetention(Duration d) {
    return toBuilder().retention(d).build();
  }

  public QueueConfig withMaxQueuedJobs(int n) {
    return toBuilder().maxQueuedJobs(n).build();
  }

  /** How often a lingering worker looks for new work: a twentieth of the linger, 10 ms to 1 s. */
  public Duration lingerPoll() {
    long ms = Math.max(10, Math.min(1000, linger.toMillis() / 20));
    return Duration.ofMillis(ms);
  }

  /**
   * Settings named one at a time, from the defaults (or from a config's {@link #toBuilder()});
   * {@link #build()} checks them together, as the record's constructor does.
   */
  public static final class Builder {
    private int sharedSlots = 1;
    private Duration workerLifetime = Duration.ofMinutes(60);
    private Duration leaseSlack = Duration.ofMinutes(5);
    private Duration deadlineMargin = Duration.ofSeconds(60);
    private Duration chainWindow = Duration.ofMinutes(5);
    private Duration livenessInterval = Duration.ofSeconds(5);
    private Duration launchGrace = Duration.ofSeconds(60);
    private int maxLaunchFailures = 5;
    private Duration launchBackoff = Duration.ofSeconds(10);
    private Duration retention = Duration.ofDays(7);
    private Duration linger = Duration.ZERO;
    private SharedOrder sharedOrder = SharedOrder.FAIR;
    private int maxQueuedJobs = DEFAULT_MAX_QUEUED_JOBS;
    private Ledger ledger = Ledger.fargate();

    private Builder() {}

    private Builder(QueueConfig c) {
      sharedSlots = c.sharedSlots;
      workerLifetime = c.workerLifetime;
      leaseSlack = c.leaseSlack;
      deadlineMargin = c.deadlineMargin;
      chainWindow = c.chainWindow;
      livenessInterval = c.livenessInterval;
      launchGrace = c.launchGrace;
      maxLaunchFailures = c.maxLaunchFailures;
      launchBackoff = c.launchBackoff;
      retention = c.retention;
      linger = c.linger;
      sharedOrder = c.sharedOrder;
      maxQueuedJobs = c.maxQueuedJobs;
      ledger = c.ledger;
    }

    public Builder sharedSlots(int n) {
      sharedSlots = n;
      return this;
    }

    public Builder workerLifetime(Duration d) {
      workerLifetime = d;
      return this;
    }

    public Builder leaseSlack(Duration d) {
      leaseSlack = d;
      return this;
    }

    public Builder deadlineMargin(Duration d) {
      deadlineMargin = d;
      return this;
    }

    public Builder chainWindow(Duration d) {
      chainWindow = d;
      return this;
    }

    public Builder livenessInterval(Duration d) {
      livenessInterval = d;
      return this;
    }

    public Builder launchGrace(Duration d) {
      launchGrace = d;
      return this;
    }

    public Builder maxLaunchFailures(int n) {
      maxLaunchFailures = n;
      return this;
    }

    public Builder launchBackoff(Duration d) {
      launchBackoff = d;
      return this;
    }

    public Builder retention(Duration d) {
      retention = d;
      return this;
    }

    public Builder linger(Duration d) {
      linger = d;
      return this;
    }

    public Builder sharedOrder(SharedOrder order) {
      sharedOrder = order;
      return this;
    }

    public Builder maxQueuedJobs(int n) {
      maxQueuedJobs = n;
      return this;
    }

    public Builder ledger(Ledger l) {
      ledger = l;
      return this;
    }

    /**
     * The settings; throws {@link BuildQueueException} naming the first field that is out of range.
     */
    public QueueConfig build() {
      return new QueueConfig(
          sharedSlots,
          workerLifetime,
          leaseSlack,
          deadlineMargin,
          chainWindow,
          livenessInterval,
          launchGrace,
          maxLaunchFailures,
          launchBackoff,
          retention,
          linger,
          sharedOrder,
          maxQueuedJobs,
          ledger);
    }
  }

  private static void positive(String name, Duration d) {
    if (d == null || d.isZero() || d.isNegative()) {
      throw new BuildQueueException(name + " must be a positive duration, was " + d);
    }
  }

  private static void notNegative(String name, Duration d) {
    if (d == null || d.isNegative()) {
      throw new BuildQueueException(name + " must not be negative, was " + d);
    }
  }
}
