package buildqueue.db;

/**
 * A statement broke a unique constraint (SQLSTATE 23505). The queue uses unique indexes as
 * semaphores, so this is an expected outcome ("another caller won"), not a fault; each adapter maps
 * its own way of reporting it to this type so the core never parses driver messages.
 */
public class UniqueViolationException extends DatabaseException {
  public UniqueViolationException(String message, Throwable cause) {
    super(message, cause);
  }
}
