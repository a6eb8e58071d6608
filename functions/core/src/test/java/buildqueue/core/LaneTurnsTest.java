package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Chaining must choose the next job as dispatch does. Dispatch runs {@link LaneTurns}' fragments;
 * chaining runs as the worker role, through the worker functions, which hold the same text written
 * out: V006 defines them now (V005's text is what databases ran before it, and never changes), as
 * escape strings whose quotes are doubled and whose statements end in {@code \073}.
 */
class LaneTurnsTest {
  private static final String WORKER_FUNCTIONS = "/buildqueue/db/migrations/V006__worker_plans.sql";

  @Test
  void the_worker_functions_choose_the_next_job_with_the_text_dispatch_runs() throws IOException {
    String functions = normalized(resource(WORKER_FUNCTIONS).replace("''", "'").replace("\\073", ";"));
    // Chaining never holds the lane (a live worker takes the ready job past a held head).
    String choice = normalized(LaneTurns.CHOOSE.replace("(:holdLane or ", "("));

    assertThat(occurrences(functions, choice)).as("the choice in build_worker_end and build_worker_take_next")
        .isEqualTo(2);
    assertThat(occurrences(functions, normalized(LaneTurns.served("taken")))).as("the served turn").isEqualTo(2);
    // build_worker_end's statement for a lane that takes its oldest job runs the choice's FIFO part alone.
    String fifoHead = choice.substring(choice.indexOf("fifo_head as ("), choice.indexOf("retry_head as ("));
    assertThat(occurrences(functions, fifoHead)).as("the FIFO head, in both choices and alone").isEqualTo(3);
    assertThat(occurrences(functions, normalized(LaneTurns.JOINED.formatted(LaneTurns.NEVER_SERVED_OFFSET,
        "inserted")))).as("a follow-up's user joins the turns").isEqualTo(1);
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = LaneTurnsTest.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static String normalized(String sql) {
    return sql.replaceAll("\\s+", " ").trim();
  }

  private static int occurrences(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }
}
