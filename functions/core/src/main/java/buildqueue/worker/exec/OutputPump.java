package buildqueue.worker.exec;

import buildqueue.worker.JobLog;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Reads one of a program's output streams on a thread of its own, line by line, into the job's
 * {@link JobLog}. Whatever the program writes, the pump keeps going with bounded memory: invalid
 * UTF-8 becomes U+FFFD, a line longer than the log keeps is cut (the rest of it is read and
 * dropped), and a last line without a newline is still a line. It keeps the last few lines for the
 * job's error message.
 */
final class OutputPump {
  /** Bytes of one line kept: enough that the log always cuts (and marks) a longer one itself. */
  static final int MAX_LINE_BYTES = (JobLog.MAX_LINE_CHARS + 1) * 4;

  private final InputStream in;
  private final JobLog log;
  private final JobLog.Stream stream;
  private final int keptLines;
  private final int keptLineChars;
  private final Thread thread;
  private final Deque<String> last = new ArrayDeque<>();
  private final CharsetDecoder decoder =
      StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPLACE)
          .onUnmappableCharacter(CodingErrorAction.REPLACE);
  private byte[] line = new byte[256];
  private int length;
  private boolean cut;
  private volatile boolean detached;

  /**
   * @param keptLines how many of the last lines to keep for {@link #lastLines}
   * @param keptLineChars each of them cut to this many characters (from its start)
   */
  OutputPump(
      InputStream in,
      JobLog log,
      JobLog.Stream stream,
      String threadName,
      int keptLines,
      int keptLineChars) {
    this.in = in;
    this.log = log;
    this.stream = stream;
    this.keptLines = keptLines;
    this.keptLineChars = keptLineChars;
    this.thread = new Thread(this::pump, threadName);
    this.thread.setDaemon(true);
  }

  OutputPump start() {
    thread.start();
    return this;
  }

  /** Waits up to {@code max} for the stream to end; true if it did. */
  boolean awaitEnd(Duration max) throws InterruptedException {
    thread.join(Math.max(1, max.toMillis()));
    return !thread.isAlive();
  }

  /**
   * From now on lines go nowhere: a process outside the job's session still holds the stream open,
   * and what it writes after the job has ended belongs to no job. The thread stays blocked in its
   * read until that process closes the stream.
   */
  void detach() {
    detached = true;
  }

  /** The last lines read (oldest first). */
  synchronized List<String> lastLines() {
    return new ArrayList<>(last);
  }

  private void pump() {
    byte[] buffer = new byte[8192];
    try {
      int n;
      while ((n = in.read(buffer)) >= 0) {
        for (int i = 0; i < n; i++) {
          byte b = buffer[i];
          if (b == '\n') {
            emit();
          } else if (length < MAX_LINE_BYTES) {
            if (length == line.length) {
              line = java.util.Arrays.copyOf(line, Math.min(MAX_LINE_BYTES, line.length * 2));
            }
            line[length++] = b;
          } else {
            cut = true;
          }
        }
      }
    } catch (IOException e) {
      // The stream was closed under the reader (the JDK closes it once the program has exited
      // and the rest was drained): nothing more to read.
    } finally {
      if (length > 0 || cut) {
        emit();
      }
    }
  }

  private void emit() {
    int end = length;
    if (end > 0 && line[end - 1] == '\r') {
      end--;
    }
    String text;
    try {
      decoder.reset();
      CharBuffer chars = decoder.decode(ByteBuffer.wrap(line, 0, end));
      text = chars.toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      text = new String(line, 0, end, StandardCharsets.UTF_8); // cannot happen with REPLACE
    }
    length = 0;
    cut = false;
    if (line.length > 4096) {
      line = new byte[256]; // one huge line must not keep its buffer for the rest of the job
    }
    if (detached) {
      return;
    }
    log.line(stream, text);
    synchronized (this) {
      last.addLast(text.length() > keptLineChars ? text.substring(0, keptLineChars) + "…" : text);
      while (last.size() > keptLines) {
        last.removeFirst();
      }
    }
  }
}
