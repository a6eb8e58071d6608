package buildqueue.core;

import buildqueue.db.Json;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * When a queued job will probably start: a range from its lane's recent jobs, the jobs ahead of it
 * and the lane's slots.
 *
 * <p>The lane is replayed many times with durations drawn from its last {@link #MAX_SAMPLES}
 * finished jobs (within {@link #WINDOW}): each slot frees when its job ends (a job that has held
 * its slot for {@code e} ms draws among the samples that held theirs longer than {@code e}, from
 * its own kind's when the lane has {@link #MIN_KIND_SAMPLES} of them, else from all), each of the
 * jobs ahead takes the first free slot for a drawn time, and this job takes the next and starts
 * after a drawn start-up time. The range is the 10th to 90th percentile of those starts. The draws
 * are seeded by the job's id, so one lane state always gives one answer.
 *
 * <p>What it cannot know: jobs submitted later that go before this one (a new user's turn in a lane
 * that takes turns by user, a retry), and capacity the platform refuses (then {@code notBefore}
 * says more). The kinds of the jobs ahead are not read (that would cost a read per job); their
 * durations come from the lane's mix.
 *
 * @param from the 10th percentile of the replayed starts, whole seconds
 * @param to the 90th percentile, whole seconds
 * @param samples how many finished jobs of the lane it drew from
 */
public record StartEstimate(Instant from, Instant to, int samples) {
  /** The most recent finished jobs of a lane that an estimate draws from. */
  public static final int MAX_SAMPLES = 60;

  /** Only jobs that finished this recently are drawn from: a lane's load changes within a day. */
  public static final Duration WINDOW = Duration.ofHours(24);

  /** A running job's remaining time draws from its kind's samples when there are this many. */
  public static final int MIN_KIND_SAMPLES = 10;

  static final double LOW = 0.10;
  static final double HIGH = 0.90;
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

  /** A job holding one of the lane's slots: its kind, and for how long it has held it. */
  public record Held(String kind, long heldMs) {}

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
      List<Held> held,
      int jobsAhead,
      Instant notBefore,
      List<Sample> samples,
      long seed) {
    if (samples.isEmpty() || now == null) {
      return Optional.empty();
    }
    long[] slotMs = samples.stream().mapToLong(Sample::slotMs).toArray();
    long[] startMs = samples.stream().mapToLong(Sample::startMs).toArray();
    long waitFloor =
        notBefore == null ? 0 : Math.max(0, Duration.between(now, notBefore).toMillis());
    int trials =
        Math.max(MIN_TRIALS, Math.min(MAX_TRIALS, MAX_DRAWS / (jobsAhead + held.size() + 1)));
    SplittableRandom random = new SplittableRandom(seed);
    long[] starts = new long[trials];
    int slots = Math.max(1, capacity);
    for (int t = 0; t < trials; t++) {
      PriorityQueue<Long> free = new PriorityQueue<>();
      for (Held h : held) {
        free.add(remaining(h, samples, random));
      }
      while (free.size() < slots) {
        free.add(0L);
      }
      if (free.size() > slots) {
        // More held than the capacity (it was lowered): only the first `slots` ever take a job.
        List<Long> all = new ArrayList<>(free);
        all.sort(null);
        free = new PriorityQueue<>(all.subList(0, slots));
      }
      for (int i = 0; i < jobsAhead; i++) {
        long at = free.poll();
        free.add(at + slotMs[random.nextInt(slotMs.length)]);
      }
      starts[t] = Math.max(free.poll(), waitFloor) + startMs[random.nextInt(startMs.length)];
    }
    Arrays.sort(starts);
    return Optional.of(
        new StartEstimate(
            now.plusSeconds(Math.floorDiv(quantile(starts, LOW), 1000)),
            now.plusSeconds(Math.floorDiv(quantile(starts, HIGH) + 999, 1000)),
            samples.size()));
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
