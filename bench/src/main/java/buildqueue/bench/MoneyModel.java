package buildqueue.bench;

import buildqueue.core.ExitTransitions;
import buildqueue.core.Ledger;
import java.math.BigDecimal;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Random;

/**
 * Figure 6's money per job: the workers a replay ran, billed by the ledger's rules (rounded up to
 * its step, at least its minimum) at its prices, on on-demand or on Fargate Spot. On Spot a worker
 * is reclaimed at random (a Poisson process over its Spot time): the reclaimed task is billed to
 * the reclaim, the work its job did since its last progress is lost, and a new task's start-up is
 * billed before the job goes on from that progress; the rest of the worker's chain follows on the
 * new task. A job reclaimed {@link ExitTransitions#MAX_RECLAIMS} times has its next attempt, and
 * the chain after it, on on-demand, as the queue does. The replay's own timing stays as it was:
 * reclaims cost money here, not waits.
 */
final class MoneyModel {
  /**
   * How often a build writes progress (BUILDQUEUE_PROGRESS) that its next attempt resumes from, in
   * model seconds of its run.
   */
  static final double PROGRESS_EVERY_S = 60;

  /** A build that writes no progress: a reclaim loses all it did. */
  static final double NO_PROGRESS = Double.POSITIVE_INFINITY;

  /** Draws of the reclaim stream each Spot figure is the mean of. */
  static final int DRAWS = 1_000;

  private MoneyModel() {}

  /** A job's run on a worker, in model seconds from the worker's launch request. */
  record Span(double from, double to) {}

  /**
   * One worker of a replay, in model seconds from its launch request: its start-up ended (its
   * worker loop began) at {@code startedAt}, it ran {@code jobs} in order, it exited at {@code
   * exitedAt}.
   */
  record Worker(double startedAt, List<Span> jobs, double exitedAt) {}

  /**
   * Billed seconds by capacity (means, for a Spot figure), the reclaims, and the jobs that moved to
   * on-demand after {@link ExitTransitions#MAX_RECLAIMS} reclaims.
   */
  record Bill(double onDemandSeconds, double spotSeconds, double reclaims, double movedToOnDemand) {
    /** Dollars at the ledger's prices for its worker size. */
    BigDecimal dollars(Ledger ledger) {
      return dollars(ledger, "on-demand", onDemandSeconds)
          .add(dollars(ledger, "spot", spotSeconds));
    }

    private static BigDecimal dollars(Ledger ledger, String capacity, double seconds) {
      BigDecimal s = BigDecimal.valueOf(seconds);
      return ledger
          .prices(capacity)
          .cost(
              s.multiply(BigDecimal.valueOf(ledger.vcpuMilli())).movePointLeft(3),
              s.multiply(BigDecimal.valueOf(ledger.memoryMb()))
                  .divide(BigDecimal.valueOf(1024), java.math.MathContext.DECIMAL64));
    }
  }

  /** Where a Spot bill's randomness comes from: reclaims and the new tasks' start-ups. */
  interface Draws {
    /** Spot seconds until the next reclaim. */
    double untilReclaim();

    /** A new task's start-up, in seconds. */
    double startUp();

    /**
     * Reclaims at {@code perHour} per hour of Spot time (a Poisson process), start-ups uniform in
     * {@code [minS, maxS)}, from one seeded stream.
     */
    static Draws seeded(double perHour, double minS, double maxS, long seed) {
      Random random = new Random(seed);
      return new Draws() {
        @Override
        public double untilReclaim() {
          return perHour <= 0
              ? Double.POSITIVE_INFINITY
              : -Math.log(1 - random.nextDouble()) * 3600 / perHour;
        }

        @Override
        public double startUp() {
          return minS + random.nextDouble() * (maxS - minS);
        }
      };
    }
  }

  /** A task's billed seconds: rounded up to the ledger's step, at least its minimum. */
  static double billed(Ledger ledger, double seconds) {
    double step = ledger.billingStep().toNanos() / 1e9;
    double minimum = ledger.billingMinimum().toNanos() / 1e9;
    return Math.max(minimum, Math.ceil(seconds / step) * step);
  }

  /** Every worker on on-demand, billed from its launch request to its exit. */
  static Bill onDemand(List<Worker> workers, Ledger ledger) {
    double seconds = 0;
    for (Worker w : workers) {
      seconds += billed(ledger, w.exitedAt());
    }
    return new Bill(seconds, 0, 0, 0);
  }

  /**
   * The mean of {@link #DRAWS} Spot bills of the same workers, each with its own reclaims from one
   * stream seeded by {@code seed}.
   */
  static Bill spotMean(
      List<Worker> workers, Ledger ledger, double perHour, double progressEvery, long seed) {
    Draws draws = Draws.seeded(perHour, FargateModel.START_MIN_S, FargateModel.START_MAX_S, seed);
    double onDemand = 0;
    double spot = 0;
    double reclaims = 0;
    double moved = 0;
    for (int i = 0; i < DRAWS; i++) {
      Bill b = spot(workers, ledger, progressEvery, draws);
      onDemand += b.onDemandSeconds();
      spot += b.spotSeconds();
      reclaims += b.reclaims();
      moved += b.movedToOnDemand();
    }
    return new Bill(onDemand / DRAWS, spot / DRAWS, reclaims / DRAWS, moved / DRAWS);
  }

  /** One Spot bill of the workers with the reclaims {@code draws} gives. */
  static Bill spot(List<Worker> workers, Ledger ledger, double progressEvery, Draws draws) {
    Bill total = new Bill(0, 0, 0, 0);
    for (Worker w : workers) {
      Bill b = new SpotWorker(w, ledger, progressEvery, draws).bill();
      total =
          new Bill(
              total.onDemandSeconds() + b.onDemandSeconds(),
              total.spotSeconds() + b.spotSeconds(),
              total.reclaims() + b.reclaims(),
              total.movedToOnDemand() + b.movedToOnDemand());
    }
    return total;
  }

  private enum Part {
    /** A task's start-up, for {@code job} (-1: none). */
    START_UP,
    /** Waiting for {@code job}, the worker's next. */
    IDLE,
    /** Running {@code job}, from {@code done} seconds of it on. */
    JOB,
    /** Waiting after the last job, until the chain window closes. */
    TAIL
  }

  private record Piece(Part part, int job, double done, double length) {}

  /** One worker's life on Spot, piece by piece, with the tasks that replace it. */
  private static final class SpotWorker {
    private final Ledger ledger;
    private final double progressEvery;
    private final Draws draws;
    private final Deque<Piece> pieces = new ArrayDeque<>();
    private final int[] reclaimsOf;
    private double onDemandSeconds;
    private double spotSeconds;
    private int reclaims;
    private int moved;

    SpotWorker(Worker w, Ledger ledger, double progressEvery, Draws draws) {
      this.ledger = ledger;
      this.progressEvery = progressEvery;
      this.draws = draws;
      this.reclaimsOf = new int[w.jobs().size()];
      add(Part.START_UP, w.jobs().isEmpty() ? -1 : 0, 0, w.startedAt());
      double at = w.startedAt();
      for (int j = 0; j < w.jobs().size(); j++) {
        Span s = w.jobs().get(j);
        add(Part.IDLE, j, 0, s.from() - at);
        add(Part.JOB, j, 0, s.to() - s.from());
        at = s.to();
      }
      add(Part.TAIL, -1, 0, w.exitedAt() - at);
    }

    private void add(Part part, int job, double done, double length) {
      if (length > 0) {
        pieces.addLast(new Piece(part, job, done, length));
      }
    }

    Bill bill() {
      boolean onDemand = false;
      boolean running = true; // a task is billing
      double task = 0; // its seconds so far
      double untilReclaim = draws.untilReclaim();
      while (!pieces.isEmpty()) {
        Piece p = pieces.pollFirst();
        if (onDemand || untilReclaim >= p.length()) {
          task += p.length();
          untilReclaim -= onDemand ? 0 : p.length();
          continue;
        }
        // Reclaimed inside this piece: the task is billed to here.
        spotSeconds += billed(ledger, task + untilReclaim);
        reclaims++;
        double into = untilReclaim;
        task = 0;
        running = false;
        untilReclaim = draws.untilReclaim();
        if (p.part() == Part.TAIL || p.job() < 0) {
          continue; // nothing was waiting for this worker: no task replaces it
        }
        if (p.part() != Part.IDLE && ++reclaimsOf[p.job()] == ExitTransitions.MAX_RECLAIMS) {
          onDemand = true;
          moved++;
        }
        if (p.part() == Part.JOB) {
          double did = p.done() + into;
          double resume =
              Double.isInfinite(progressEvery)
                  ? 0
                  : Math.floor(did / progressEvery) * progressEvery;
          pieces.addFirst(new Piece(Part.JOB, p.job(), resume, p.done() + p.length() - resume));
        }
        // The rest of an interrupted start-up or wait is not billed: a new task starts instead.
        pieces.addFirst(new Piece(Part.START_UP, p.job(), 0, draws.startUp()));
        running = true;
      }
      if (running) {
        if (onDemand) {
          onDemandSeconds += billed(ledger, task);
        } else {
          spotSeconds += billed(ledger, task);
        }
      }
      return new Bill(onDemandSeconds, spotSeconds, reclaims, moved);
    }
  }
}
