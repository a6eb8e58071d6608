package buildqueue.worker.exec;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One line of a job's control file, read ({@link ControlFile}): a JSON object with exactly one of
 * the keys {@code progress} (a whole number ≥ 0), {@code followUp} ({@code {"kind": "…", "payload":
 * …}}) or {@code error} (a message). Anything else is {@link Ignored}, with the reason.
 */
public sealed interface ControlMessage {

  /** Which line of the control file, counting from 1. */
  long line();

  record Progress(long line, int progress) implements ControlMessage {}

  record FollowUp(long line, String kind, JsonNode payload) implements ControlMessage {}

  /** A {@code followUp} line that cannot be a follow-up: the job meant one, so it fails. */
  record BadFollowUp(long line, String reason) implements ControlMessage {}

  record Error(long line, String message) implements ControlMessage {}

  /** Not a control message; {@code reason} says why, {@code text} quotes the start of the line. */
  record Ignored(long line, String reason, String text) implements ControlMessage {}

  /** Something about the control file itself, for the job's log (it was truncated, unreadable). */
  record Notice(long line, String message) implements ControlMessage {}
}
