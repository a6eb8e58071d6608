package buildqueue.aws.logging;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.StreamHandler;

/**
 * Sends every log record of this process to stdout as JSON lines ({@link JsonLogFormatter}). No
 * logging framework: the JDK's own logging, which {@code System.Logger} uses by default, with one
 * handler. Lambda and the ECS awslogs driver ship each stdout line as one log event.
 */
public final class JsonLogging {
  private JsonLogging() {}

  /** Replaces the root logger's handlers with one JSON-lines handler on {@code System.out}. */
  public static void install(Map<String, String> fixedFields) {
    install(System.out, fixedFields);
  }

  public static synchronized void install(OutputStream out, Map<String, String> fixedFields) {
    Logger root = LogManager.getLogManager().getLogger("");
    for (Handler h : root.getHandlers()) {
      root.removeHandler(h);
    }
    StreamHandler handler =
        new StreamHandler(
            out instanceof PrintStream p ? p : new PrintStream(out, true),
            new JsonLogFormatter(fixedFields)) {
          @Override
          public synchronized void publish(LogRecord record) {
            super.publish(record);
            flush(); // a Lambda may be frozen right after the handler returns
          }

          /**
           * Flushes, as the JDK's ConsoleHandler does, and never closes {@code System.out}: the
           * JDK's logging closes its handlers in a shutdown hook of its own, and a SIGTERM'd worker
           * still writes its jobs' last lines and its metrics to stdout after that.
           */
          @Override
          public synchronized void close() {
            flush();
          }
        };
    handler.setLevel(Level.ALL);
    root.addHandler(handler);
    root.setLevel(Level.INFO);
  }
}
