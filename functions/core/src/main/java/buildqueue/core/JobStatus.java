package buildqueue.core;

/** A job's states, as stored in {@code build_job.status}. */
public enum JobStatus {
  QUEUED,
  DISPATCHED,
  RUNNING,
  SUCCEEDED,
  FAILED,
  CANCELLED;

  public String sql() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  public static JobStatus of(String sql) {
    return valueOf(sql.toUpperCase(java.util.Locale.ROOT));
  }

  public boolean finished() {
    return this == SUCCEEDED || this == FAILED || this == CANCELLED;
  }
}
