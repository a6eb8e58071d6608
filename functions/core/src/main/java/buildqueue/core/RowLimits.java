package buildqueue.core;

import java.nio.charset.StandardCharsets;

/**
 * What one result row and one answer of the queue's statements may hold, so that every statement
 * also runs over the RDS Data API. AWS documents "64 KB per row in the result set returned by the
 * database" and "the response size limit is 1 MiB" (Aurora User Guide, data-api.limitations). Live
 * measurements count a row the way PostgreSQL sends it: 2 bytes, plus 4 per column, plus the octets
 * of each value as text. "64 KB" is read as 64,000 bytes, the smaller of its two readings.
 *
 * <p>The widest rows and their budget against {@link #MAX_ROW_BYTES} (64,000):
 *
 * <pre>
 * a job (JobReads JOB, JobListReads JOBS; WorkerTransitions START, END and TAKE_NEXT carry fewer columns)
 *   payload, as PostgreSQL renders jsonb          MAX_PAYLOAD_BYTES        55,000
 *   error: a reason cut to MAX_ERROR_BYTES         MAX_ERROR_BYTES           4,000
 *     plus the text a statement wraps around it    ERROR_WRAPPER_BYTES         200
 *   user id (200 characters of up to 4 bytes)      MAX_USER_ID_BYTES           800
 *   lane ("user:" + user id)                       MAX_LANE_BYTES              805
 *   kind                                           MAX_KIND_BYTES              200
 *   where its whole log is                         MAX_LOG_LOCATION_BYTES    1,000
 *   row header, ids, counters, status, 6 times     ROW_FIXED_BYTES             512
 *                                                                    total  62,517
 * an event (EventReads EVENTS: message and detail; R = a reason of MAX_ERROR_BYTES)
 *   message: R + 200 of fixed text                                           4,200
 *   detail: the message and R again, as JSON text; jsonb writes a control
 *     character as a 6-byte escape: 6 × (4,200 + 4,000) + 300               49,500
 *   type, row header, id, time                                                 200
 *                                                                    total  53,900
 * a job's log tail (LogReads LOG), read alone with the job's owner, status and log location
 *   MAX_LOG_TAIL_BYTES 60,000 + user id 800 + location 1,000 + ROW_FIXED_BYTES 512
 *                                                                    total  62,312
 * </pre>
 *
 * So a log tail must never share a row with a payload or an error. Lists are cut by a running sum
 * of their rows' sizes, computed in the statement itself, at {@link #PAGE_BUDGET_BYTES}: half of
 * the 1 MiB answer, so that an answer counted another way (the Data API's JSON escapes each quote
 * of a payload's text) still fits.
 */
public final class RowLimits {
  /** The Data API's limit on one row, as this project reads "64 KB". */
  public static final int MAX_ROW_BYTES = 64_000;

  /** The Data API's limit on one answer: 1 MiB. */
  public static final int MAX_RESPONSE_BYTES = 1 << 20;

  /**
   * The largest payload a job may have, measured as PostgreSQL renders it ({@code
   * octet_length(payload::text)}: jsonb adds a space after each {@code :} and {@code ,}, and writes
   * {@code 1e1000} out in 1,001 digits), checked by the statement that stores it.
   */
  public static final int MAX_PAYLOAD_BYTES = 55_000;

  /** A job's error text, a launch failure's or an exit's reason, cut where it enters the queue. */
  public static final int MAX_ERROR_BYTES = 4_000;

  /** The most fixed text a statement adds around a reason it stores as a job's error. */
  public static final int ERROR_WRAPPER_BYTES = 200;

  /** The tail of a job's output the database keeps. */
  public static final int MAX_LOG_TAIL_BYTES = 60_000;

  /** A user id: at most 200 characters (the API's limit), each at most 4 bytes in UTF-8. */
  public static final int MAX_USER_ID_BYTES = 4 * 200;

  /** A lane: {@code shared} or {@code user:} and a user id. */
  public static final int MAX_LANE_BYTES = "user:".length() + MAX_USER_ID_BYTES;

  /** A job kind, in UTF-8. */
  public static final int MAX_KIND_BYTES = 200;

  /**
   * Where a job's whole log is (a log stream's name, a file's path), as a worker's log sink writes
   * it; the sinks' own text, never a user's.
   */
  public static final int MAX_LOG_LOCATION_BYTES = 1_000;

  /** A row's header, ids, counters, status and timestamps, whatever the statement. */
  public static final int ROW_FIXED_BYTES = 512;

  /** What one page of a list statement may return, by the running sum of its rows' sizes. */
  public static final int PAGE_BUDGET_BYTES = MAX_RESPONSE_BYTES / 2;

  private static final String CUT_MARK = "…";

  private RowLimits() {}

  /** The widest job row's budget; at most {@link #MAX_ROW_BYTES}. */
  static int widestJobRowBytes() {
    return MAX_PAYLOAD_BYTES
        + MAX_ERROR_BYTES
        + ERROR_WRAPPER_BYTES
        + MAX_USER_ID_BYTES
        + MAX_LANE_BYTES
        + MAX_KIND_BYTES
        + MAX_LOG_LOCATION_BYTES
        + ROW_FIXED_BYTES;
  }

  /** The log tail row's budget; at most {@link #MAX_ROW_BYTES}. */
  static int logTailRowBytes() {
    return MAX_LOG_TAIL_BYTES + MAX_USER_ID_BYTES + MAX_LOG_LOCATION_BYTES + ROW_FIXED_BYTES;
  }

  /** The widest event row's budget; at most {@link #MAX_ROW_BYTES}. */
  static int widestEventRowBytes() {
    int message = MAX_ERROR_BYTES + ERROR_WRAPPER_BYTES;
    return message + 6 * (message + MAX_ERROR_BYTES) + 300 + 200;
  }

  /**
   * {@code text} cut to at most {@link #MAX_ERROR_BYTES} of UTF-8 at a character boundary, ending
   * in "…" when cut; null stays null. For every free text that enters the queue from outside it (a
   * worker's failure message, a platform's launch failure or stop reason).
   */
  public static String boundedError(String text) {
    return cut(text, MAX_ERROR_BYTES);
  }

  static String cut(String text, int maxBytes) {
    if (text == null || utf8Length(text) <= maxBytes) {
      return text;
    }
    int budget = maxBytes - utf8Length(CUT_MARK);
    int bytes = 0;
    int end = 0;
    while (end < text.length()) {
      int cp = text.codePointAt(end);
      int size = utf8Length(cp);
      if (bytes + size > budget) {
        break;
      }
      bytes += size;
      end += Character.charCount(cp);
    }
    return text.substring(0, end) + CUT_MARK;
  }

  static int utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  private static int utf8Length(int codePoint) {
    if (codePoint < 0x80) {
      return 1;
    }
    if (codePoint < 0x800) {
      return 2;
    }
    // An unpaired surrogate becomes "?" in Java's encoder: one byte; counting 3 stays safe.
    return codePoint < 0x10000 ? 3 : 4;
  }
}
