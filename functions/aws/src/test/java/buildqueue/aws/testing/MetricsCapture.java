package buildqueue.aws.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** A stream that keeps the metric lines written to it, so tests can read them back as JSON. */
public final class MetricsCapture extends PrintStream {
  private static final ObjectMapper JSON = new ObjectMapper();

  public MetricsCapture() {
    super(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
  }

  /** Every line written so far, parsed. */
  public synchronized List<JsonNode> lines() {
    flush();
    String text = ((ByteArrayOutputStream) out).toString(StandardCharsets.UTF_8);
    List<JsonNode> lines = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (!line.isBlank()) {
        try {
          lines.add(JSON.readTree(line));
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
    return lines;
  }

  /** The last line whose {@code Function} is {@code function}. */
  public JsonNode last(String function) {
    List<JsonNode> all = lines();
    for (int i = all.size() - 1; i >= 0; i--) {
      if (function.equals(all.get(i).path("Function").asText())) {
        return all.get(i);
      }
    }
    throw new AssertionError("no metric line from " + function + " in " + all);
  }

  public synchronized int count() {
    return lines().size();
  }
}
