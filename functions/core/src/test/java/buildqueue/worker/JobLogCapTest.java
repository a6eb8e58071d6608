package buildqueue.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class JobLogCapTest {
  private final List<String> sunk = new ArrayList<>();
  private final JobLogSink sink = (jobId, stream, text) -> sunk.add(stream + " " + text);

  @Test
  void output_past_the_cap_is_dropped_and_one_line_says_how_much() {
    JobLog log = new JobLog(42, sink, WorkerLoop.LOG_TAIL_BYTES, 25);

    for (int i = 0; i < 10; i++) {
      log.line(JobLog.Stream.STDOUT, "line " + i + "!"); // 8 bytes with its newline
    }
    log.line(JobLog.Stream.WORKER, "program exited with code 0");
    log.finish();
    log.finish();

    String mark = "output truncated after 24 bytes (the cap is 25); 56 bytes dropped";
    assertThat(sunk)
        .containsExactly(
            "STDOUT line 0!",
            "STDOUT line 1!",
            "STDOUT line 2!",
            "WORKER program exited with code 0",
            "WORKER " + mark);
    JobLog.Snapshot s = log.snapshot();
    assertThat(s.tail())
        .isEqualTo(
            "line 0!\nline 1!\nline 2!\n[buildqueue] program exited with code 0\n[buildqueue] "
                + mark
                + "\n");
    assertThat(s.totalBytes())
        .as("the log's size counts what it keeps")
        .isEqualTo(s.tail().getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
    assertThat(log.droppedBytes()).isEqualTo(56);
  }

  @Test
  void once_output_is_dropped_a_later_short_line_is_dropped_too() {
    JobLog log = new JobLog(42, sink, WorkerLoop.LOG_TAIL_BYTES, 10);

    log.line(JobLog.Stream.STDOUT, "a line longer than the cap");
    log.line(JobLog.Stream.STDOUT, "x");

    assertThat(sunk).isEmpty();
    assertThat(log.droppedBytes()).isEqualTo(29);
  }

  @Test
  void a_log_within_its_cap_gets_no_mark() {
    JobLog log = new JobLog(42, sink, WorkerLoop.LOG_TAIL_BYTES, 100);

    log.line(JobLog.Stream.STDOUT, "small");
    log.finish();

    assertThat(sunk).containsExactly("STDOUT small");
  }
}
