package buildqueue.db;

import buildqueue.BuildQueueException;

/** A statement could not be executed. The adapter's message says which statement and why. */
public class DatabaseException extends BuildQueueException {
  public DatabaseException(String message, Throwable cause) {
    super(message, cause);
  }

  public DatabaseException(String message) {
    super(message);
  }
}
