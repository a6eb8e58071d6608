package buildqueue.db;

import buildqueue.BuildQueueException;
import java.util.List;

/**
 * A migration this database has applied has another text (or name) in this build: a released
 * migration was edited. Thrown before anything is applied, so the database is as it was. The fix is
 * in the build, never in the database: restore the released text and put the change in a new
 * migration.
 */
public final class MigrationChangedException extends BuildQueueException {
  private final List<String> files;

  /**
   * @param files the changed files' names
   * @param details one per file: its name and what differs
   */
  MigrationChangedException(List<String> files, List<String> details) {
    super(
        "refusing to migrate: "
            + String.join("; ", details)
            + ". A released migration must not change: restore its released text and put the change in a"
            + " new migration. Nothing was applied.");
    this.files = List.copyOf(files);
  }

  /** The names of the changed migration files, as this build names them. */
  public List<String> files() {
    return files;
  }
}
