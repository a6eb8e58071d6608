package buildqueue.worker.exec;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * Follows a job's control file ({@code $BUILDQUEUE_CONTROL}) as the program appends JSON lines to
 * it, and reads each complete line into a {@link ControlMessage}. Plain output can never pass for a
 * control message: this is a file of its own, not stdout (the lesson of GitHub Actions' {@code
 * ::set-output}, replaced by {@code GITHUB_OUTPUT} files).
 *
 * <p>What a job can make the worker hold is bounded: a line longer than {@code maxLineBytes} is
 * skipped, not kept, and one {@link #read} reads at most {@value #MAX_BYTES_PER_READ} bytes.
 */
final class ControlFile {
  static final int MAX_BYTES_PER_READ = 1 << 20;
  static final String KEYS =
      "a control line is a JSON object with exactly one of progress, followUp, error";

  /** The longest part of an ignored line quoted back in the job's log. */
  static final int QUOTE_CHARS = 200;

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private final Path path;
  private final int maxLineBytes;
  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
  private long offset;
  private Object fileKey;
  private boolean skipping;
  private long lines;
  private String lastProblem;

  ControlFile(Path path, int maxLineBytes) {
    this.path = path;
    this.maxLineBytes = maxLineBytes;
  }

  /**
   * The messages of the lines completed since the last read. {@code atEnd}: the program is gone, so
   * a last line without its newline counts as complete.
   */
  List<ControlMessage> read(boolean atEnd) {
    List<ControlMessage> out = new ArrayList<>();
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      Object key =
          Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
              .fileKey();
      long size = channel.size();
      if (size < offset || (fileKey != null && !Objects.equals(key, fileKey))) {
        out.add(
            new ControlMessage.Notice(
                lines,
                "the control file was truncated or replaced, so it is read from its"
                    + " start again; append to it (>>), never overwrite it"));
        offset = 0;
        pending.reset();
        skipping = false;
      }
      fileKey = key;
      long budget = atEnd ? Long.MAX_VALUE : MAX_BYTES_PER_READ;
      while (budget > 0) {
        buffer.clear();
        if (budget < buffer.capacity()) {
          buffer.limit((int) budget);
        }
        int n = channel.read(buffer, offset);
        if (n <= 0) {
          break;
        }
        offset += n;
        budget -= n;
        buffer.flip();
        take(buffer, out);
      }
    } catch (NoSuchFileException e) {
      // The program deleted it: it has nothing more to say.
    } catch (IOException e) {
      String problem = "the control file could not be read: " + e.getMessage();
      if (!problem.equals(lastProblem)) { // said once, not every 100 ms
        out.add(new ControlMessage.Notice(lines, problem));
      }
      lastProblem = problem;
    }
    if (atEnd && (pending.size() > 0 || skipping)) {
      endLine(out);
    }
    return out;
  }

  private void take(ByteBuffer bytes, List<ControlMessage> out) {
    while (bytes.hasRemaining()) {
      byte b = bytes.get();
      if (b == '\n') {
        endLine(out);
      } else if (!skipping) {
        if (pending.size() >= maxLineBytes) {
          skipping = true;
          pending.reset();
        } else {
          pending.write(b);
        }
      }
    }
  }

  private void endLine(List<ControlMessage> out) {
    lines++;
    if (skipping) {
      out.add(
          new ControlMessage.Ignored(
              lines, "longer than " + maxLineBytes + " bytes", "(not kept)"));
    } else {
      byte[] line = pending.toByteArray();
      int end = line.length;
      if (end > 0 && line[end - 1] == '\r') {
        end--;
      }
      ControlMessage m = parse(lines, java.util.Arrays.copyOf(line, end));
      if (m != null) {
        out.add(m);
      }
    }
    pending.reset();
    skipping = false;
  }

  /** Reads one line (without its line end); null for a blank line, which says nothing. */
  static ControlMessage parse(long line, byte[] bytes) {
    String text = new String(bytes, StandardCharsets.UTF_8);
    if (text.isBlank()) {
      return null;
    }
    JsonNode node;
    try {
      node = JSON.readTree(bytes);
    } catch (JsonProcessingException e) {
      return new ControlMessage.Ignored(
          line, "not JSON: " + firstLine(e.getOriginalMessage()), quote(text));
    } catch (IOException e) {
      return new ControlMessage.Ignored(
          line, "not JSON: " + firstLine(e.getMessage()), quote(text));
    }
    if (node == null || !node.isObject()) {
      return new ControlMessage.Ignored(line, "not a JSON object; " + KEYS, quote(text));
    }
    if (node.size() != 1) {
      return new ControlMessage.Ignored(
          line, "it has " + node.size() + " keys; " + KEYS, quote(text));
    }
    String key = node.fieldNames().next();
    JsonNode value = node.get(key);
    switch (key) {
      case "progress":
        if (value.isIntegralNumber() && value.canConvertToInt() && value.intValue() >= 0) {
          return new ControlMessage.Progress(line, value.intValue());
        }
        return new ControlMessage.Ignored(
            line,
            "progress must be a whole number from 0 to "
                + Integer.MAX_VALUE
                + ", was "
                + quote(value.toString()),
            quote(text));
      case "error":
        if (value.isTextual() && !value.textValue().isBlank()) {
          return new ControlMessage.Error(line, value.textValue());
        }
        return new ControlMessage.Ignored(
            line,
            "error must be a message (a non-empty string), was " + quote(value.toString()),
            quote(text));
      case "followUp":
        return followUp(line, value);
      default:
        return new ControlMessage.Ignored(
            line, "unknown key \"" + quote(key) + "\"; " + KEYS, quote(text));
    }
  }

  private static ControlMessage followUp(long line, JsonNode value) {
    if (!value.isObject()) {
      return new ControlMessage.BadFollowUp(
          line,
          "followUp must be an object {\"kind\": \"…\", \"payload\": {…}}, was "
              + quote(value.toString()));
    }
    for (Iterator<String> names = value.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!name.equals("kind") && !name.equals("payload")) {
        return new ControlMessage.BadFollowUp(
            line, "followUp has an unknown key \"" + quote(name) + "\"; it takes kind and payload");
      }
    }
    JsonNode kind = value.get("kind");
    if (kind == null || !kind.isTextual() || kind.textValue().isBlank()) {
      return new ControlMessage.BadFollowUp(
          line,
          "followUp needs a kind (a non-empty string), was "
              + (kind == null ? "missing" : quote(kind.toString())));
    }
    return new ControlMessage.FollowUp(line, kind.textValue(), value.get("payload"));
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "unreadable";
    }
    int nl = message.indexOf('\n');
    return quote(nl < 0 ? message : message.substring(0, nl));
  }

  private static String quote(String text) {
    return text.length() <= QUOTE_CHARS ? text : text.substring(0, QUOTE_CHARS) + "…";
  }
}
