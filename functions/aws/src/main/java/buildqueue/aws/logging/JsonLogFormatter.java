package buildqueue.aws.logging;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Map;
import java.util.logging.Formatter;
import java.util.logging.LogRecord;

/**
 * Formats a {@code java.util.logging} record (which is where {@code System.Logger} goes when no
 * other backend is installed) as one line of JSON: {@code time, level, logger, message}, the fixed
 * fields given at construction (the component, a worker id), and {@code error} with the stack
 * trace. CloudWatch Logs Insights can then filter on any field without parsing text.
 */
public final class JsonLogFormatter extends Formatter {
  private static final JsonFactory JSON = new JsonFactory();

  private final Map<String, String> fixed;

  public JsonLogFormatter(Map<String, String> fixed) {
    this.fixed = Map.copyOf(fixed);
  }

  @Override
  public String format(LogRecord record) {
    StringWriter out = new StringWriter(256);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("time", Instant.ofEpochMilli(record.getMillis()).toString());
      g.writeStringField("level", record.getLevel().getName());
      g.writeStringField("logger", record.getLoggerName());
      g.writeStringField("message", formatMessage(record));
      for (Map.Entry<String, String> e : fixed.entrySet()) {
        g.writeStringField(e.getKey(), e.getValue());
      }
      if (record.getThrown() != null) {
        StringWriter trace = new StringWriter();
        record.getThrown().printStackTrace(new PrintWriter(trace));
        g.writeStringField("error", trace.toString());
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.append(System.lineSeparator()).toString();
  }
}
