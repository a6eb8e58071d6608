package buildqueue.aws.db;

import buildqueue.db.DatabaseException;
import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import software.amazon.awssdk.services.rdsdata.model.DatabaseResumingException;

/**
 * Retries a Data API call while Aurora Serverless v2 resumes from auto-pause. {@code
 * DatabaseResumingException} means the call triggered the resume and did not run, so repeating it
 * is safe whatever the call was; a resume takes up to about 15 s. Nothing else is retried (see
 * {@link DataApiClients}).
 *
 * <p>Waits 0.5, 1, 2, 4, 5, 5, … s between attempts and gives up once the next wait would pass the
 * budget (default 30 s), so a caller is held at most about the budget plus one call.
 */
public final class ResumeRetry {
  /** How long a paused cluster may take to answer before we give up; 2× the documented resume. */
  public static final Duration DEFAULT_BUDGET = Duration.ofSeconds(30);

  private static final List<Duration> BACKOFF =
      List.of(
          Duration.ofMillis(500),
          Duration.ofSeconds(1),
          Duration.ofSeconds(2),
          Duration.ofSeconds(4));
  private static final Duration MAX_PAUSE = Duration.ofSeconds(5);

  /** Waits; tests pass one that records the pauses and moves a fake clock. */
  @FunctionalInterface
  public interface Sleeper {
    void sleep(Duration d) throws InterruptedException;
  }

  private final Duration budget;
  private final Sleeper sleeper;
  private final LongSupplier nanoTime;

  public ResumeRetry(Duration budget, Sleeper sleeper, LongSupplier nanoTime) {
    if (budget.isNegative()) {
      throw new IllegalArgumentException("resume budget must not be negative, got " + budget);
    }
    this.budget = budget;
    this.sleeper = sleeper;
    this.nanoTime = nanoTime;
  }

  public static ResumeRetry standard() {
    return new ResumeRetry(DEFAULT_BUDGET, d -> Thread.sleep(d.toMillis()), System::nanoTime);
  }

  public Duration budget() {
    return budget;
  }

  /**
   * Runs {@code call}, repeating it while the database is resuming.
   *
   * @param what names the call in the give-up message, e.g. the statement's first line
   */
  <T> T call(String what, Supplier<T> call) {
    long start = nanoTime.getAsLong();
    for (int attempt = 1; ; attempt++) {
      try {
        return call.get();
      } catch (DatabaseResumingException e) {
        Duration pause = pause(attempt);
        Duration elapsed = Duration.ofNanos(nanoTime.getAsLong() - start);
        if (elapsed.plus(pause).compareTo(budget) > 0) {
          throw new DatabaseException(
              "the Aurora cluster is still resuming from auto-pause after "
                  + attempt
                  + " attempts over "
                  + elapsed.toSeconds()
                  + " s (budget "
                  + budget.toSeconds()
                  + " s); nothing was run: "
                  + what
                  + ". Try again in a little while.",
              e);
        }
        sleep(pause, what, e);
      }
    }
  }

  private static Duration pause(int attempt) {
    return attempt <= BACKOFF.size() ? BACKOFF.get(attempt - 1) : MAX_PAUSE;
  }

  private void sleep(Duration pause, String what, DatabaseResumingException cause) {
    try {
      sleeper.sleep(pause);
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      DatabaseException e =
          new DatabaseException(
              "interrupted while waiting for the Aurora cluster to resume; nothing was run: "
                  + what,
              cause);
      e.addSuppressed(interrupted);
      throw e;
    }
  }
}
