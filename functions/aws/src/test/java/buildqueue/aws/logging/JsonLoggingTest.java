package buildqueue.aws.logging;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.logging.LogManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class JsonLoggingTest {

  @AfterEach
  void restoreTheJdksLogging() throws Exception {
    LogManager.getLogManager().readConfiguration();
  }

  /**
   * The JDK's logging resets itself in a shutdown hook, which closes every handler; a worker
   * stopped by SIGTERM still writes its jobs' last lines and its metrics to stdout after that.
   */
  @Test
  void resetting_the_jdks_logging_never_closes_stdout() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    boolean[] closed = {false};
    PrintStream out =
        new PrintStream(bytes, true, StandardCharsets.UTF_8) {
          @Override
          public void close() {
            closed[0] = true;
            super.close();
          }
        };
    JsonLogging.install(out, Map.of("component", "worker"));
    System.getLogger("buildqueue.test").log(System.Logger.Level.INFO, "before the reset");

    LogManager.getLogManager().reset();
    out.println("a job's last line");

    assertThat(closed[0]).isFalse();
    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .contains("before the reset")
        .contains("a job's last line");
  }
}
