package buildqueue.core;

import buildqueue.BuildQueueException;

/**
 * A user already has as many queued jobs as their quota allows: the submission wrote nothing.
 *
 * @see QueueConfig#maxQueuedJobs()
 */
public final class QueueFullException extends BuildQueueException {
  private final String userId;
  private final long queued;
  private final boolean moreThanCounted;
  private final int limit;

  /**
   * @param queued the user's queued jobs as counted (the count stops just past the limit)
   * @param moreThanCounted whether the count stopped: the user has at least {@code queued}
   */
  public QueueFullException(String userId, long queued, boolean moreThanCounted, int limit) {
    super(
        "user "
            + userId
            + " has "
            + (moreThanCounted ? "more than " + limit : String.valueOf(queued))
            + " queued jobs; the limit is "
            + limit
            + ". Nothing was written.");
    this.userId = userId;
    this.queued = queued;
    this.moreThanCounted = moreThanCounted;
    this.limit = limit;
  }

  public String userId() {
    return userId;
  }

  public long queued() {
    return queued;
  }

  public boolean moreThanCounted() {
    return moreThanCounted;
  }

  public int limit() {
    return limit;
  }
}
