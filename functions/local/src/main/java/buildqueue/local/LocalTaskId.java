package buildqueue.local;

import java.time.Instant;
import java.util.Optional;

/**
 * A local worker's identity, {@code local:<host>:<pid>:<startMillis>}: a pid alone is reused by the
 * operating system, a pid with its start time is not, and the host says who can check it.
 */
public record LocalTaskId(String host, long pid, long startMillis) {
  static final String PREFIX = "local:";

  public LocalTaskId {
    if (host == null || host.isEmpty() || host.contains(":")) {
      throw new IllegalArgumentException("a host name without colons is needed, was " + host);
    }
  }

  public static LocalTaskId of(String host, ProcessHandle process, Instant start) {
    return new LocalTaskId(host, process.pid(), start.toEpochMilli());
  }

  /** The identity in a task id, or empty when the id is not a local one or is malformed. */
  public static Optional<LocalTaskId> parse(String taskId) {
    if (taskId == null || !taskId.startsWith(PREFIX)) {
      return Optional.empty();
    }
    String[] parts = taskId.substring(PREFIX.length()).split(":");
    if (parts.length != 3) {
      return Optional.empty();
    }
    try {
      return Optional.of(
          new LocalTaskId(parts[0], Long.parseLong(parts[1]), Long.parseLong(parts[2])));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  @Override
  public String toString() {
    return PREFIX + host + ":" + pid + ":" + startMillis;
  }
}
