package buildqueue.worker.exec;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.worker.JobLog;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalJobLogSinkTest {
  @TempDir Path tmp;
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

  @Test
  void each_line_goes_to_the_jobs_file_only_and_the_workers_output_names_the_file()
      throws Exception {
    LocalJobLogSink sink = new LocalJobLogSink(out, tmp.resolve("jobs"), "7");

    sink.line(42, JobLog.Stream.WORKER, "started: sh build.sh (attempt 1)");
    sink.line(42, JobLog.Stream.STDOUT, "page 1");
    sink.line(43, JobLog.Stream.STDERR, "other job");
    sink.line(42, JobLog.Stream.STDERR, "warning: été");

    Path file = tmp.resolve("jobs").resolve("job-42.log");
    assertThat(bytes.toString(StandardCharsets.UTF_8).lines())
        .as("the output is kept once, in the job's file")
        .containsExactly(
            "[job 42] output in " + file.toAbsolutePath(),
            "[job 43] output in " + tmp.resolve("jobs").resolve("job-43.log").toAbsolutePath());
    assertThat(sink.location(42)).isEqualTo(file.toAbsolutePath().toString());
    List<String> lines = Files.readAllLines(file);
    assertThat(lines.get(0)).startsWith("=== ").endsWith(" worker 7: job 42 ===");
    assertThat(lines.subList(1, lines.size()))
        .containsExactly("[buildqueue] started: sh build.sh (attempt 1)", "page 1", "warning: été");
  }

  @Test
  void a_jobs_file_is_appended_across_attempts_with_a_header_for_each() throws Exception {
    LocalJobLogSink first = new LocalJobLogSink(out, tmp, "7");
    first.line(42, JobLog.Stream.STDOUT, "attempt one");
    first.close(42);
    LocalJobLogSink second = new LocalJobLogSink(out, tmp, "8");

    second.line(42, JobLog.Stream.STDOUT, "attempt two");
    second.close(42);

    List<String> lines = Files.readAllLines(tmp.resolve("job-42.log"));
    assertThat(lines).hasSize(4);
    assertThat(lines.get(0)).endsWith("worker 7: job 42 ===");
    assertThat(lines.get(1)).isEqualTo("attempt one");
    assertThat(lines.get(2)).endsWith("worker 8: job 42 ===");
    assertThat(lines.get(3)).isEqualTo("attempt two");
  }

  @Test
  void without_a_directory_lines_go_to_the_workers_output_only_and_a_job_has_no_location() {
    LocalJobLogSink sink = LocalJobLogSink.forThisWorker(Map.of());

    assertThat(sink.location(42)).isNull();
  }

  @Test
  void a_file_that_cannot_be_written_never_fails_the_job() throws Exception {
    Path notADirectory =
        Files.writeString(tmp.resolve("occupied"), "a file where the directory should be");
    LocalJobLogSink sink = new LocalJobLogSink(out, notADirectory, "7");

    sink.line(42, JobLog.Stream.STDOUT, "still logged");
    sink.line(42, JobLog.Stream.STDOUT, "and again");

    assertThat(bytes.toString(StandardCharsets.UTF_8).lines())
        .containsExactly("[job 42 stdout] still logged", "[job 42 stdout] and again");
  }
}
