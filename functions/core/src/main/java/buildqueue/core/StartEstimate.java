package buildqueue.core;

import buildqueue.db.Json;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * When a queued job will probably start: a range from its lane's recent jobs, the jobs ahead of it
 * and the lane's slots.
 *
 * <p>The lane is replayed many times with durations drawn from its last {@link #MAX_SAMPLES}
 * finished jobs (within {@link #WINDOW}; each replay from a resample of them, so that how little a
 * few dozen jobs say widens the range over a long queue). Each slot frees when its job ends (a job
 * that has held its slot for {@code e} ms draws among the samples that held theirs longer than
 * {@code e}, from its own kind's when the lane has {@link #MIN_KIND_SAMPLES} of them, else from
 * all). Each job ahead takes the first slot to free: at once if that slot's worker is still within
 * its chain window, else after a drawn launch time (a new worker), and runs for a drawn run time;
 * this job takes the next slot the same way. The range is the 5th to 95th percentile of those
 * starts. The draws are seeded by the job's id, so one lane state always gives one answer.
 *
 * <p>What it cannot know: jobs submitted later that go before this one (a new user's turn in a lane
 * that takes turns by user, a retry), and capacity the platform refuses (then {@code notBefore}
 * says more). The kinds of the jobs ahead are not read (that would cost a read per job); their
 * durations come from the lane's mix.
 *
 * @param from the 5th percentile of the replayed starts, whole seconds
 * @param to the 95th percentile, whole seconds
 * @param samples how many finished jobs of the lane it drew from
 */
public record StartEstimate(Instant from, Instant to, int samples) {
  /** The most recent finished jobs of a lane that an estimate draws from. */
  public static final int MAX_SAMPLES = 60;

  /** Only jobs that finished this recently are drawn from: a lane's load changes within a day. */
  public static final Duration WINDOW = Duration.ofHours(24);

  /** A running job's remaining time draws from its kind's samples when there are this many. */
  public static final int MIN_KIND_SAMPLES = 10;

  static final double LOW = 0.05;
  static final double HIGH = 0.95;
  private static final int MAX_TRIALS = 200;
  private static final int MIN_TRIALS = 20;

  /** Draws times jobs ahead: the trials shrink so that one estimate stays within this many. */
  private static final int MAX_DRAWS = 400_000;

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * One finished job of the lane: its kind, from dispatch to start ({@code startMs}: a fresh
   * worker's launch, or nothing for a chained job) and from dispatch to end ({@code slotMs}: how
   * long it held its slot).
   */
  public record Sample(String kind, long startMs, long slotMs) {}

  /**
   * A job holding one of the lane's slots: its kind, for how long it has held the slot, and how
   * long its worker has run (0 while it starts).
   */
  public record Held(String kind, long heldMs, long workerAgeMs) {}

  /** The samples as the waiting read returns them: {@code [[kind, startMs, slotMs], ...]}. */
  static List<Sample> samples(Json json) {
    try {
      List<Sample> out = new ArrayList<>();
      for (JsonNode s : JSON.readTree(json.text())) {
        out.add(new Sample(s.get(0).asText(), Math.max(0, s.get(1).asLong()), s.get(2).asLong()));
      }
      return out;
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("the database answered samples that are not JSON", e);
    }
  }

  /**
   * The estimate, or empty when the lane has no finished job to draw from.
   *
   * @param now the time of the read the inputs come from
   * @param capacity the lane's slots
   * @param held the jobs holding slots now
   * @param jobsAhead queued jobs the lane takes before this one
   * @param notBefore the job is not dispatched before this (null: no such bound)
   * @param seed fixes the draws (the job's id)
   */
  public static Optional<StartEstimate> of(
      Instant now,
      int capacity,
      Duration chainWindow,
      List<Held> held,
      int jobsAhead,
      Instant notBefore,
      List<Sample> samples,
      long seed) {
    if (samples.isEmpty() || now == null) {
      return Optional.empty();
    }
    long waitFloor =
        notBefore == null ? 0 : Math.max(0, Duration.between(now, notBefore).toMillis());
    long windowMs = chainWindow.toMillis();
    int trials =
        Math.max(MIN_TRIALS, Math.min(MAX_TRIALS, MAX_DRAWS / (jobsAhead + held.size() + 1)));
    SplittableRandom random = new SplittableRandom(seed);
    long[] starts = new long[trials];
    int slots = Math.max(1, capacity);
    int n = samples.size();
    for (int t = 0; t < trials; t++) {
      // Each trial draws from a resample of the samples (a bootstrap): a few dozen jobs say only
      // roughly what the lane's jobs take, and over many jobs ahead that error adds up; a range
      // drawn from the samples alone would be too narrow for a long queue.
      List<Sample> drawn = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        drawn.add(samples.get(random.nextInt(n)));
      }
      long[] runMs = drawn.stream().mapToLong(x -> Math.max(0, x.slotMs() - x.startMs())).toArray();
      long[] launchMs = drawn.stream().mapToLong(Sample::startMs).filter(ms -> ms > 0).toArray();
      PriorityQueue<Slot> free = new PriorityQueue<>(Comparator.comparingLong(Slot::freeAt));
      for (Held h : held) {
        free.add(new Slot(remaining(h, drawn, random), -h.workerAgeMs()));
      }
      while (free.size() < slots) {
        free.add(new Slot(0, null));
      }
      if (free.size() > slots) {
        // More held than the capacity (it was lowered): only the first `slots` ever take a job.
        List<Slot> all = new ArrayList<>(free);
        all.sort(free.comparator());
        free = new PriorityQueue<>(free.comparator());
        free.addAll(all.subList(0, slots));
      }
      for (int i = 0; i < jobsAhead; i++) {
        Slot slot = free.poll();
        Slot taken = slot.take(slot.freeAt(), windowMs, launchMs, random);
        free.add(
            new Slot(taken.freeAt() + runMs[random.nextInt(runMs.length)], taken.workerFrom()));
      }
      Slot slot = free.poll();
      starts[t] =
          slot.take(Math.max(slot.freeAt(), waitFloor), windowMs, launchMs, random).freeAt();
    }
    Arrays.sort(starts);
    return Optional.of(
        new StartEstimate(
            now.plusSeconds(Math.floorDiv(quantile(starts, LOW), 1000)),
            now.plusSeconds(Math.floorDiv(quantile(starts, HIGH) + 999, 1000)),
            samples.size()));
  }

  /**
   * A slot in a replay: when it frees (ms from now), and since when its worker runs (null: no
   * worker, a job there waits for a launch).
   */
  private record Slot(long freeAt, Long workerFrom) {
    /**
     * A job takes the slot at {@code at}: its worker's chain takes it at once while the chain
     * window is open; otherwise the worker exits and a new one is launched for it. Answers when the
     * job starts and since when its worker runs.
     */
    Slot take(long at, long windowMs, long[] launchMs, SplittableRandom random) {
      if (workerFrom != null && at - workerFrom < windowMs) {
        return new Slot(at, workerFrom);
      }
      long started = at + (launchMs.length == 0 ? 0 : launchMs[random.nextInt(launchMs.length)]);
      return new Slot(started, started);
    }
  }

  /**
   * How long a held slot stays held: a draw among the samples (of its kind when there are enough)
   * that held theirs longer than this one has so far; none did, so it is overdue: any moment.
   */
  private static long remaining(Held h, List<Sample> samples, SplittableRandom random) {
    List<Sample> ofKind = samples.stream().filter(s -> s.kind().equals(h.kind())).toList();
    List<Sample> pool = ofKind.size() >= MIN_KIND_SAMPLES ? ofKind : samples;
    long[] longer = pool.stream().mapToLong(Sample::slotMs).filter(ms -> ms > h.heldMs()).toArray();
    return longer.length == 0 ? 0 : longer[random.nextInt(longer.length)] - h.heldMs();
  }

  private static long quantile(long[] sorted, double q) {
    return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  }
}
