package buildqueue;

/**
 * Root of every exception buildqueue throws on purpose. Messages name the job or worker they are
 * about and say what happens next, so a log line alone is enough to act on.
 */
public class BuildQueueException extends RuntimeException {
  public BuildQueueException(String message) {
    super(message);
  }

  public BuildQueueException(String message, Throwable cause) {
    super(message, cause);
  }
}
