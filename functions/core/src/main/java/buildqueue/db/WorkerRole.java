package buildqueue.db;

/**
 * The database role workers log in as (V005, docs/architecture.md §6.1): no table privileges, only
 * the worker transitions' functions. The migrations make it without a login; whoever deploys gives
 * it its password, from the worker's own secret (AWS) or the server's data directory (local).
 */
public final class WorkerRole {
  /** The role's name, as V005 creates it. */
  public static final String NAME = "buildqueue_worker";

  // The password is a bound parameter, so it is in no statement text and no log.
  private static final String ALLOW_LOGIN = "select build_worker_role_login(:password)";

  private WorkerRole() {}

  /** Lets the worker role log in with {@code password} (after the migrations made it). */
  public static void allowLogin(Database db, String password) {
    db.query(ALLOW_LOGIN, Params.of("password", password));
  }
}
