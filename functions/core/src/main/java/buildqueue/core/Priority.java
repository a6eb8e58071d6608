package buildqueue.core;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * A job's priority: it orders its user's own queued jobs (the highest first, the oldest first among
 * equals) and never the turns between users (docs/architecture.md §4.7). {@link #NEXT} is an
 * admin's "run next": the job is the head of its lane, before retries and turns. Stored as a
 * smallint in {@code build_job.priority}: -1, 0, 1, 2.
 */
public enum Priority {
  LOW(-1),
  NORMAL(0),
  HIGH(1),
  /** Set only by {@code POST /jobs/{id}/run-next} (admins). */
  NEXT(2);

  private final int value;

  Priority(int value) {
    this.value = value;
  }

  /** The value stored in {@code build_job.priority}. */
  public int value() {
    return value;
  }

  /** The name the API uses: {@code low}, {@code normal}, {@code high}, {@code next}. */
  public String apiName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /** The priorities a user may choose (on submit, or by PATCH while queued). */
  public static final List<Priority> CHOSEN = List.of(LOW, NORMAL, HIGH);

  /** The chosen priority of this API name, or empty. */
  public static Optional<Priority> chosen(String apiName) {
    return CHOSEN.stream().filter(p -> p.apiName().equals(apiName)).findFirst();
  }

  /** The API name of a stored value. */
  public static String name(int value) {
    return Arrays.stream(values())
        .filter(p -> p.value == value)
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no priority " + value))
        .apiName();
  }
}
