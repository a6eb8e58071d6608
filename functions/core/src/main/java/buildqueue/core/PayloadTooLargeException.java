package buildqueue.core;

import buildqueue.BuildQueueException;

/**
 * A job's payload, as the database stores it, is larger than {@link RowLimits#MAX_PAYLOAD_BYTES}:
 * nothing was written. A worker could not read such a job back over the RDS Data API.
 */
public final class PayloadTooLargeException extends BuildQueueException {
  private final long storedBytes;

  public PayloadTooLargeException(String what, long storedBytes) {
    super(
        what
            + " takes "
            + storedBytes
            + " bytes as stored; the limit is "
            + RowLimits.MAX_PAYLOAD_BYTES
            + " bytes. Nothing was written.");
    this.storedBytes = storedBytes;
  }

  /** The payload's size as PostgreSQL renders it ({@code octet_length(payload::text)}). */
  public long storedBytes() {
    return storedBytes;
  }
}
