package buildqueue.core;

/** A worker's states, as stored in {@code build_worker.status}. */
public enum WorkerStatus {
  LAUNCHING,
  RUNNING,
  DRAINING,
  EXITED;

  public String sql() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  public static WorkerStatus of(String sql) {
    return valueOf(sql.toUpperCase(java.util.Locale.ROOT));
  }
}
